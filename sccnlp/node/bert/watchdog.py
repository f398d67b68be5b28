"""Failure detection of a training run: heartbeats on the shared storage, a watchdog, the client lease, a post-mortem.

Every rank writes `<dir>/rank-<r>.json` every `interval` seconds from a thread (host, pid, step, a sequence number,
the time); when it ends it writes its end state (`done`, or `error` with the message). Two ranks watch (rank 0 and
the last one, so one of them is alive whichever node dies): a peer whose heartbeat has not changed for `timeout`
seconds of the watcher's own clock is lost. The watcher writes `lost.json` (first writer wins), prints one line
naming the rank and its node and ends its own process, so mpirun stops the job instead of the survivors waiting in a
collective until its timeout. A node that dies outright (its processes and sockets gone) is usually noticed sooner by
the collective library; the heartbeats then still tell which rank stopped first.

Rank 0 also watches the client lease, a file the `sccnlp train` client rewrites each time it polls the log: when it
has not changed for `lease_timeout` seconds the client is gone (killed, its machine down), and the run saves a
checkpoint and stops instead of running on unseen.

After mpirun returns, `python -m sccnlp.node.bert.watchdog report` reads the heartbeats and mpirun's log and prints one
`lost:` line naming the rank and node that stopped first, and the checkpoint a re-run resumes from.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sccnlp.node.bert import checkpoint

EXIT_LOST_PEER = 75  # a watcher found a peer rank without heartbeat
EXIT_CLIENT_GONE = 76  # the client lease expired: checkpoint saved, run stopped
EXIT_COMM_ERROR = 77  # a collective failed: a peer is gone (its connection closed, or the collective timed out)
EXIT_STORAGE = 78  # a checkpoint could not be written (storage full or failing): every rank stopped
_MPI_LOST_DAEMON = re.compile(r"lost communication with a remote daemon", re.I)
_MPI_REMOTE = re.compile(r"Remote daemon:\s*\S+\s+on node\s+(\S+)")
_MPI_NOTICED = re.compile(r"process rank (\d+) with PID \d+ on node (\S+) (exited on signal \d+[^.]*|exited)")


def beat_file(folder: Path, rank: int) -> Path:
    return folder / f"rank-{rank:05d}.json"


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data) + "\n")
    os.replace(tmp, path)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_first(path: Path, data: dict[str, Any]) -> bool:
    """Create `path` with `data` unless it exists (O_EXCL: the first writer wins); True when this call wrote it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write(json.dumps(data) + "\n")
    return True


def utc(stamp: float) -> str:
    return time.strftime("%H:%M:%SZ", time.gmtime(stamp))


@dataclass
class _Seen:
    """What a watcher knows of one peer: its last sequence number and when (watcher's monotonic clock) it changed."""

    seq: Any = None
    changed: float = 0.0
    beat: dict[str, Any] = field(default_factory=dict)


