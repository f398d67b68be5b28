"""The results schema of one validation run, its loader/validator and the pass/fail rules.

A producer (the validate playbook) writes per-node fragments; `sccnlp.report.collect.merge` joins them; `load`
checks the shape and names precisely what is missing, so a broken fragment gives one clear line, not a traceback.
Status rules: a node (and the run) fails when any check fails; skips are shown as skips and never count as passes;
a node or run with no passing check and no failure is "skip".
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional, TypedDict, Union

from sccnlp.errors import SccError

STATUSES = ("pass", "fail", "skip")


class Check(TypedDict):
    name: str
    status: str
    measured: Optional[float]
    floor: Optional[float]
    unit: str
    detail: str


class CurvePoint(TypedDict, total=False):
    size: int
    algbw: float
    busbw: float
    bw_avg: float


class NodeResult(TypedDict, total=False):
    facts: dict[str, Any]
    checks: list[Check]
    curves: dict[str, list[CurvePoint]]


class ClusterResult(TypedDict, total=False):
    checks: list[Check]
    curves: dict[str, list[CurvePoint]]


class RunInfo(TypedDict):
    started: str
    finished: str
    cluster: str
    inventory: str


class Results(TypedDict, total=False):
    run: RunInfo
    nodes: dict[str, NodeResult]
    cluster: ClusterResult


RUN_KEYS = ("started", "finished", "cluster", "inventory")
CURVE_Y_KEYS = ("algbw", "busbw", "bw_avg")


def load(source: Union[str, Path, dict[str, Any]]) -> Results:
    """Read (a path) or take (a dict) one run's results, validate the shape, and return it.

    Raises SccError naming the file, the exact place (e.g. nodes['gpu1'].checks[2].status) and what is expected.
    """
    if isinstance(source, dict):
        data, where = source, "results"
    else:
        path = Path(source)
        where = str(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError as exc:
            raise SccError(f"results file {path} does not exist: run `sccnlp validate` first or pass the right path") \
                from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise SccError(f"cannot read results file {path}: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise SccError(f"results file {path} is not valid JSON (line {exc.lineno}: {exc.msg}); "
                           "re-run `sccnlp validate` to regenerate it") from exc
    validate(data, where)
    return data  # type: ignore[return-value]


def validate(data: Any, where: str = "results") -> None:
    """Raise SccError for the first thing that does not match the schema."""
    _expect(isinstance(data, dict), where, "the top level", "a JSON object with 'run' and 'nodes'")
    run = data.get("run")
    _expect(isinstance(run, dict), where, "'run'", "an object with " + ", ".join(RUN_KEYS))
    for key in RUN_KEYS:
        _expect(isinstance(run.get(key), str), where, f"run.{key}", "a string")
    nodes = data.get("nodes")
    _expect(isinstance(nodes, dict) and len(nodes) > 0, where, "'nodes'",
            "an object with at least one node (host name -> {facts, checks, curves})")
    for host, node in nodes.items():
        place = f"nodes[{host!r}]"
        _expect(isinstance(node, dict), where, place, "an object with 'facts' and 'checks'")
        _expect(isinstance(node.get("facts"), dict), where, f"{place}.facts", "an object of node facts")
        _checks(node.get("checks"), where, f"{place}.checks")
        _curves(node.get("curves", {}), where, f"{place}.curves")
    cluster = data.get("cluster")
    if cluster is not None:
        _expect(isinstance(cluster, dict), where, "'cluster'", "an object with 'checks' (and optional 'curves')")
        _checks(cluster.get("checks", []), where, "cluster.checks")
        _curves(cluster.get("curves", {}), where, "cluster.curves")


def _checks(checks: Any, where: str, place: str) -> None:
    _expect(isinstance(checks, list), where, place, "a list of checks")
    for index, check in enumerate(checks):
        item = f"{place}[{index}]"
        _expect(isinstance(check, dict), where, item, "an object {name, status, measured, floor, unit, detail}")
        _expect(isinstance(check.get("name"), str) and check["name"], where, f"{item}.name", "a non-empty string")
        item = f"{place}[{index}] ({check['name']})"
        _expect(check.get("status") in STATUSES, where, f"{item}.status", "one of pass|fail|skip")
        for key in ("measured", "floor"):
            _expect(key in check and _is_number_or_null(check[key]), where, f"{item}.{key}", "a number or null")
        for key in ("unit", "detail"):
            _expect(isinstance(check.get(key), str), where, f"{item}.{key}", "a string (may be empty)")


def _curves(curves: Any, where: str, place: str) -> None:
    _expect(isinstance(curves, dict), where, place, "an object of curve name -> list of points")
    for name, points in curves.items():
        item = f"{place}[{name!r}]"
        _expect(isinstance(points, list), where, item, "a list of {size, ...} points")
        for index, point in enumerate(points):
            at = f"{item}[{index}]"
            _expect(isinstance(point, dict), where, at, "an object with 'size' and algbw/busbw or bw_avg")
            _expect(isinstance(point.get("size"), int) and not isinstance(point.get("size"), bool)
                    and point["size"] >= 0, where, f"{at}.size", "a byte count (integer >= 0)")
            ys = [k for k in CURVE_Y_KEYS if k in point]
            _expect(bool(ys), where, at, "one of " + ", ".join(CURVE_Y_KEYS))
            for key in ys:
                _expect(_is_number_or_null(point[key]), where, f"{at}.{key}", "a number or null")


def _is_number_or_null(value: Any) -> bool:
    if value is None:
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _expect(ok: bool, where: str, place: str, expected: str) -> None:
    if not ok:
        raise SccError(f"{where}: {place} is missing or malformed; expected {expected} "
                       "(the validate playbook writes this; re-run it, or fix the fragment by hand)")


def status_of(checks: list[Check]) -> str:
    """fail if any check failed; pass if at least one passed; otherwise skip (nothing was measured)."""
    statuses = {c["status"] for c in checks}
    if "fail" in statuses:
        return "fail"
    if "pass" in statuses:
        return "pass"
    return "skip"


def node_status(node: NodeResult) -> str:
    return status_of(node.get("checks", []))


def overall_status(results: Results) -> str:
    checks: list[Check] = [c for node in results["nodes"].values() for c in node.get("checks", [])]
    checks += results.get("cluster", {}).get("checks", [])
    return status_of(checks)


def counts(checks: list[Check]) -> dict[str, int]:
    return {status: sum(1 for c in checks if c["status"] == status) for status in STATUSES}
