"""The terminal summary `sccnlp validate` prints: one line per node, failing checks named with measured vs floor."""

from __future__ import annotations

from typing import Any, Optional

from sccnlp.report.model import Check, Results, counts, load, node_status, overall_status, status_of


def text_summary(results: dict[str, Any]) -> str:
    """One line per node (and one for cluster checks): PASS/FAIL/SKIP, counts, and each failing check as
    `name: measured M unit vs floor F unit (detail)`. Ends with the overall verdict."""
    data: Results = load(results)
    width = max(len(host) for host in data["nodes"])
    width = max(width, len("cluster"))
    lines: list[str] = []
    for host in sorted(data["nodes"]):
        checks = data["nodes"][host].get("checks", [])
        lines.append(_line(host, node_status(data["nodes"][host]), checks, width))
    cluster_checks = data.get("cluster", {}).get("checks", [])
    if cluster_checks:
        lines.append(_line("cluster", status_of(cluster_checks), cluster_checks, width))
    overall = overall_status(data)
    nodes_failed = sum(1 for n in data["nodes"].values() if node_status(n) == "fail")
    lines.append(f"Overall: {overall.upper()} ({len(data['nodes'])} nodes, {nodes_failed} failed; "
                 f"run {data['run']['started']} .. {data['run']['finished']})")
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
