"""Failure detection on CPU with real processes: a rank killed or frozen mid-run stops the others with a message that
names it, the post-mortem names the rank that stopped first, an expired client lease checkpoints and stops the run,
time-based checkpoints, and a resume with another rank count keeps the data position."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the trainer tests need torch (pip install torch transformers)")
pytest.importorskip("transformers", reason="the trainer tests need transformers")

from sccnlp.node.bert import train, watchdog  # noqa: E402

from .conftest import write_shards  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
BASE = ["--model", "bert-tiny", "--batch-size", "8", "--optimizer", "adamw", "--lr", "3e-3", "--warmup", "3",
        "--dropout", "0", "--compile", "none", "--log-interval", "2"]


# ------------------------------------------------------------------------------------------------ pure parts


def _beat(rank: int, status: str, t: float, host: str = "n", message: str = "", step: int = 5) -> dict:
    return {"rank": rank, "host": host, "status": status, "time": t, "message": message, "step": step, "seq": 1}


def test_first_failure_prefers_the_rank_that_ended_without_a_word() -> None:
    beats = [_beat(0, "error", 105.0, "node1", "Connection closed by peer [10.0.0.12]:1234"),
             _beat(1, "running", 101.0, "node2"), _beat(2, "running", 103.0, "node2"),
             _beat(3, "error", 104.0, "node3", "Connection closed by peer")]
    log = ("ORTE has lost communication with a remote daemon.\n  HNP daemon   : [[1,0],0] on node node1\n"
           "  Remote daemon: [[1,0],2] on node node2\n")
    found = watchdog.first_failure(beats, None, log, ["node1", "node2", "node2", "node3"])
    assert found is not None and (found["rank"], found["node"]) == (1, "node2")
    assert "ended without a word" in found["how"] and "mpirun lost its daemon on node2" in found["how"]


def test_mpirun_account_beats_heartbeat_times_when_survivors_were_killed_too() -> None:
    """Survivors that mpirun SIGKILLs in a collective also leave no word, possibly with an older heartbeat."""
    beats = [_beat(0, "running", 100.5, "node1"), _beat(1, "running", 101.0, "node2"),
             _beat(2, "running", 100.9, "node3")]
    lost_node = "ORTE has lost communication with a remote daemon.\n  Remote daemon: [[7,0],1] on node node2\n"
    found = watchdog.first_failure(beats, None, lost_node, ["node1", "node2", "node3"])
    assert found is not None and (found["rank"], found["node"]) == (1, "node2")
    killed = "mpirun noticed that process rank 2 with PID 4711 on node node3 exited on signal 9 (Killed).\n"
    found = watchdog.first_failure(beats, None, killed, ["node1", "node2", "node3"])
    assert found is not None and found["rank"] == 2 and "exited on signal 9 (Killed) (mpirun)" in found["how"]


def test_first_failure_ranks_peer_errors_after_a_real_error() -> None:
    beats = [_beat(0, "error", 100.0, message="Connection closed by peer"),
             _beat(1, "error", 101.0, message="out of memory"), _beat(2, "done", 99.0)]
    found = watchdog.first_failure(beats, None, "", [])
    assert found is not None and found["rank"] == 1 and found["node"] == "n"  # no rank map: the host name


def test_watcher_verdict_wins_and_report_line_names_fix(tmp_path: Path) -> None:
    (tmp_path / "ckpt-20.pt").write_text("x")
    (tmp_path / "ckpt-40.pt").write_text("x")
    folder = tmp_path / "hb"
    folder.mkdir()
    (folder / "rank-00000.json").write_text(json.dumps(_beat(0, "running", 100.0, "node1")))
    watchdog.write_first(folder / "lost.json", {"rank": 2, "host": "h3", "silent_s": 31.0, "by_rank": 0})
    assert not watchdog.write_first(folder / "lost.json", {"rank": 0})  # first writer wins
    result = watchdog.report(folder, tmp_path, ["node1", "node1", "node3"], "", rc=75)
    line = watchdog.report_line(result)
    assert line.startswith("lost: rank 2 on node3 (host h3) stopped first: no heartbeat for 31.0 s (seen by rank 0).")
    assert "bring node3 back (or remove it from the inventory)" in line and "resumes from ckpt-40.pt" in line
    assert json.loads((folder / "report.json").read_text())["first"]["rank"] == 2
    assert watchdog.report_line(watchdog.report(folder, tmp_path, [], "", rc=0)) == ""


def test_post_mortem_names_either_trainers_checkpoint(tmp_path: Path) -> None:
    """The TensorFlow trainer's checkpoints are ckpt-<step>.index (+ .data-* shards): the post-mortem names the
    newest of either kind; the PyTorch trainer's own listing (resume, pruning) still sees only its .pt files."""
    from sccnlp.node.bert import checkpoint

    for name in ("ckpt-20.pt", "ckpt-30.index", "ckpt-30.data-00000-of-00001", "ckpt-40.data-00000-of-00001"):
        (tmp_path / name).write_text("x")
    folder = tmp_path / "hb"
    folder.mkdir()
    assert watchdog.report(folder, tmp_path, [], "", rc=1)["checkpoint"] == str(tmp_path / "ckpt-30.index")
    assert checkpoint.latest(tmp_path) == tmp_path / "ckpt-20.pt"
    assert [step for step, _path in checkpoint.found(tmp_path)] == [20]


