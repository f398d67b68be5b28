"""RDMA monitor against a fake sysfs tree whose counters a thread advances at known rates."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sccnlp import cli
from sccnlp.monitor import rdma
from sccnlp.node import rdma_reader as reader

COUNTERS = reader.COUNTERS


def make_port(root: Path, device: str, port: str, values: dict[str, int] | None = None) -> Path:
    counters = root / device / "ports" / port / "counters"
    counters.mkdir(parents=True)
    for name in COUNTERS:
        (counters / name).write_text(f"{(values or {}).get(name, 0)}\n")
    return counters


class Traffic:
    """A port whose counters advance like hardware would (value = start + rate * elapsed) on a clock the test owns.

    The monitor's `time` is replaced by this object: its sleep moves the clock and rewrites the counters, so the rates
    the monitor computes depend on its own arithmetic only, not on how a loaded machine schedules threads.
    """

    def __init__(self, counters: Path, per_second: dict[str, float], start: dict[str, int] | None = None):
        self.counters, self.per_second, self.start_values = counters, per_second, start or {}
        self.now = 1000.0
        self.t0 = self.now
        self.write()

    def write(self) -> None:
        for name, rate in self.per_second.items():
            value = self.start_values.get(name, 0) + int(rate * (self.now - self.t0))
            (self.counters / name).write_text(f"{value}\n")

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.write()


@pytest.mark.parametrize(("previous", "current", "expected"), [
    (100, 250, (150, None)),
    (2**32 - 10, 5, (15, "wrapped")),
    (2**64 - 100, 50, (150, "wrapped")),
    (5_000_000, 1_000, (1_000, "reset")),
    (2**32 - 1, 2**32 - 1, (0, "saturated")),
    (None, 5, (None, "unreadable")),
])
def test_counter_delta(previous, current, expected):
    assert rdma.counter_delta(previous, current) == expected


def test_rates_match_the_traffic(tmp_path, monkeypatch):
    counters = make_port(tmp_path, "mlx5_0", "1")
    make_port(tmp_path, "mlx5_1", "1")  # idle port: zero rates
    # 10 Gbit/s out = 312.5e6 words/s; 2.5 Gbit/s in; 1e6 packets/s out, 250k packets/s in
    traffic = Traffic(counters, {"port_xmit_data": 312.5e6, "port_rcv_data": 78.125e6,
                                 "port_xmit_packets": 1e6, "port_rcv_packets": 2.5e5})
    monkeypatch.setattr(rdma, "time", traffic)
    monkeypatch.setattr(reader, "time", traffic)
    out = io.StringIO()
    assert rdma.monitor(root=str(tmp_path), interval=0.25, count=3, as_json=True, stream=out) == 0
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    busy = [r for r in rows if r["device"] == "mlx5_0"]
    idle = [r for r in rows if r["device"] == "mlx5_1"]
    assert len(busy) == 3 and len(idle) == 3
    for row in busy:
        assert row["port"] == "1" and row["host"] == "localhost"
        assert row["tx_gbps"] == pytest.approx(10.0, rel=1e-6)
        assert row["rx_gbps"] == pytest.approx(2.5, rel=1e-6)
        assert row["tx_pps"] == pytest.approx(1e6, rel=1e-6)
        assert row["rx_pps"] == pytest.approx(2.5e5, rel=1e-6)
        assert row["notes"] == []
    assert all(r["tx_gbps"] == 0 and r["rx_pps"] == 0 for r in idle)


def test_wrap_and_reset_are_flagged(tmp_path):
    counters = make_port(tmp_path, "mlx5_0", "1", {"port_xmit_data": 2**32 - 1000, "port_rcv_data": 9_000_000})
    samples = rdma.local_samples(str(tmp_path), 0.01, 2)
    before = next(samples)
    (counters / "port_xmit_data").write_text("3000\n")  # wrapped past 2^32: 4000 words
    (counters / "port_rcv_data").write_text("10\n")  # reset (perfquery -r): 10 words since
    after = next(samples)
    after["t"] = before["t"] + 1.0
    (rate,) = rdma.compute_rates("n1", before, after)
    assert rate.tx_gbps == pytest.approx(4000 * 4 * 8 / 1e9)
    assert rate.rx_gbps == pytest.approx(10 * 4 * 8 / 1e9)
    assert rate.notes == ["port_xmit_data wrapped", "port_rcv_data reset"]


def test_no_devices_is_one_clear_error(tmp_path, capsys):
    assert cli.main(["monitor", "rdma", "--sysfs-root", str(tmp_path), "--count", "1"]) == rdma.NO_DEVICES_EXIT
    err = capsys.readouterr().err
    assert f"no RDMA devices under {tmp_path}" in err and "Traceback" not in err


def test_bad_interval_is_refused(tmp_path, capsys):
    make_port(tmp_path, "mlx5_0", "1")
    assert cli.main(["monitor", "rdma", "--sysfs-root", str(tmp_path), "--interval", "0"]) == 2
    assert "--interval must be > 0" in capsys.readouterr().err


def test_cli_table_output(tmp_path, capsys):
    make_port(tmp_path, "mlx5_bond_0", "1", {"port_xmit_data": 7})
    assert cli.main(["monitor", "rdma", "--sysfs-root", str(tmp_path), "--count", "1", "--interval", "0.05"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("RDMA traffic at ")
    assert out[1].split()[:5] == ["HOST", "DEVICE", "PORT", "TX", "Gbit/s"]
    assert out[2].split()[1:5] == ["mlx5_bond_0", "1", "0.000", "0.000"]


def test_reader_runs_standalone_like_over_ssh(tmp_path):
    make_port(tmp_path, "mlx5_0", "1", {"port_rcv_packets": 42})
    source = Path(reader.__file__).read_text()
    proc = subprocess.run([sys.executable, "-", str(tmp_path), "0.05", "2"], input=source, capture_output=True,
                          text=True, timeout=30, check=True)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["seq"] for line in lines] == [0, 1]
    assert lines[1]["ports"]["mlx5_0/1"]["port_rcv_packets"] == 42
    empty = subprocess.run([sys.executable, "-", str(tmp_path / "none"), "1", "1"], input=source,
                           capture_output=True, text=True, timeout=30, check=False)
    assert empty.returncode == reader.NO_DEVICES_EXIT
    assert json.loads(empty.stdout) == {"error": f"no RDMA devices under {tmp_path / 'none'}"}


def test_ssh_command_keeps_host_key_checking():
    cmd = rdma.SshTarget(name="n1", address="10.0.0.5", user="root", port=2222).command("/sys/class/infiniband", 1.0, 3)
    assert cmd[:3] == ["ssh", "-o", "BatchMode=yes"]
    assert "StrictHostKeyChecking" not in " ".join(cmd)
    assert cmd[3:6] == ["-p", "2222", "root@10.0.0.5"]
    assert cmd[-1] == "python3 - /sys/class/infiniband 1 3"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_live_table_redraws_in_place_on_a_terminal():
    screen = Terminal()
    printer = rdma.Printer(screen, as_json=False)
    rate = rdma.PortRate(host="n1", device="mlx5_0", port="1", interval_s=1.0, tx_gbps=1.5, rx_gbps=0.25,
                         tx_pps=1000.0, rx_pps=10.0)
    printer.emit([rate])
    assert "\x1b[" not in screen.getvalue()
    printer.emit([rate])
    # second round: cursor up over the 3 lines just printed (title, header, one port), clear, redraw
    assert screen.getvalue().count("\x1b[3F\x1b[J") == 1
    assert screen.getvalue().rstrip().splitlines()[-1].split() == ["n1", "mlx5_0", "1", "1.500", "0.250", "1,000", "10"]
