"""Run the collection's playbooks through ansible-runner, print per-host progress, summarise per host."""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

from sccnlp.errors import SccError
from sccnlp.paths import collection_root, playbook

_PROGRESS_EVENTS = {
    "runner_on_ok": "ok",
    "runner_on_failed": "FAILED",
    "runner_on_unreachable": "UNREACHABLE",
    "runner_on_skipped": "skipped",
}


@dataclass
class HostSummary:
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    messages: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.failed and not self.unreachable


@dataclass
class RunResult:
    status: str
    rc: int
    hosts: dict[str, HostSummary]

    @property
    def ok(self) -> bool:
        return self.rc == 0 and all(h.healthy for h in self.hosts.values())

    def bad_hosts(self) -> dict[str, HostSummary]:
        return {name: h for name, h in self.hosts.items() if not h.healthy}


def _event_printer(stream: TextIO, verbose: bool) -> Callable[[dict[str, Any]], bool]:
    def on_event(event: dict[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data", {})
        if kind == "playbook_on_play_start":
            print(f"== {data.get('play', '')}", file=stream, flush=True)
        elif kind == "playbook_on_task_start" and verbose:
            print(f"   - {data.get('task', '')}", file=stream, flush=True)
        elif kind in _PROGRESS_EVENTS:
            label = _PROGRESS_EVENTS[kind]
            res = data.get("res") or {}
            changed = " (changed)" if res.get("changed") else ""
            if label != "ok" or changed or verbose:
                line = f"   {data.get('host', '?'):<14} {label:<11} {data.get('task', '')}{changed}"
                if label in ("FAILED", "UNREACHABLE"):
                    line += f": {_one_line(res.get('msg') or res.get('stderr') or '')}"
                print(line, file=stream, flush=True)
        return True

    return on_event


def _one_line(text: Any, limit: int = 400) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def run_playbook(
    name: str,
    inventory: str | os.PathLike[str],
    extravars: dict[str, Any] | None = None,
    limit: str | None = None,
    tags: str | None = None,
    check: bool = False,
    verbose: bool = False,
    stream: TextIO | None = None,
    envvars: dict[str, str] | None = None,
) -> RunResult:
    """Run `playbooks/<name>.yml` (or a playbook path ending in .yml) against `inventory`; summarise per host."""
    try:
        import ansible_runner
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SccError("ansible-runner is not installed: pip install 'sccnlp[controller]'") from exc

    stream = stream or sys.stdout
    book = Path(name) if name.endswith((".yml", ".yaml")) else playbook(name)
    if not book.exists():
        raise SccError(f"no playbook {book}: is SCCNLP_COLLECTION pointing at the collection root?")
    inv = Path(inventory)
    if not inv.exists():
        raise SccError(f"inventory {inv} does not exist: pass --inventory PATH (or run `sccnlp testbed up`)")

    cmdline = "--check --diff" if check else ""
    env = {
        "ANSIBLE_COLLECTIONS_PATH": _collections_path(),
        "ANSIBLE_ROLES_PATH": str(collection_root() / "roles"),
        "ANSIBLE_CONFIG": str(collection_root() / "ansible.cfg"),
        "ANSIBLE_FORCE_COLOR": "0",
    }
    env.update(envvars or {})
    with tempfile.TemporaryDirectory(prefix="sccnlp-runner-") as private:
        result = ansible_runner.run(
            private_data_dir=private,
            playbook=str(book),
            inventory=str(inv.resolve()),
            extravars=extravars or {},
            limit=limit,
            tags=tags,
            cmdline=cmdline or None,
            envvars=env,
            event_handler=_event_printer(stream, verbose),
            quiet=True,
            suppress_env_files=True,
        )
        hosts = _summarise(result)
    return RunResult(status=result.status, rc=int(result.rc or 0), hosts=hosts)


def _collections_path() -> str:
    """Make `scc.nlp_training` importable from a checkout: <tmp>/ansible_collections/scc/nlp_training -> root."""
    root = collection_root()
    if root.parent.name == "scc" and root.parent.parent.name == "ansible_collections":
        return str(root.parent.parent.parent)
    shim = Path(tempfile.gettempdir()) / f"sccnlp-collections-{os.getuid()}"
    link = shim / "ansible_collections" / "scc" / "nlp_training"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink() or link.resolve() != root.resolve():
        if link.is_symlink():
            link.unlink()
        link.symlink_to(root, target_is_directory=True)
    existing = os.environ.get("ANSIBLE_COLLECTIONS_PATH", "")
    return os.pathsep.join(p for p in (str(shim), existing) if p)


def _summarise(result: Any) -> dict[str, HostSummary]:
    hosts: dict[str, HostSummary] = {}
    stats = result.stats or {}
    for key, attr in (("ok", "ok"), ("changed", "changed"), ("failures", "failed"),
                      ("dark", "unreachable"), ("skipped", "skipped")):
        for host, count in (stats.get(key) or {}).items():
            summary = hosts.setdefault(host, HostSummary())
            setattr(summary, attr, int(count))
    for event in result.events:
        kind = event.get("event")
        if kind in ("runner_on_failed", "runner_on_unreachable"):
            data = event.get("event_data", {})
            if kind == "runner_on_failed" and data.get("ignore_errors"):
                continue
            host = data.get("host", "?")
            res = data.get("res") or {}
            hosts.setdefault(host, HostSummary()).messages.append(
                f"{data.get('task', '')}: {_one_line(res.get('msg') or res.get('stderr') or '')}"
            )
    return hosts


def print_summary(result: RunResult, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    print("\nPer-host summary:", file=stream)
    for host in sorted(result.hosts):
        h = result.hosts[host]
        state = "ok" if h.healthy else ("UNREACHABLE" if h.unreachable else "FAILED")
        print(f"  {host:<16} {state:<12} ok={h.ok} changed={h.changed} failed={h.failed} "
              f"unreachable={h.unreachable}", file=stream)
        for msg in h.messages[:3]:
            print(f"      {msg}", file=stream)