def test_watcher_declares_a_silent_peer_lost_after_the_timeout(tmp_path: Path) -> None:
    now = [0.0]
    lost: list[str] = []
    hb = watchdog.Heartbeat(tmp_path, 0, 2, timeout=30, on_lost=lost.append, clock=lambda: now[0])
    peer = watchdog.Heartbeat(tmp_path, 1, 2, timeout=30, on_lost=lost.append, clock=lambda: now[0])
    hb.folder.mkdir(exist_ok=True)
    peer.step = 12
    peer.write()
    assert hb.check_peers() == ""  # first sight
    now[0] = 29.0
    assert hb.check_peers() == "" and not lost
    now[0] = 40.0
    peer.write()  # it beats again: the clock restarts
    assert hb.check_peers() == ""
    now[0] = 69.0
    assert hb.check_peers() == ""
    now[0] = 71.0
    msg = hb.check_peers()
    assert msg.startswith(f"rank 1 on {peer.host} lost: no heartbeat for 31 s (last step 12") and lost == [msg]
    assert json.loads((tmp_path / "lost.json").read_text())["rank"] == 1
    peer.write("done")  # a peer that ended and said so is not lost
    now[0] = 500.0
    assert hb.check_peers() == ""


def test_lease_expiry_asks_for_a_stop(tmp_path: Path) -> None:
    now = [0.0]
    lease = tmp_path / "lease"
    lease.write_text("1")
    hb = watchdog.Heartbeat(tmp_path, 0, 1, lease_file=str(lease), lease_timeout=60, clock=lambda: now[0])
    assert hb.check_lease() == ""
    now[0] = 50.0
    lease.write_text("2")
    assert hb.check_lease() == ""
    now[0] = 109.0
    assert hb.check_lease() == ""
    now[0] = 111.0
    assert "client stopped following the run" in hb.check_lease() and "61 s" in hb.stop_reason


def test_comm_errors_are_recognised() -> None:
    assert watchdog.is_comm_error(RuntimeError("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
                                               "closed by peer [10.86.0.12]:62917"))
    assert not watchdog.is_comm_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


# ------------------------------------------------------------------------------------------------ real processes


def _two_ranks(tmp_path: Path, shard_dir: Path, extra: list[str], port: int) -> list[subprocess.Popen[str]]:
    env_base = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "SLURM_", "RANK"))}
    env_base.update(PYTHONPATH=str(REPO), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    procs = []
    for rank in range(2):
        env = dict(env_base, OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE="2",
                   OMPI_COMM_WORLD_LOCAL_RANK=str(rank), OMPI_COMM_WORLD_LOCAL_SIZE="2")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "sccnlp.node.bert.train", *BASE, "--data-dir", str(shard_dir),
             "--output-dir", str(tmp_path / "run"), "--heartbeat-dir", str(tmp_path / "hb"), *extra],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs


def _wait_for_step(hb: Path, rank: int, step: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if json.loads((hb / f"rank-{rank:05d}.json").read_text())["step"] >= step:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"rank {rank} did not reach step {step}")


