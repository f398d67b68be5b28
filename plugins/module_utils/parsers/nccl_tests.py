"""Parse nccl-tests output (all_reduce_perf, all_gather_perf, ...): header, ranks, rows, averages.

The column header decides the layout, so old builds ('error' column, no 'redop'/'root') and new ones ('#wrong',
'root') both parse. Values printed as N/A become None.
"""

import re
from typing import Any, Dict, List, Optional

from ._common import strip_launcher_prefix, to_number

_HEADER_KV_RE = re.compile(r"(nThread|nGpus|minBytes|maxBytes|warmup iters|agg iters|iters|validation|graph)"
                           r":?\s+(\d+)")
_RANK_RE = re.compile(r"^#\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
                      r"\[([^\]]*)\]\s+(.*?)\s*$")
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(\S+)?")
_GROUP_COLUMNS = ("time", "algbw", "busbw")
_KEY_NAMES = {"warmup iters": "warmup_iters", "agg iters": "agg_iters"}


def parse_nccl_tests(text: str) -> Dict[str, Any]:
    """Return the first run's {header, ranks, rows, avg_busbw, out_of_bounds, max_busbw} plus `runs` (every run).

    A row: {size, count, type, redop, root, out_of_place: {time_us, algbw, busbw, wrong, error}, in_place: {...}};
    algbw/busbw in GB/s as nccl-tests prints them.
    """
    runs: List[Dict[str, Any]] = []
    run: Optional[Dict[str, Any]] = None
    columns: Optional[List[str]] = None
    for raw in (text or "").splitlines():
        line = strip_launcher_prefix(raw).strip()
        if not line:
            continue
        if line.startswith("#") and "nThread" in line:
            run = _new_run()
            runs.append(run)
            run["header"] = {_KEY_NAMES.get(k, k): int(v) for k, v in _HEADER_KV_RE.findall(line)}
            columns = None
            continue
        if line.startswith("#"):
            body = line.lstrip("#").split()
            if "size" in body and "count" in body and "busbw" in body:
                columns = body
                if run is None:
                    run = _new_run()
                    runs.append(run)
                continue
            if run is None:
                continue
            _parse_comment(run, line)
            continue
        if run is not None and columns is not None:
            row = _parse_row(line.split(), columns)
            if row is not None:
                run["rows"].append(row)
    for item in runs:
        busbw = [g["busbw"] for r in item["rows"] for g in (r["out_of_place"], r["in_place"])
                 if g.get("busbw") is not None]
        item["max_busbw"] = max(busbw) if busbw else None
    result: Dict[str, Any] = dict(runs[0]) if runs else _new_run()
    if not runs:
        result["max_busbw"] = None
    result["runs"] = runs
    return result


def _new_run() -> Dict[str, Any]:
    return {"header": {}, "ranks": [], "rows": [], "avg_busbw": None, "out_of_bounds": None}


def _parse_comment(run: Dict[str, Any], line: str) -> None:
    match = _RANK_RE.match(line)
    if match:
        run["ranks"].append({
            "rank": int(match.group(1)),
            "group": int(match.group(2)) if match.group(2) is not None else None,
            "pid": int(match.group(3)),
            "host": match.group(4),
            "device": int(match.group(5)),
            "bus_id": match.group(6),
            "name": match.group(7),
        })
        return
    match = _AVG_RE.match(line)
    if match:
        run["avg_busbw"] = to_number(match.group(1))
        return
    match = _OOB_RE.match(line)
    if match:
        run["out_of_bounds"] = {"count": int(match.group(1)), "ok": (match.group(2) or "").upper() == "OK"}


def _parse_row(tokens: List[str], columns: List[str]) -> Optional[Dict[str, Any]]:
    if len(tokens) != len(columns) or not tokens[0].isdigit():
        return None
    first_time = columns.index("time")
    lead = dict(zip(columns[:first_time], tokens[:first_time]))
    groups = _split_groups(columns[first_time:], tokens[first_time:])
    if len(groups) != 2:
        return None
    return {
        "size": int(lead["size"]),
        "count": to_number(lead.get("count")),
        "type": lead.get("type"),
        "redop": lead.get("redop"),
        "root": to_number(lead["root"]) if "root" in lead else None,
        "out_of_place": groups[0],
        "in_place": groups[1],
    }


def _split_groups(columns: List[str], tokens: List[str]) -> List[Dict[str, Any]]:
    groups: List[Dict[str, Any]] = []
    for name, token in zip(columns, tokens):
        if name == "time":
            groups.append({"time_us": None, "algbw": None, "busbw": None, "wrong": None, "error": None})
        key = {"time": "time_us", "#wrong": "wrong", "error": "error"}.get(name, name)
        if key in groups[-1]:
            groups[-1][key] = to_number(token)
    return groups
