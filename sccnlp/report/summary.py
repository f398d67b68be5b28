"""The terminal summary `sccnlp validate` prints: one line per node, failing checks named with measured vs floor, then
which software each node has (nodes with the same stack share a line, so drift stands out)."""

from __future__ import annotations

from typing import Any, Optional

from sccnlp.report.model import Check, Results, counts, load, node_status, status_of
from sccnlp.report.verdict import Verdict, decide


def text_summary(results: dict[str, Any], verdict: Optional[Verdict] = None) -> str:
    """One line per node (and one for cluster checks): PASS/FAIL/SKIP, counts, and each failing check as
    `name: measured M unit vs floor F unit (detail)`. Ends with the overall verdict (`decide(results)` unless
    given: the one that also names the nodes without results and sets the exit status)."""
    data: Results = load(results)
    verdict = verdict or decide(data)
    width = max(len(host) for host in data["nodes"])
    width = max(width, len("cluster"))
    lines: list[str] = []
    for host in sorted(data["nodes"]):
        checks = data["nodes"][host].get("checks", [])
        lines.append(_line(host, node_status(data["nodes"][host]), checks, width))
    cluster_checks = data.get("cluster", {}).get("checks", [])
    if cluster_checks:
        lines.append(_line("cluster", status_of(cluster_checks), cluster_checks, width))
    lines.append(verdict.overall_line(data["run"]["started"], data["run"]["finished"]))
    return "\n".join(lines)


def _line(name: str, status: str, checks: list[Check], width: int) -> str:
    tally = counts(checks)
    head = (f"{status.upper():<4}  {name:<{width}}  "
            f"{tally['pass']} passed, {tally['fail']} failed, {tally['skip']} skipped")
    failed = [c for c in checks if c["status"] == "fail"]
    if failed:
        head += ": " + "; ".join(describe(c) for c in failed)
    return head


def describe(check: Check) -> str:
    """`nccl_all_reduce_busbw: measured 180.3 GB/s vs floor 431 GB/s (detail)`."""
    text = f"{check['name']}: measured {_value(check['measured'], check['unit'])} vs floor " \
           f"{_value(check['floor'], check['unit'])}"
    if check.get("detail"):
        text += f" ({check['detail']})"
    return text


def _value(value: Optional[float], unit: str) -> str:
    if value is None:
        return "n/a"
    number = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{number} {unit}".strip()


# (fact key, label) of the software a node trains with, as the validate role and the gates record them.
STACK_FACTS = (("python", "Python"), ("framework", "framework"), ("driver", "driver"), ("cuda", "CUDA"),
               ("nccl", "NCCL"), ("cudnn", "cuDNN"), ("training_backend", "backend"),
               ("comm_backend", "NCCL transport"))
MAX_HOSTS_NAMED = 6


def stack_summary(results: dict[str, Any]) -> str:
    """`Software: the same on every node` (or `N different stacks`), then one line per distinct stack:
    `  node1, node2: Python 3.11.2, framework torch==2.13.0+cpu, driver -, ..., backend native, NCCL transport ...`."""
    data: Results = load(results)
    groups: dict[tuple[str, ...], list[str]] = {}
    for host in sorted(data["nodes"]):
        facts = data["nodes"][host].get("facts", {})
        groups.setdefault(tuple(_stack_value(key, facts.get(key)) for key, _label in STACK_FACTS), []).append(host)
    head = "Software: the same on every node" if len(groups) == 1 else f"Software: {len(groups)} different stacks"
    lines = [head]
    for stack, hosts in groups.items():
        named = ", ".join(hosts[:MAX_HOSTS_NAMED])
        if len(hosts) > MAX_HOSTS_NAMED:
            named += f" and {len(hosts) - MAX_HOSTS_NAMED} more"
        lines.append(f"  {named}: " + ", ".join(f"{label} {value}" for (_key, label), value in zip(STACK_FACTS, stack)))
    return "\n".join(lines)


def _stack_value(key: str, value: Any) -> str:
    if value is None or value == "":
        return "-"
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    # The training backend's reason stays in the report; the summary names the backend only.
    return text.split(" (", 1)[0] if key == "training_backend" else text
