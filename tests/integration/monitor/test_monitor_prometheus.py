"""`sccnlp monitor rdma --prometheus` against a real Prometheus on loopback, scraping two real node_exporters
(Debian's binaries, the versions the monitoring role installs) whose --path.sysfs is the recorded ConnectX-6 tree of
tests/fixtures/rdma_sysfs with counters a thread advances at known rates: the rates shown are PromQL rate() of what
node_exporter read, live and over a past window, in the table and as JSON (one code path), by node name."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "rdma_sysfs" / "cx6_roce" / "sys"
# node1's port: words and packets per second (port_xmit_data counts 4-byte words).
TRAFFIC = {"port_xmit_data": 25_000_000, "port_rcv_data": 12_500_000, "port_xmit_packets": 1000,
           "port_rcv_packets": 500}
SCRAPE_S = 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _counters(sysfs: Path) -> Path:
    return sysfs / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "counters"


class Traffic(threading.Thread):
    """Advance node1's counters like hardware: value = rate * elapsed, files replaced atomically."""

    def __init__(self, counters: Path) -> None:
        super().__init__(daemon=True)
        self.counters, self.stop_event = counters, threading.Event()

    def run(self) -> None:
        t0 = time.monotonic()
        while not self.stop_event.is_set():
            for name, rate in TRAFFIC.items():
                tmp = self.counters / f".{name}.tmp"
                tmp.write_text(f"{int(rate * (time.monotonic() - t0))}\n")
                os.replace(tmp, self.counters / name)
            time.sleep(0.01)


@dataclass
class Loopback:
    url: str


