"""Parse perftest output (ib_{write,read,send}_bw, ib_{write,read,send}_lat) into rows plus a summary."""

import re
from typing import Any, Dict, List, Optional

from ._common import to_number

_TITLE_RE = re.compile(r"^\s*([A-Za-z_ ]+?(?:BW|Latency) Test)\s*$")
_FIELD_RE = re.compile(r"([A-Za-z][A-Za-z* .]*?)\s*:\s*(\S+)")
_BW_HEADER_RE = re.compile(r"#bytes\s+.*BW average\[([^\]]+)\]")
_LAT_HEADER_RE = re.compile(r"#bytes\s+#iterations\s+t_min")
_ROW_RE = re.compile(r"^\s*\d+\s+\d+(\s+[\d.]+)+\s*$")

# perftest prints MB/sec with 1 MB = 2^20 bytes (newer versions say MiB/sec); --report_gbits prints 10^9 bit/s.
_TO_GBITS = {
    "Gb/sec": 1.0,
    "Gbps": 1.0,
    "MB/sec": 8 * 1048576 / 1e9,
    "MiB/sec": 8 * 1048576 / 1e9,
}
_LAT_COLUMNS = ("bytes", "iterations", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p99_9")
_SETTINGS = {
    "Device": "device",
    "Link type": "link_type",
    "Transport type": "transport_type",
    "Connection type": "connection_type",
    "Number of qps": "qps",
    "GID index": "gid_index",
    "Mtu": "mtu",
}


def parse_perftest(text: str) -> Dict[str, Any]:
    """Return {test, kind ('bw'|'lat'), device, link_type, ..., unit, rows: [...], summary: {...}}.

    Bandwidth rows: {bytes, iterations, bw_peak, bw_avg, msg_rate_mpps, bw_avg_gbps}. Latency rows: {bytes,
    iterations, t_min, t_max, t_typical, t_avg, t_stdev, p99, p99_9} in microseconds (missing columns are None,
    as older perftest prints only t_min/t_max/t_typical).
    """
    result: Dict[str, Any] = {"test": None, "kind": None, "unit": None, "rows": []}
    rows: List[Dict[str, Any]] = result["rows"]
    factor: Optional[float] = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or set(line) <= {"-", "*"}:
            continue
        match = _TITLE_RE.match(line)
        if match and result["test"] is None:
            result["test"] = " ".join(match.group(1).split())
            continue
        match = _BW_HEADER_RE.search(line)
        if match:
            result["kind"] = "bw"
            result["unit"] = match.group(1)
            factor = _TO_GBITS.get(match.group(1))
            continue
        if _LAT_HEADER_RE.search(line):
            result["kind"] = "lat"
            result["unit"] = "usec"
            continue
        if result["kind"] and _ROW_RE.match(line):
            values = [to_number(v) for v in line.split()]
            rows.append(_bw_row(values, factor) if result["kind"] == "bw" else _lat_row(values))
            continue
        if ":" in line and not result["kind"]:
            for key, value in _FIELD_RE.findall(line):
                name = _SETTINGS.get(key.strip())
                if name and name not in result:
                    result[name] = _setting(name, value)
    result["summary"] = _summary(result["kind"], rows)
    return result


def _setting(name: str, value: str) -> Any:
    if name in ("qps", "gid_index"):
        return to_number(value)
    if name == "mtu":
        return to_number(value.split("[")[0])
    return value


def _bw_row(values: List[Any], factor: Optional[float]) -> Dict[str, Any]:
    padded = values + [None] * (5 - len(values))
    row = {
        "bytes": padded[0],
        "iterations": padded[1],
        "bw_peak": padded[2],
        "bw_avg": padded[3],
        "msg_rate_mpps": padded[4],
    }
    row["bw_avg_gbps"] = round(row["bw_avg"] * factor, 4) if factor and row["bw_avg"] is not None else None
    return row


def _lat_row(values: List[Any]) -> Dict[str, Any]:
    padded = values + [None] * (len(_LAT_COLUMNS) - len(values))
    return dict(zip(_LAT_COLUMNS, padded))


def _summary(kind: Optional[str], rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    if kind == "bw":
        best = [r["bw_avg_gbps"] for r in rows if r.get("bw_avg_gbps") is not None]
        return {"rows": len(rows), "max_bw_avg_gbps": max(best) if best else None}
    if kind == "lat":
        typical = [r["t_typical"] for r in rows if r.get("t_typical") is not None]
        return {"rows": len(rows), "min_t_typical_usec": min(typical) if typical else None}
    return {"rows": 0}