@pytest.mark.parametrize("how", ["kill", "freeze"])
def test_lost_rank_stops_the_other_and_is_named(tmp_path: Path, how: str) -> None:
    """Rank 1 SIGKILLed (its process and sockets gone) or SIGSTOPped (a node that hangs silently): rank 0 ends
    quickly with one error line, and the post-mortem names rank 1."""
    shard_dir = write_shards(tmp_path / "data", counts=(400, 400))
    procs = _two_ranks(tmp_path, shard_dir, ["--steps", "100000", "--heartbeat-timeout", "10",
                                             "--collective-timeout", "300"], 29900 + os.getpid() % 50 * 2 +
                       (how == "kill"))
    try:
        _wait_for_step(tmp_path / "hb", 1, 3)
        os.kill(procs[1].pid, signal.SIGKILL if how == "kill" else signal.SIGSTOP)
        lost_at = time.monotonic()
        _unused, err0 = procs[0].communicate(timeout=60)
        took = time.monotonic() - lost_at
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert procs[0].returncode in (watchdog.EXIT_LOST_PEER, watchdog.EXIT_COMM_ERROR), err0[-2000:]
    assert "Traceback" not in err0
    if how == "freeze":  # nothing closes: only the watchdog can tell
        # The timeout counts from rank 1's last beat, which can be up to one beat interval (2 s) before SIGSTOP.
        assert procs[0].returncode == watchdog.EXIT_LOST_PEER and 10 - 2.5 <= took < 20, (took, err0[-1000:])
        assert "rank 1 on " in err0 and "lost: no heartbeat for 1" in err0
    result = watchdog.report(tmp_path / "hb", tmp_path / "run", ["nodeA", "nodeB"], "", rc=1)
    assert result["first"]["rank"] == 1 and result["first"]["node"] == "nodeB", result


def test_expired_client_lease_checkpoints_and_stops(shard_dir: Path, tmp_path: Path, capsys) -> None:
    lease = tmp_path / "lease"
    lease.write_text("never renewed")
    rc = train.main([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(tmp_path / "run"), "--steps", "100000",
                     "--heartbeat-dir", str(tmp_path / "hb"), "--client-lease", str(lease),
                     "--client-lease-timeout", "3"])
    out = capsys.readouterr()
    assert rc == watchdog.EXIT_CLIENT_GONE
    assert "client stopped following the run" in out.err and "run the same command again to resume" in out.err
    ckpts = list((tmp_path / "run").glob("ckpt-*.pt"))
    assert len(ckpts) == 1 and torch.load(ckpts[0], weights_only=False)["step"] > 0
    assert json.loads((tmp_path / "hb" / "rank-00000.json").read_text())["status"] == "error"


def test_time_based_checkpoints(shard_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    clock = [0.0]

    def fake() -> float:
        clock[0] += 1.0  # every look at the clock is a second later
        return clock[0]

    monkeypatch.setattr(train.time, "monotonic", fake)
    rc = train.main([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(tmp_path / "run"), "--steps", "12",
                     "--ckpt-seconds", "3", "--keep-checkpoints", "0"])
    capsys.readouterr()
    assert rc == 0
    steps = sorted(int(p.stem.split("-")[1]) for p in (tmp_path / "run").glob("ckpt-*.pt"))
    assert steps[-1] == 12 and len(steps) >= 2 and all(s % 2 == 0 for s in steps)  # at log intervals


def test_resume_with_fewer_ranks_keeps_the_epoch_fraction(tmp_path: Path, capsys) -> None:
    shard_dir = write_shards(tmp_path / "data", counts=(96, 64))  # 160 records, 20 batches of 8 on one rank
    run = tmp_path / "run"
    assert train.main([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(run), "--steps", "10"]) == 0
    state = torch.load(run / "ckpt-10.pt", weights_only=False)
    state["world_size"] = 2  # as if two ranks wrote it: rank 0 read half of its 80-record slice
    state["data"] = {"epoch": 0, "batch_in_epoch": 5, "start": 0, "end": 80}
    state["rng"] = state["rng"] * 2
    torch.save(state, run / "ckpt-10.pt")
    capsys.readouterr()
    assert train.main([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(run), "--steps", "11"]) == 0
    out = capsys.readouterr().out
    assert "data continues at epoch 0, 50.0% of it" in out
    data = torch.load(run / "ckpt-11.pt", weights_only=False)["data"]
    assert (data["epoch"], data["batch_in_epoch"]) == (0, 11)  # 50% of 20 batches, then one step