class Heartbeat:
    """This rank's heartbeat thread; on a watcher rank it also checks the peers and the client lease."""

    def __init__(self, folder: str | os.PathLike[str], rank: int, world: int, interval: float = 2.0,
                 timeout: float = 30.0, lease_file: str = "", lease_timeout: float = 0.0,
                 on_lost: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.folder = Path(folder)
        self.rank, self.world = rank, world
        self.interval, self.timeout = interval, timeout
        self.watch = world > 1 and rank in (0, world - 1) and timeout > 0
        self.lease_file = Path(lease_file) if lease_file and rank == 0 else None
        self.lease_timeout = lease_timeout
        self.on_lost = on_lost or self._exit_lost
        self.clock = clock
        self.host = socket.gethostname()
        self.step = 0
        self.seq = 0
        self.stop_reason = ""  # set when the client lease expired: the trainer checkpoints and stops
        self._seen: dict[int, _Seen] = {}
        self._lease = _Seen()
        self._started = 0.0
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------------ own heartbeat

    def _record(self, status: str = "running", message: str = "") -> dict[str, Any]:
        return {"rank": self.rank, "world": self.world, "host": self.host, "pid": os.getpid(), "step": self.step,
                "seq": self.seq, "time": time.time(), "status": status, "message": message}

    def write(self, status: str = "running", message: str = "") -> None:
        self.seq += 1
        try:
            _write_json(beat_file(self.folder, self.rank), self._record(status, message))
        except OSError as exc:  # shared storage hiccup: the next beat tries again, the watchers allow `timeout`
            print(f"[rank {self.rank}] heartbeat not written ({exc})", file=sys.stderr, flush=True)

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._started = self.clock()
        self.write()
        self._thread = threading.Thread(target=self._loop, name="sccnlp-heartbeat", daemon=True)
        self._thread.start()

    def finish(self, status: str, message: str = "") -> None:
        """Stop the thread and leave this rank's end state (`done` or `error`) for the post-mortem."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 1)
        self.write(status, message)

    def _loop(self) -> None:
        while not self._halt.wait(self.interval):
            self.write()
            if self.watch:
                self.check_peers()
            if self.lease_file is not None and self.lease_timeout > 0:
                self.check_lease()

    # ------------------------------------------------------------------------------------------ watching

    def check_peers(self) -> str:
        """Look at every other rank's heartbeat once; returns (and acts on) the loss message, if any."""
        now = self.clock()
        for peer in range(self.world):
            if peer == self.rank:
                continue
            seen = self._seen.setdefault(peer, _Seen(changed=self._started or now))
            beat = _read_json(beat_file(self.folder, peer))
            if beat is not None and beat.get("seq") != seen.seq:
                seen.seq, seen.changed, seen.beat = beat.get("seq"), now, beat
                continue
            if beat is not None and beat.get("status") != "running":
                continue  # it ended and said so (done or error): the post-mortem reports it
            silent = now - seen.changed
            if silent >= self.timeout:
                host = seen.beat.get("host", "?")
                last = f"last step {seen.beat.get('step')}, last beat {utc(float(seen.beat['time']))}" \
                    if seen.beat else "no heartbeat since the start"
                msg = (f"rank {peer} on {host} lost: no heartbeat for {silent:.0f} s ({last}); "
                       f"seen by rank {self.rank} on {self.host}")
                write_first(self.folder / "lost.json", {"rank": peer, "host": host, "by_rank": self.rank,
                                                        "by_host": self.host, "silent_s": round(silent, 1),
                                                        "time": time.time(), "message": msg})
                self.on_lost(msg)
                return msg
        return ""

    def check_lease(self) -> str:
        """The client lease: ask the trainer to stop (after a checkpoint) when the client stopped renewing it."""
        assert self.lease_file is not None
        now = self.clock()
        try:
            content = self.lease_file.read_text()
        except OSError:
            content = None
        if self._lease.changed == 0.0:
            self._lease.changed = self._started or now
        if content is not None and content != self._lease.seq:
            self._lease.seq, self._lease.changed = content, now
            return ""
        silent = now - self._lease.changed
        if silent >= self.lease_timeout and not self.stop_reason:
            self.stop_reason = (f"the sccnlp train client stopped following the run (its lease {self.lease_file} "
                                f"not renewed for {silent:.0f} s)")
            print(f"[rank {self.rank}] {self.stop_reason}: saving a checkpoint and stopping", flush=True)
        if self.stop_reason and silent >= 3 * self.lease_timeout:
            self.on_lost(self.stop_reason + "; the graceful stop did not happen, ending the run")
        return self.stop_reason

    def _exit_lost(self, msg: str) -> None:
        print(f"sccnlp.node.bert.train: error: {msg}; stopping the run (re-run the same command to resume from the "
              "last checkpoint)", file=sys.stderr, flush=True)
        os._exit(EXIT_LOST_PEER)


# --------------------------------------------------------------------------------------------------- the trainer's use

_current: list[Heartbeat] = []  # this process's heartbeat, so main() can leave the end state whatever failed


def start_for(args: argparse.Namespace, rank: int, world: int) -> Heartbeat | None:
    """The trainer's heartbeat from its options (--heartbeat-dir, --heartbeat-timeout, --client-lease*)."""
    if not args.heartbeat_dir:
        return None
    beat = Heartbeat(args.heartbeat_dir, rank, world, timeout=args.heartbeat_timeout, lease_file=args.client_lease,
                     lease_timeout=args.client_lease_timeout)
    beat.start()
    _current[:] = [beat]
    return beat


def finish(status: str, message: str = "") -> None:
    for beat in _current:
        beat.finish(status, message)
    _current.clear()


_COMM_ERROR = re.compile(r"gloo|nccl|connection (closed|reset|refused)|timed out|timeout|socket|peer", re.I)


def is_comm_error(exc: BaseException) -> bool:
    """A failed collective (torch.distributed's DistError family, or gloo/NCCL's RuntimeError about a peer)."""
    return type(exc).__name__ in ("DistError", "DistBackendError", "DistNetworkError", "DistStoreError") or \
        bool(_COMM_ERROR.search(str(exc)))


def comm_error_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = re.sub(r"\[[^\]]*third_party[^\]]*\]\s*", "", text)
    text = re.split(r"\.? This is typically caused", text)[0][:300]  # gloo's advice, not about this run
    beat = _current[0] if _current else None
    who = f"rank {beat.rank} on {beat.host}: " if beat else ""
    return f"{who}a collective failed ({type(exc).__name__}: {text}): a peer rank is gone"


# --------------------------------------------------------------------------------------------------- post-mortem


def first_failure(beats: Sequence[dict[str, Any]], lost: dict[str, Any] | None, mpirun_log: str,
                  rank_hosts: Sequence[str]) -> dict[str, Any] | None:
    """The rank that stopped first and why, from the heartbeats, a watcher's `lost.json` and mpirun's output.

    Order of evidence: a watcher's verdict (it saw the heartbeat stop while the others ran); mpirun's lost daemon
    (a node gone: its rank that beat last earliest); mpirun's first noticed process, when that rank ended without
    a word (killed); else the ranks that ended without a word, the one whose heartbeat stopped earliest; else the
    earliest error a rank reported itself (a survivor's collective error comes after the peer it lost, so errors
    that name a closed connection or a timeout rank last). Survivors that mpirun ends later also leave no word, so
    mpirun's own account of the node or rank comes before the heartbeat times.
    """
    def node(rank: int, fallback: str) -> str:
        return rank_hosts[rank] if 0 <= rank < len(rank_hosts) else fallback

    def earliest(group: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return min(group, key=lambda b: (float(b.get("time", 0)), int(b.get("rank", 0))))

    lost_daemons = [m.group(1) for m in _MPI_REMOTE.finditer(mpirun_log)] if _MPI_LOST_DAEMON.search(mpirun_log) \
        else []
    noticed = _MPI_NOTICED.search(mpirun_log)
    silent = [b for b in beats if b.get("status") == "running"]
    errors = [b for b in beats if b.get("status") == "error"]
    quiet = "ended without a word (killed, or its node went down)"
    on_lost_node = [b for b in beats if lost_daemons and (b.get("host") in lost_daemons or
                                                          node(int(b.get("rank", -1)), "") in lost_daemons)]
    first: dict[str, Any] | None = None
    how = ""
    if lost is not None:
        rank = int(lost["rank"])
        beat = next((b for b in beats if int(b.get("rank", -1)) == rank), {})
        first, how = {**beat, "rank": rank, "host": lost.get("host", beat.get("host", "?"))}, \
            f"no heartbeat for {lost.get('silent_s')} s (seen by rank {lost.get('by_rank')})"
    elif on_lost_node:
        group = [b for b in on_lost_node if b.get("status") == "running"] or on_lost_node
        first, how = earliest(group), quiet
    elif noticed and any(int(b.get("rank", -1)) == int(noticed.group(1)) for b in silent):
        first = next(b for b in silent if int(b.get("rank", -1)) == int(noticed.group(1)))
        how = f"{noticed.group(3)} (mpirun)"
    elif silent:
        first, how = earliest(silent), quiet
    elif errors:
        def order(b: dict[str, Any]) -> tuple[int, float]:
            peer_error = bool(re.search(r"connection|closed|reset|peer|timed? ?out", str(b.get("message")), re.I))
            return int(peer_error), float(b.get("time", 0))
        first = min(errors, key=order)
        how = f"error: {first.get('message', '')}"
    if first is None:
        return None
    if first.get("time") and lost is None:
        how += f"; last heartbeat {utc(float(first['time']))}"
    rank = int(first["rank"])
    found = {"rank": rank, "host": first.get("host", "?"), "how": how, "step": first.get("step"),
             "node": node(rank, str(first.get("host", "?")))}
    if found["host"] in lost_daemons or found["node"] in lost_daemons:
        found["how"] += f"; mpirun lost its daemon on {found['host']}: the node is down or unreachable"
    return found


def report(folder: Path, run_dir: Path, rank_hosts: Sequence[str], mpirun_log: str, rc: int) -> dict[str, Any]:
    beats = [b for f in sorted(folder.glob("rank-*.json")) if (b := _read_json(f)) is not None]
    lost = _read_json(folder / "lost.json")
    # A storage failure stopped every rank on purpose and said so: no rank was lost.
    found = first_failure(beats, lost, mpirun_log, rank_hosts) if rc not in (0, EXIT_STORAGE) else None
    ckpt = checkpoint.latest(run_dir, checkpoint.ANY_TRAINER)  # the PyTorch trainer's .pt or TensorFlow's .index
    result: dict[str, Any] = {"rc": rc, "first": found, "checkpoint": str(ckpt) if ckpt else None,
                              "ranks_seen": len(beats)}
    try:
        _write_json(folder / "report.json", result)
    except OSError as exc:  # the same storage may be full: the printed line still tells
        print(f"report.json not written ({exc})", file=sys.stderr, flush=True)
    return result


def report_line(result: dict[str, Any]) -> str:
    found = result.get("first")
    if not found:
        return ""
    where = f"rank {found['rank']} on {found['node']}"
    if found["host"] not in ("?", found["node"]):
        where += f" (host {found['host']})"
    step = f" at step {found['step']}" if found.get("step") is not None else ""
    resume = f"resumes from {Path(result['checkpoint']).name}" if result.get("checkpoint") else \
        "starts from step 0 (no checkpoint yet)"
    return (f"lost: {where} stopped first{step}: {found['how']}. Fix: bring {found['node']} back (or remove it "
            f"from the inventory) and run the same command again: it {resume}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sccnlp.node.bert.watchdog",
                                description=__doc__.split("\n", maxsplit=1)[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="after mpirun: name the rank and node that stopped first")
    r.add_argument("--heartbeat-dir", required=True)
    r.add_argument("--run-dir", required=True)
    r.add_argument("--rank-hosts", default="", help="inventory host of each rank, comma-separated")
    r.add_argument("--mpirun-log", default="", help="the run's log (mpirun's own messages)")
    r.add_argument("--rc", type=int, required=True, help="mpirun's exit status")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    log = ""
    if args.mpirun_log:
        try:
            log = Path(args.mpirun_log).read_text(errors="replace")[-200_000:]
        except OSError:
            log = ""
    folder = Path(args.heartbeat_dir)
    if not folder.is_dir():
        return 0
    result = report(folder, Path(args.run_dir), [h for h in args.rank_hosts.split(",") if h], log, args.rc)
    line = report_line(result)
    if line:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
