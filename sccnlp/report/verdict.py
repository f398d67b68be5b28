"""The overall verdict of a validate run, from one source: the result fragments that came back and the hosts the
playbook ran on. A node that ran without sending a fragment, or was unreachable, is a failed node by name; failed
cluster checks and a failed playbook fail the run. The summary's `Overall:` line, the `No results from:` line and
the exit status all come from this one value, so they cannot contradict each other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sccnlp.report.model import node_status, status_of


@dataclass(frozen=True)
class PlayedHost:
    """What the playbook did on a host: unreachable, failed, and its last task with that task's result."""

    unreachable: bool = False
    failed: bool = False
    last_task: str = ""


@dataclass(frozen=True)
class NodeOutcome:
    name: str
    status: str  # pass, fail or skip
    why: str = ""  # for a failed node: "checks failed", "no results (...)", "unreachable"
    sent_results: bool = True


@dataclass(frozen=True)
class Verdict:
    status: str
    nodes: tuple[NodeOutcome, ...]
    cluster_failed: int = 0
    playbook_rc: int = 0

    @property
    def failed(self) -> list[NodeOutcome]:
        return [n for n in self.nodes if n.status == "fail"]

    @property
    def without_results(self) -> list[NodeOutcome]:
        return [n for n in self.nodes if not n.sent_results]

    @property
    def exit_code(self) -> int:
        return 1 if self.status == "fail" else 0

    def overall_line(self, started: str = "?", finished: str = "?") -> str:
        failed = self.failed
        text = f"Overall: {self.status.upper()} ({len(self.nodes)} nodes, {len(failed)} failed"
        if failed:
            text += ": " + ", ".join(f"{n.name} ({n.why})" for n in failed)
        if self.cluster_failed:
            text += f"; {self.cluster_failed} cluster check{'s' if self.cluster_failed > 1 else ''} failed"
        if self.playbook_rc:
            text += f"; the playbook ended with exit {self.playbook_rc} (see its output above)"
        return text + f"; run {started} .. {finished})"

    def missing_line(self) -> str:
        """`No results from: node1 (last task: ...), ...` or `Unreachable (no results): ...`; empty when none."""
        gone = [n for n in self.without_results if n.why == "unreachable"]
        silent = [n for n in self.without_results if n.why != "unreachable"]
        parts = []
        if gone:
            parts.append(f"Unreachable (no results): {', '.join(n.name for n in gone)}")
        if silent:
            parts.append("No results from: " + ", ".join(f"{n.name} ({n.why})" for n in silent))
        return "\n".join(parts)


def decide(results: Mapping[str, Any], played: Mapping[str, PlayedHost] | None = None,
           playbook_rc: int = 0) -> Verdict:
    """The verdict from the merged fragments (`results`) and the hosts the playbook ran on (`played`, without
    hosts that did nothing, like a controller play's localhost)."""
    played = played or {}
    nodes_results = results.get("nodes", {}) or {}
    outcomes = []
    for name in sorted(set(nodes_results) | set(played)):
        host = played.get(name)
        if name in nodes_results:
            status = node_status(nodes_results[name])
            outcomes.append(NodeOutcome(name, status, "checks failed" if status == "fail" else ""))
        elif host is not None and host.unreachable:
            outcomes.append(NodeOutcome(name, "fail", "unreachable", sent_results=False))
        else:
            last = host.last_task if host is not None and host.last_task else "no task ran"
            how = "failed at" if host is not None and host.failed else "last task"
            outcomes.append(NodeOutcome(name, "fail", f"no results; {how}: {last}", sent_results=False))
    cluster_checks = (results.get("cluster") or {}).get("checks", [])
    cluster_failed = sum(1 for c in cluster_checks if c.get("status") == "fail")
    if any(n.status == "fail" for n in outcomes) or cluster_failed or playbook_rc:
        status = "fail"
    else:
        statuses = [n.status for n in outcomes] + ([status_of(cluster_checks)] if cluster_checks else [])
        status = "pass" if "pass" in statuses else "skip"
    return Verdict(status, tuple(outcomes), cluster_failed, playbook_rc)
