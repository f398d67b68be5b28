"""Merge the per-node JSON fragments the validate playbook fetches into one results dict."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sccnlp.errors import SccError
from sccnlp.report.model import RUN_KEYS, Results, validate


def merge(per_node_files: list[Path]) -> dict[str, Any]:
    """Join fragments `{run, nodes: {host: ...}, cluster?}`: nodes are united (a host twice is an error naming both
    files), cluster checks are appended, cluster curves joined by name, run.started is the earliest and
    run.finished the latest. The merged dict is validated before it is returned."""
    if not per_node_files:
        raise SccError("no result fragments to merge: did the validate playbook fetch any (check its output dir)?")
    merged: dict[str, Any] = {"run": {}, "nodes": {}, "cluster": {"checks": [], "curves": {}}}
    origin: dict[str, Path] = {}
    curve_origin: dict[str, Path] = {}
    for path in sorted(Path(p) for p in per_node_files):
        fragment = _read(path)
        _merge_run(merged["run"], fragment.get("run"), path)
        nodes = fragment.get("nodes")
        if not isinstance(nodes, dict):
            raise SccError(f"{path}: 'nodes' is missing or not an object; expected {{host: {{facts, checks}}}}")
        for host, node in nodes.items():
            if host in origin:
                raise SccError(f"node {host!r} appears in both {origin[host]} and {path}: remove the stale fragment")
            origin[host] = path
            merged["nodes"][host] = node
        cluster = fragment.get("cluster") or {}
        if not isinstance(cluster, dict):
            raise SccError(f"{path}: 'cluster' is not an object; expected {{checks: [...], curves: {{...}}}}")
        merged["cluster"]["checks"].extend(cluster.get("checks", []))
        for name, points in (cluster.get("curves") or {}).items():
            if name in curve_origin:
                raise SccError(f"cluster curve {name!r} appears in both {curve_origin[name]} and {path}")
            curve_origin[name] = path
            merged["cluster"]["curves"][name] = points
    if not merged["cluster"]["checks"] and not merged["cluster"]["curves"]:
        del merged["cluster"]
    results: Results = merged  # type: ignore[assignment]
    validate(results, "merged results (" + ", ".join(str(p) for p in sorted(origin.values())) + ")")
    return merged


def _instant(stamp: str) -> tuple[int, Any]:
    """Sort key for ISO 8601 stamps (time zones honoured); unparsable stamps sort as text after parsable ones."""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return (1, stamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (0, moment.timestamp())


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise SccError(f"result fragment {path} does not exist") from exc
    except json.JSONDecodeError as exc:
        raise SccError(f"result fragment {path} is not valid JSON (line {exc.lineno}: {exc.msg}); "
                       "re-run the validate playbook for that node") from exc
    if not isinstance(data, dict):
        raise SccError(f"result fragment {path} is not a JSON object")
    return data


def _merge_run(target: dict[str, Any], run: Any, path: Path) -> None:
    if run is None:
        return
    if not isinstance(run, dict):
        raise SccError(f"{path}: 'run' is not an object; expected {{started, finished, cluster, inventory}}")
    for key in RUN_KEYS:
        value = run.get(key)
        if value is None:
            continue
        if key not in target:
            target[key] = value
        elif key == "started":
            target[key] = min(target[key], value, key=_instant)
        elif key == "finished":
            target[key] = max(target[key], value, key=_instant)
        elif target[key] != value:
            raise SccError(f"{path}: run.{key} is {value!r} but another fragment says {target[key]!r}; "
                           "fragments from different runs cannot be merged")
