"""The trainer on CPU: a tiny BERT learns from a tiny real shard set, resumes, names non-finite gradients, two ranks
read disjoint records, and bad input gives one clear line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the trainer tests need torch (pip install torch transformers)")
pytest.importorskip("transformers", reason="the trainer tests need transformers")

from sccnlp.node.bert import train  # noqa: E402
from sccnlp.node.bert.metrics import parse_line  # noqa: E402

from .conftest import write_shards  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
BASE = ["--model", "bert-tiny", "--batch-size", "16", "--optimizer", "adamw", "--lr", "3e-3", "--warmup", "3",
        "--dropout", "0", "--compile", "none", "--log-interval", "5"]


def run_train(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = train.main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def lines(stdout: str) -> list[dict]:
    return [r for r in (parse_line(x) for x in stdout.splitlines()) if r is not None]


def test_tiny_bert_learns_and_writes_metrics(shard_dir: Path, tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "run"
    rc, stdout, _err = run_train([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(out_dir), "--steps", "40"],
                                 capsys)
    assert rc == 0
    recs = lines(stdout)
    assert [r["step"] for r in recs] == [5, 10, 15, 20, 25, 30, 35, 40]
    assert recs[-1]["loss"] < recs[0]["loss"] - 0.5, [r["loss"] for r in recs]
    assert recs[-1]["seq_per_s"] > 0 and recs[-1]["mfu"] is None  # CPU: no peak known
    jl = [json.loads(x) for x in (out_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in jl] == [r["step"] for r in recs]
    assert jl[-1]["loss"] == pytest.approx(recs[-1]["loss"], abs=1e-4)
    assert (out_dir / "ckpt-40.pt").is_file()
    assert not list(out_dir.glob(".ckpt-*"))  # no temporary file left behind


def test_checkpoint_resume_continues_from_step(shard_dir: Path, tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "run"
    common = [*BASE, "--data-dir", str(shard_dir), "--output-dir", str(out_dir), "--ckpt-interval", "10"]
    rc, stdout, _err = run_train([*common, "--steps", "20"], capsys)
    assert rc == 0
    assert sorted(p.name for p in out_dir.glob("ckpt-*.pt")) == ["ckpt-10.pt", "ckpt-20.pt"]
    state = torch.load(out_dir / "ckpt-20.pt", weights_only=False)
    assert state["step"] == 20
    assert (state["data"]["epoch"], state["data"]["batch_in_epoch"]) == (2, 0)  # 10 batches an epoch
    assert {"model", "optimizer", "scheduler", "rng"} <= state.keys()

    rc, stdout, _err = run_train([*common, "--steps", "30", "--resume", "auto"], capsys)
    assert rc == 0
    assert "resumed from step 20" in stdout
    assert [r["step"] for r in lines(stdout)] == [25, 30]
    assert (out_dir / "ckpt-30.pt").is_file()


def test_rank0_writes_the_heartbeat_for_node_exporter(shard_dir: Path, tmp_path: Path, capsys) -> None:
    """--textfile-dir: scc_training.prom holds the last step, loss and rate, the last checkpoint and completion;
    a directory that does not exist is named once and the run goes on."""
    out_dir, textfile_dir = tmp_path / "run-a", tmp_path / "textfile"
    textfile_dir.mkdir()
    common = [*BASE, "--data-dir", str(shard_dir), "--output-dir", str(out_dir), "--steps", "10",
              "--ckpt-interval", "5"]
    rc, stdout, _err = run_train([*common, "--textfile-dir", str(textfile_dir)], capsys)
    assert rc == 0
    text = (textfile_dir / "scc_training.prom").read_text()
    samples = {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if not line.startswith("#")}
    last = lines(stdout)[-1]
    assert samples['scc_training_step{run="run-a"}'] == 10
    assert samples['scc_training_completed{run="run-a"}'] == 1
    assert samples['scc_training_loss{run="run-a"}'] == pytest.approx(last["loss"], abs=1e-3)
    assert samples['scc_training_sequences_per_second{run="run-a"}'] > 0
    ckpt = samples['scc_training_last_checkpoint_timestamp_seconds{run="run-a"}']
    assert abs(ckpt - (out_dir / "ckpt-5.pt").stat().st_mtime) < 60
    assert samples['scc_training_heartbeat_timestamp_seconds{run="run-a"}'] >= ckpt
    assert sorted(p.name for p in textfile_dir.iterdir()) == ["scc_training.prom"]

    rc, stdout, _err = run_train([*common, "--steps", "12", "--textfile-dir", str(tmp_path / "absent")], capsys)
    assert rc == 0
    assert stdout.count(f"training metrics not exported: {tmp_path / 'absent'} does not exist") == 1


def test_resume_continues_data_position(shard_dir: Path, tmp_path: Path, capsys) -> None:
    """Stopped at 7 and resumed to 13: the data position equals that of an uninterrupted 13-step run."""
    a, b = tmp_path / "a", tmp_path / "b"
    run_train([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(a), "--steps", "13"], capsys)
    run_train([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(b), "--steps", "7"], capsys)
    _r, stdout, _e = run_train([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(b), "--steps", "13"], capsys)
    assert "resumed from step 7" in stdout
    da = torch.load(a / "ckpt-13.pt", weights_only=False)["data"]
    db = torch.load(b / "ckpt-13.pt", weights_only=False)["data"]
    assert da == db == {"epoch": 1, "batch_in_epoch": 3, "start": 0, "end": 160}


@pytest.mark.parametrize("policy", ["stop", "skip"])
def test_nonfinite_gradient_names_parameter(shard_dir: Path, tmp_path: Path, capsys, policy: str) -> None:
    name = "bert.encoder.layer.1.attention.self.query.weight"
    rc, stdout, stderr = run_train([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(tmp_path / "r"),
                                    "--steps", "8", "--nan-policy", policy, "--inject-nonfinite", f"{name}@4"],
                                   capsys)
    assert f"non-finite gradient at step 4: {name}" in stdout
    if policy == "stop":
        assert rc == 3
        assert f"non-finite gradient at step 4: {name}" in stderr
        assert not (tmp_path / "r" / "ckpt-8.pt").exists()
    else:
        assert rc == 0
        assert "step skipped" in stdout
        assert lines(stdout)[-1]["skipped"] == 1
        state = torch.load(tmp_path / "r" / "ckpt-8.pt", weights_only=False)
        assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())


def test_two_ranks_read_disjoint_ranges(tmp_path: Path) -> None:
    shard_dir = write_shards(tmp_path / "data", counts=(70, 50, 41))
    env_base = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "SLURM_", "RANK"))}
    env_base.update(PYTHONPATH=str(REPO), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29600 + os.getpid() % 300),
                    OMP_NUM_THREADS="1")
    procs = []
    for rank in range(2):
        env = dict(env_base, OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE="2",
                   OMPI_COMM_WORLD_LOCAL_RANK=str(rank), OMPI_COMM_WORLD_LOCAL_SIZE="2")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "sccnlp.node.bert.train", *BASE, "--data-dir", str(shard_dir), "--steps", "6",
             "--batch-size", "8", "--output-dir", str(tmp_path / "run"), "--log-data-ranges"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    ranges = []
    for rank, (stdout, _unused) in enumerate(outs):
        m = re.search(r"rank=(\d+) world=2 data_range=\[(\d+),(\d+)\) records=\d+ total=161", stdout)
        assert m and int(m.group(1)) == rank, stdout
        ranges.append((int(m.group(2)), int(m.group(3))))
    assert ranges == [(0, 80), (80, 161)]  # disjoint, covering all records, per DATA_FORMAT.md
    rank0 = lines(outs[0][0])
    assert rank0 and rank0[-1]["step"] == 6 and "ranks=2" in outs[0][0] and "global_batch=16" in outs[0][0]
    assert not lines(outs[1][0])  # only rank 0 prints metrics lines
    assert (tmp_path / "run" / "ckpt-6.pt").is_file()


# ------------------------------------------------------------------------------------------------ bad input


def one_line_error(rc: int, stderr: str) -> str:
    assert rc == 2, stderr
    err = stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sccnlp.node.bert.train: error: "), stderr
    assert "Traceback" not in stderr
    return err[0]


def test_missing_data_dir(tmp_path: Path, capsys) -> None:
    rc, _out, stderr = run_train([*BASE, "--data-dir", str(tmp_path / "nope"), "--steps", "2"], capsys)
    msg = one_line_error(rc, stderr)
    assert str(tmp_path / "nope") in msg and "does not exist" in msg and "prepar" in msg


def test_vocab_size_mismatch(shard_dir: Path, capsys) -> None:
    rc, _out, stderr = run_train([*BASE, "--data-dir", str(shard_dir), "--steps", "2", "--vocab-size", "100"], capsys)
    msg = one_line_error(rc, stderr)
    assert "vocabulary size mismatch" in msg and "100" in msg and "120" in msg and "meta.json" in msg


def test_global_batch_not_divisible(shard_dir: Path, capsys, monkeypatch) -> None:
    for k, v in {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}.items():
        monkeypatch.setenv(k, v)
    rc, _out, stderr = run_train([*BASE, "--data-dir", str(shard_dir), "--steps", "2", "--global-batch-size", "40"],
                                 capsys)
    msg = one_line_error(rc, stderr)
    assert "--global-batch-size 40 is not a multiple of --batch-size 16 x 1 ranks = 16" in msg


@pytest.mark.parametrize(("flags", "named"), [
    (["--encoder", "hf"], "--encoder hf"),
    (["--attn", "eager", "--full-head"], "--attn eager --full-head"),
])
def test_the_hugging_face_path_is_refused_naming_the_peer(shard_dir: Path, capsys, flags: list[str],
                                                          named: str) -> None:
    rc, _out, stderr = run_train([*BASE, "--data-dir", str(shard_dir), "--steps", "2", *flags], capsys)
    msg = one_line_error(rc, stderr)
    assert msg.startswith(f"sccnlp.node.bert.train: error: {named}: the trainer has one encoder"), msg
    assert msg.endswith("python -m sccnlp.node.bert.bench --peer hf-compile"), msg


def test_meta_missing_and_bad_shapes(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    rc, _out, stderr = run_train([*BASE, "--data-dir", str(tmp_path / "empty"), "--steps", "2"], capsys)
    assert "meta.json is missing" in one_line_error(rc, stderr)
    shard_dir = write_shards(tmp_path / "d")
    import numpy as np

    np.save(shard_dir / "shard-00000.lengths.npy", np.zeros(3, np.uint16))
    rc, _out, stderr = run_train([*BASE, "--data-dir", str(shard_dir), "--steps", "2"], capsys)
    assert "shard-00000.lengths.npy" in one_line_error(rc, stderr)


def test_cli_subprocess_bad_input_has_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "sccnlp.node.bert.train", "--data-dir", str(tmp_path / "x")],
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=120,
                          check=False)
    one_line_error(proc.returncode, proc.stderr)