def _wait(what: str, probe: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory, prometheus_tool: Callable[[str], str]) -> Iterator[Loopback]:
    work = tmp_path_factory.mktemp("prometheus")
    procs: list[subprocess.Popen[bytes]] = []
    targets = []
    traffic = None
    try:
        for node in ("node1", "node2"):
            sysfs = work / node / "sys"
            shutil.copytree(FIXTURE, sysfs)
            for name in TRAFFIC:
                (_counters(sysfs) / name).write_text("0\n")
            if node == "node2":  # an idle port that lost its link
                (sysfs / "class/infiniband/mlx5_0/ports/1/state").write_text("1: DOWN\n")
            else:
                traffic = Traffic(_counters(sysfs))
                traffic.start()
            port = _free_port()
            procs.append(subprocess.Popen(
                [prometheus_tool("prometheus-node-exporter"), f"--web.listen-address=127.0.0.1:{port}",
                 f"--path.sysfs={sysfs}", "--collector.disable-defaults", "--collector.infiniband"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            targets.append({"targets": [f"127.0.0.1:{port}"], "labels": {"instance": node}})
        (work / "targets.json").write_text(json.dumps(targets))
        (work / "prometheus.yml").write_text(
            f"global: {{scrape_interval: {SCRAPE_S}s, evaluation_interval: {SCRAPE_S}s}}\n"
            f"scrape_configs:\n  - job_name: scc_node\n    file_sd_configs: [{{files: ['{work}/targets.json']}}]\n")
        web = _free_port()
        procs.append(subprocess.Popen(
            [prometheus_tool("prometheus"), f"--config.file={work}/prometheus.yml", f"--storage.tsdb.path={work}/data",
             f"--web.listen-address=127.0.0.1:{web}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        url = f"http://127.0.0.1:{web}"

        def scraped() -> bool:
            try:
                answer = _get(f"{url}/api/v1/query?query=count_over_time(up%5B30s%5D)")
            except OSError:
                return False
            counts = [float(r["value"][1]) for r in answer["data"]["result"]]
            return len(counts) == 2 and min(counts) >= 6

        _wait("six scrapes of both node_exporters", scraped, 60)
        yield Loopback(url)
    finally:
        if traffic is not None:
            traffic.stop_event.set()
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def _monitor(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SCCNLP_PROMETHEUS_URL"}
    return subprocess.run([sys.executable, "-m", "sccnlp.cli", "monitor", "rdma", *args], capture_output=True,
                          text=True, timeout=120, env=env, check=False)


def _rows(done: subprocess.CompletedProcess[str]) -> list[dict]:
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_live_rates_are_promql_rates_of_the_counters(loopback: Loopback) -> None:
    rows = _rows(_monitor("--prometheus", loopback.url, "--window", "4s", "--count", "1", "--json"))
    by_host = {row["host"]: row for row in rows}
    assert sorted(by_host) == ["node1", "node2"]
    busy = by_host["node1"]
    assert (busy["device"], busy["port"], busy["interval_s"], busy["notes"]) == ("mlx5_0", "1", 4.0, [])
    # 25e6 words/s * 4 bytes * 8 bits = 0.8 Gbit/s; rate() of 1 s scrapes, within 15 %.
    assert busy["tx_gbps"] == pytest.approx(0.8, rel=0.15)
    assert busy["rx_gbps"] == pytest.approx(0.4, rel=0.15)
    assert busy["tx_pps"] == pytest.approx(1000, rel=0.15)
    assert busy["rx_pps"] == pytest.approx(500, rel=0.15)
    idle = by_host["node2"]
    assert (idle["tx_gbps"], idle["rx_pps"], idle["notes"]) == (0.0, 0.0, ["state 1, not ACTIVE"])


def test_the_table_shows_the_same_rows(loopback: Loopback) -> None:
    done = _monitor("--prometheus", loopback.url, "--window", "4s", "--count", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("RDMA traffic at ") and lines[1].split()[:3] == ["HOST", "DEVICE", "PORT"]
    assert [line.split()[:3] for line in lines[2:]] == [["node1", "mlx5_0", "1"], ["node2", "mlx5_0", "1"]]
    assert "not ACTIVE" in lines[3] and 0.6 < float(lines[2].split()[3]) < 1.0


def test_hosts_pick_the_nodes_by_inventory_name(loopback: Loopback) -> None:
    rows = _rows(_monitor("--prometheus", loopback.url, "--window", "4s", "--count", "1", "--json", "--hosts",
                          "node2"))
    assert [row["host"] for row in rows] == ["node2"]


def test_history_gives_one_round_per_step(loopback: Loopback) -> None:
    # Every window of the history (the last 6 s, windows of 4 s) after Prometheus's first scrape of node1: a window
    # that begins before it gives rate() too little to extrapolate from (seen in CI: 0.30, 0.56, 0.80).
    def history() -> bool:
        answer = _get(f"{loopback.url}/api/v1/query?query=count_over_time(up%7Binstance%3D%22node1%22%7D%5B60s%5D)")
        return any(float(r["value"][1]) >= 14 / SCRAPE_S for r in answer["data"]["result"])

    _wait("fourteen seconds of scrapes of node1", history, 60)
    rows = _rows(_monitor("--prometheus", loopback.url, "--window", "4s", "--since", "6s", "--step", "2s", "--json"))
    busy = [row for row in rows if row["host"] == "node1"]
    assert len({row["time"] for row in busy}) >= 3, rows
    assert all(row["tx_gbps"] == pytest.approx(0.8, rel=0.2) for row in busy), [(r["time"], r["tx_gbps"]) for r in busy]


def test_prometheus_refusing_the_query_is_one_line(loopback: Loopback) -> None:
    done = _monitor("--prometheus", loopback.url, "--count", "1", "--match", 'job="scc_node",,')
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"Prometheus at {loopback.url} refused" in done.stderr and "parse error" in done.stderr, done.stderr


def test_no_rdma_series_is_named(loopback: Loopback) -> None:
    done = _monitor("--prometheus", loopback.url, "--count", "1", "--match", 'job="other"')
    assert done.returncode == 2, done.stderr
    assert 'has no node_infiniband_* series for {job="other"}' in done.stderr


def test_unreachable_prometheus_is_one_line() -> None:
    done = _monitor("--prometheus", f"http://127.0.0.1:{_free_port()}", "--count", "1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "cannot reach Prometheus at http://127.0.0.1:" in done.stderr and "--prometheus" in done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--window", "5 minutes"], "--window '5 minutes' is not a duration"),
    (["--since", "0s"], "--since '0s' must be longer than 0 s"),
    (["--sysfs-root", "/tmp"], "--sysfs-root is for the ssh reader"),
    (["--hosts", "node1,no de"], "'no de' is not a host name"),
])
def test_bad_options_are_refused(args: list[str], message: str) -> None:
    done = _monitor("--prometheus", "http://127.0.0.1:9", "--count", "1", *args)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_history_without_prometheus_is_refused() -> None:
    done = _monitor("--since", "1h")
    assert done.returncode == 2 and "--since and --step read the history Prometheus keeps" in done.stderr
