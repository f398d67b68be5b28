"""A checkpoint that cannot be written (storage full, I/O error, quota) stops the run on every rank at once, with one
message naming the path, the error and the free space; the partial file goes, the previous checkpoint stays."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the trainer tests need torch (pip install torch transformers)")
pytest.importorskip("transformers", reason="the trainer tests need transformers")

from sccnlp.node.bert import checkpoint, train, watchdog  # noqa: E402

from .conftest import write_shards  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
BASE = ["--model", "bert-tiny", "--batch-size", "8", "--optimizer", "adamw", "--lr", "3e-3", "--warmup", "2",
        "--dropout", "0", "--compile", "none", "--log-interval", "3", "--ckpt-interval", "3", "--steps", "6"]


def failing_save(code: int, calls_before: int):
    """torch.save that writes a few bytes and then fails with `code`, from its (calls_before + 1)-th call on."""
    real = torch.save
    seen = {"n": 0}

    def save(obj, fh, *args, **kwargs):
        if ".tmp-" not in str(getattr(fh, "name", "")):
            return real(obj, fh, *args, **kwargs)
        seen["n"] += 1
        if seen["n"] > calls_before:
            fh.write(b"partial")
            raise OSError(code, os.strerror(code))
        return real(obj, fh, *args, **kwargs)
    return save


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO, errno.EDQUOT])
def test_failed_write_stops_keeps_previous_and_removes_partial(
        shard_dir: Path, tmp_path: Path, capsys, monkeypatch, code: int) -> None:
    out_dir = tmp_path / "run"
    monkeypatch.setattr(torch, "save", failing_save(code, calls_before=1))
    rc = train.main([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(out_dir)])
    err = capsys.readouterr().err
    assert rc == watchdog.EXIT_STORAGE == train.CheckpointWriteFailed.exit_code
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    line = lines[0]
    assert line.startswith(f"sccnlp.node.bert.train: error: checkpoint {out_dir / 'ckpt-6.pt'} not written "
                           f"([Errno {code}] {os.strerror(code)}); storage {out_dir}: "), line
    assert " GiB free of " in line and "previous checkpoint is kept" in line and "Fix: free space" in line
    assert sorted(p.name for p in out_dir.iterdir() if p.name.startswith((".ckpt", "ckpt"))) == ["ckpt-3.pt"]
    monkeypatch.undo()
    assert torch.load(out_dir / "ckpt-3.pt", weights_only=False)["step"] == 3  # intact


def test_free_space_unknown_still_one_line(tmp_path: Path) -> None:
    line = checkpoint.storage_error_line(tmp_path / "gone" / "ckpt-1.pt", OSError(errno.EIO, "Input/output error"))
    assert "[Errno 5] Input/output error" in line and "free space unknown" in line


def test_stale_partial_checkpoint_removed_at_start(shard_dir: Path, tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "run"
    out_dir.mkdir()
    (out_dir / ".ckpt-30.pt.tmp-1234").write_bytes(b"partial")
    keep = out_dir / ".other-file"
    keep.write_text("x")
    rc = train.main([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(out_dir), "--steps", "3"])
    capsys.readouterr()
    assert rc == 0
    assert not list(out_dir.glob(".ckpt-*")) and keep.exists()


RANK = textwrap.dedent("""
    import errno, os, sys
    import torch
    real = torch.save
    calls = []
    def save(obj, fh, *a, **k):  # checkpoint files only: torch.distributed pickles objects with torch.save too
        calls.append(".tmp-" in str(getattr(fh, "name", "")))
        if sum(calls) > 1 and calls[-1]:
            fh.write(b"partial")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(obj, fh, *a, **k)
    torch.save = save
    from sccnlp.node.bert import train
    sys.stdout.flush()
    os._exit(train.main(sys.argv[1:]))
