"""RDMA traffic from Prometheus: per-port rates of node_exporter's infiniband counters by PromQL rate(), live or
over any past window (query_range). The rows are the ssh reader's (rdma.PortRate) and go through the same printer.

node_exporter multiplies port_xmit_data/port_rcv_data by 4, so its *_bytes_total counters are bytes; rate() handles
counter resets itself. A port whose state is not ACTIVE (node_infiniband_state_id != 4) carries a note.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any, Optional, TextIO

from sccnlp.errors import SccError
from sccnlp.monitor.rdma import PortRate, Printer

ENV_URL = "SCCNLP_PROMETHEUS_URL"
DEFAULT_SELECTOR = 'job="scc_node"'
# Row field -> PromQL, {sel} the label selector, {window} the rate window.
QUERIES = {
    "tx_gbps": "rate(node_infiniband_port_data_transmitted_bytes_total{{{sel}}}[{window}]) * 8 / 1e9",
    "rx_gbps": "rate(node_infiniband_port_data_received_bytes_total{{{sel}}}[{window}]) * 8 / 1e9",
    "tx_pps": "rate(node_infiniband_port_packets_transmitted_total{{{sel}}}[{window}])",
    "rx_pps": "rate(node_infiniband_port_packets_received_total{{{sel}}}[{window}])",
    "state": "node_infiniband_state_id{{{sel}}}",
}
_HOST = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
Key = tuple[str, str, str]  # instance, device, port
Series = dict[Key, dict[str, Optional[float]]]


def duration_seconds(text: str, flag: str) -> int:
    """'90s', '5m', '1h30m', '2d' -> seconds; SccError naming the flag otherwise."""
    match = _DURATION.match(text.strip())
    if not text.strip() or not match:
        raise SccError(f"{flag} {text!r} is not a duration: write it like 30s, 5m, 1h or 1h30m")
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if total <= 0:
        raise SccError(f"{flag} {text!r} must be longer than 0 s")
    return total


def selector(base: str, hosts: Sequence[str] = ()) -> str:
    """The label selector of every query: `base` (the node_exporter job), limited to `hosts` (instance labels)."""
    parts = [base] if base else []
    for host in hosts:
        if not _HOST.match(host):
            raise SccError(f"{host!r} is not a host name (letters, digits, '.', '_', '-'): name the nodes as the "
                           "inventory does")
    if hosts:
        # A regular expression inside a PromQL string literal: a literal dot is written \\. there.
        names = "|".join(host.replace(".", "\\\\.") for host in hosts)
        parts.append(f'instance=~"{names}"')
    return ",".join(parts)


class Client:
    """The HTTP API of one Prometheus server (GET /api/v1/query and /api/v1/query_range)."""

    def __init__(self, url: str, timeout: float = 15.0) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise SccError(f"--prometheus {url!r} is not an http(s) URL: give the server's address, e.g. "
                           "http://node1:9090")
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _get(self, path: str, params: dict[str, str]) -> Any:
        address = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(address, timeout=self.timeout) as answer:
                body = answer.read()
        except urllib.error.HTTPError as exc:
            body = exc.read()
            detail = _api_error(body) or f"HTTP {exc.code}"
            raise SccError(f"Prometheus at {self.url} refused {params.get('query', path)!r}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SccError(f"cannot reach Prometheus at {self.url} ({reason}): check the URL (--prometheus or "
                           f"{ENV_URL}) and that the server runs (playbooks/monitoring.yml)") from None
        try:
            data = json.loads(body)
        except ValueError:
            raise SccError(f"{self.url} did not answer like Prometheus (no JSON from {path}): check the URL") from None
        if not isinstance(data, dict) or data.get("status") != "success":
            raise SccError(f"Prometheus at {self.url}: {_api_error(body) or 'unexpected answer'}")
        return data["data"]

    def query(self, expr: str, at: Optional[float] = None) -> list[dict[str, Any]]:
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return list(self._get("/api/v1/query", params).get("result") or [])

    def query_range(self, expr: str, start: float, end: float, step: int) -> list[dict[str, Any]]:
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": str(step)}
        return list(self._get("/api/v1/query_range", params).get("result") or [])


def _api_error(body: bytes) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    return str(data.get("error") or "") if isinstance(data, dict) else ""


def _key(metric: dict[str, str]) -> Key:
    return (metric.get("instance", "?"), metric.get("device", "?"), metric.get("port", "?"))


def _number(text: Any) -> Optional[float]:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value  # NaN: no rate (a single sample in the window)


def rows(series: Series, interval_s: float) -> list[PortRate]:
    """PortRate rows from the merged query answers (field -> value per port), sorted by node, device, port."""
    out = []
    for key in sorted(series):
        fields = series[key]
        if all(fields.get(f) is None for f in ("tx_gbps", "rx_gbps", "tx_pps", "rx_pps")):
            continue
        state = fields.get("state")
        notes = [] if state in (None, 4.0) else [f"state {state:g}, not ACTIVE"]
        out.append(PortRate(host=key[0], device=key[1], port=key[2], interval_s=interval_s, notes=notes,
                            tx_gbps=fields.get("tx_gbps"), rx_gbps=fields.get("rx_gbps"),
                            tx_pps=fields.get("tx_pps"), rx_pps=fields.get("rx_pps")))
    return out


def instant(client: Client, sel: str, window: str, at: Optional[float] = None) -> Series:
    """Every field of every port at one time (now when at is None)."""
    series: Series = {}
    for field_name, template in QUERIES.items():
        for item in client.query(template.format(sel=sel, window=window), at):
            value = (item.get("value") or [0, None])[1]
            series.setdefault(_key(item.get("metric") or {}), {})[field_name] = _number(value)
    return series


def history(client: Client, sel: str, window: str, start: float, end: float, step: int) -> dict[float, Series]:
    """Every field of every port at each step of [start, end] (query_range), by timestamp."""
    by_time: dict[float, Series] = {}
    for field_name, template in QUERIES.items():
        for item in client.query_range(template.format(sel=sel, window=window), start, end, step):
            key = _key(item.get("metric") or {})
            for stamp, value in item.get("values") or []:
                by_time.setdefault(float(stamp), {}).setdefault(key, {})[field_name] = _number(value)
    return by_time


def monitor(url: str, window: str = "1m", interval: float = 15.0, count: int = 0, as_json: bool = False,
            hosts: Sequence[str] = (), since: str = "", step: str = "", base_selector: str = DEFAULT_SELECTOR,
            stream: Optional[TextIO] = None, clock: Any = time) -> int:
    """Print per-port rates from Prometheus: `count` live rounds every `interval` s (0: until interrupted), or with
    `since` one table per `step` over that past window."""
    window_s = duration_seconds(window, "--window")
    if interval <= 0:
        raise SccError(f"--interval must be > 0 seconds (got {interval:g})")
    if count < 0:
        raise SccError(f"--count must be >= 0 (0 = until Ctrl-C), got {count}")
    client = Client(url)
    sel = selector(base_selector, hosts)
    printer = Printer(stream or _stdout(), as_json)
    if since:
        span = duration_seconds(since, "--since")
        step_s = duration_seconds(step, "--step") if step else window_s
        end = float(clock.time())
        by_time = history(client, sel, window, end - span, end, step_s)
        if not by_time:
            raise SccError(_no_series(url, sel))
        for stamp in sorted(by_time):
            printer.emit(rows(by_time[stamp], float(window_s)), stamp=stamp)
        return 0
    for round_no in _rounds(count):
        if round_no:
            clock.sleep(interval)
        series = instant(client, sel, window)
        if not series:
            raise SccError(_no_series(url, sel))
        printer.emit(rows(series, float(window_s)))
    return 0


def _rounds(count: int) -> Iterator[int]:
    number = 0
    while count == 0 or number < count:
        yield number
        number += 1


def _no_series(url: str, sel: str) -> str:
    return (f"Prometheus at {url} has no node_infiniband_* series for {{{sel}}}: no RDMA port is scraped there "
            "(check that node_exporter runs on the nodes with its infiniband collector, and --match if your job is "
            "not scc_node)")


def _stdout() -> TextIO:
    import sys

    return sys.stdout