""")


def test_two_ranks_both_stop_promptly(tmp_path: Path) -> None:
    """Rank 0's failed write reaches rank 1 at once (no wait for the collective timeout); only rank 0 prints."""
    shard_dir = write_shards(tmp_path / "data", counts=(70, 50))
    env_base = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "SLURM_", "RANK"))}
    env_base.update(PYTHONPATH=str(REPO), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29300 + os.getpid() % 300),
                    OMP_NUM_THREADS="1")
    out_dir = tmp_path / "run"
    procs = []
    for rank in range(2):
        env = dict(env_base, OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE="2",
                   OMPI_COMM_WORLD_LOCAL_RANK=str(rank), OMPI_COMM_WORLD_LOCAL_SIZE="2")
        procs.append(subprocess.Popen(
            [sys.executable, "-c", RANK, *BASE, "--data-dir", str(shard_dir), "--output-dir",
             str(out_dir), "--collective-timeout", "600"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    start = time.monotonic()
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [78, 78], [o[1][-2000:] for o in outs]
    assert time.monotonic() - start < 240  # far below the 600 s collective timeout
    assert "ckpt-6.pt not written ([Errno 28] No space left on device)" in outs[0][1], outs[0]
    assert "sccnlp.node.bert.train: error" not in outs[1][1]  # one message, from rank 0
    assert sorted(p.name for p in out_dir.iterdir() if p.name.startswith((".ckpt", "ckpt"))) == ["ckpt-3.pt"]


def test_report_names_no_lost_rank_after_storage_stop(tmp_path: Path) -> None:
    beats = tmp_path / "hb"
    beats.mkdir()
    watchdog.write_first(beats / "rank-00000.json", {"rank": 0, "host": "n1", "status": "error", "time": 1.0,
                                                     "message": "checkpoint not written"})
    result = watchdog.report(beats, tmp_path, ["n1"], "", watchdog.EXIT_STORAGE)
    assert result["first"] is None and watchdog.report_line(result) == ""


def test_lines_leave_in_one_write_under_pythonunbuffered(tmp_path: Path) -> None:
    """mpirun --tag-output tags each chunk: `print` under PYTHONUNBUFFERED wrote text and newline apart, and the
    next rank's tag was glued to the line's end. After whole_line_output() each line is one write."""
    code = ("import sys\nfrom sccnlp.node.bert.train import whole_line_output\nwhole_line_output()\n"
            "print(sys.stdout.line_buffering, sys.stdout.write_through, 'step=30', 'loss=1.0')\n"
            "print('[rank 1] heartbeat', file=sys.stderr)\n")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO)}
    got = subprocess.run(["strace", "-e", "trace=write", "-o", str(tmp_path / "trace"), sys.executable, "-c", code],
                         env=env, capture_output=True, text=True, check=False) if _has_strace() else \
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert got.returncode == 0, got.stderr
    assert got.stdout == "True False step=30 loss=1.0\n"
    if _has_strace():
        writes = [x for x in (tmp_path / "trace").read_text().splitlines() if x.startswith(("write(1,", "write(2,"))]
        assert [" ".join(w.split()) for w in writes] == ['write(1, "True False step=30 loss=1.0\\n", 28) = 28',
                                                         'write(2, "[rank 1] heartbeat\\n", 19) = 19'], writes


def _has_strace() -> bool:
    import shutil

    return shutil.which("strace") is not None


def test_metrics_line_not_written_is_a_warning(shard_dir: Path, tmp_path: Path, capsys) -> None:
    """A full storage that refuses a metrics line does not kill rank 0 with a traceback (its peers would wait)."""
    out_dir = tmp_path / "run"
    out_dir.mkdir()
    (out_dir / "metrics.jsonl").mkdir()  # opening it for append fails with an OSError (IsADirectoryError)
    rc = train.main([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(out_dir), "--steps", "3"])
    out = capsys.readouterr().out
    assert rc == 0 and f"metrics line not written to {out_dir / 'metrics.jsonl'}" in out
    assert (out_dir / "ckpt-3.pt").is_file()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (every write fails with ENOSPC)")
def test_real_torch_save_into_a_full_device(shard_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    """The real torch.save, its bytes going to /dev/full: what torch raises on a full storage is the OSError the
    trainer stops on (not a RuntimeError of torch's writer)."""
    out_dir = tmp_path / "run"
    real_open = open
    opened = []

    def full_after_first(path, mode="r", *args, **kwargs):
        if ".tmp-" in str(path) and "w" in mode:
            opened.append(path)
            if len(opened) > 1:
                real_open(path, "wb").close()  # the temporary file exists, as on a full storage
                return real_open("/dev/full", mode, *args, **kwargs)
        return real_open(path, mode, *args, **kwargs)
    monkeypatch.setattr(checkpoint, "open", full_after_first, raising=False)
    rc = train.main([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(out_dir)])
    err = capsys.readouterr().err
    assert rc == 78, err
    assert "ckpt-6.pt not written ([Errno 28] No space left on device)" in err
    assert sorted(p.name for p in out_dir.iterdir() if p.name.startswith((".ckpt", "ckpt"))) == ["ckpt-3.pt"]
