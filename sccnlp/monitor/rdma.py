"""RDMA traffic monitor: per-port transmit/receive rates from the sysfs counters, on this machine or over ssh (the
fallback for clusters without Prometheus; sccnlp.monitor.prometheus reads the same rates from Prometheus).

`port_xmit_data` / `port_rcv_data` count 4-byte words (multiplied by 4 here); `port_*_packets` count packets.
A counter that goes down between samples is either a wrap (of a 32- or 64-bit counter, when the old value was
near the top of that width and the new one small) or a reset (`perfquery -r`, driver reload): a wrap adds the
modulus, a reset counts from zero; both are flagged in the output.
"""

from __future__ import annotations

import json
import queue
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, TextIO

from sccnlp.errors import SccError
from sccnlp.inventory import group_hosts, inventory_json, plain
from sccnlp.node import rdma_reader

DEFAULT_ROOT = "/sys/class/infiniband"
NO_DEVICES_EXIT = rdma_reader.NO_DEVICES_EXIT
Sample = dict[str, Any]


@dataclass
class PortRate:
    host: str
    device: str
    port: str
    interval_s: float
    tx_gbps: Optional[float]
    rx_gbps: Optional[float]
    tx_pps: Optional[float]
    rx_pps: Optional[float]
    notes: list[str] = field(default_factory=list)


def counter_delta(previous: Optional[int], current: Optional[int]) -> tuple[Optional[int], Optional[str]]:
    """Increase of a monotonic counter between two readings, and a note: None, 'wrapped', 'reset', 'saturated'."""
    if previous is None or current is None:
        return None, "unreadable"
    if current >= previous:
        note = "saturated" if current == previous == 2**32 - 1 else None
        return current - previous, note
    for width in (32, 64):
        modulus = 2**width
        if previous < modulus and (modulus - previous) + current < modulus >> 4:
            return modulus - previous + current, "wrapped"
    return current, "reset"


def compute_rates(host: str, before: Sample, after: Sample) -> list[PortRate]:
    """Rates for every port present in both samples (a port that appears or vanishes is skipped)."""
    elapsed = float(after["t"]) - float(before["t"])
    rates: list[PortRate] = []
    if elapsed <= 0:
        return rates
    for key in sorted(after["ports"]):
        if key not in before["ports"]:
            continue
        device, _slash, port = key.partition("/")
        old, new = before["ports"][key], after["ports"][key]
        notes: list[str] = []
        values: dict[str, Optional[float]] = {}
        for name, out, scale in (("port_xmit_data", "tx_gbps", 4 * 8 / 1e9), ("port_rcv_data", "rx_gbps", 4 * 8 / 1e9),
                                 ("port_xmit_packets", "tx_pps", 1.0), ("port_rcv_packets", "rx_pps", 1.0)):
            delta, note = counter_delta(old.get(name), new.get(name))
            if note:
                notes.append(f"{name} {note}")
            values[out] = None if delta is None else delta * scale / elapsed
        rates.append(PortRate(host=host, device=device, port=port, interval_s=round(elapsed, 6), notes=notes,
                              **values))
    return rates


# ---------------------------------------------------------------------------------------------------- sources


def local_samples(root: str, interval: float, samples: int) -> Iterator[Sample]:
    """Samples of this machine's counters (samples <= 0: forever)."""
    ports = rdma_reader.list_ports(root)
    if not ports:
        raise SccError(no_devices_message(root, "this machine"), exit_code=NO_DEVICES_EXIT)
    seq = 0
    next_at = time.monotonic()
    while samples <= 0 or seq < samples:
        yield rdma_reader.read_sample(root, ports, seq)
        seq += 1
        next_at += interval
        delay = next_at - time.monotonic()
        if (samples <= 0 or seq < samples) and delay > 0:
            time.sleep(delay)


@dataclass
class SshTarget:
    """One node and how to reach it: plain ssh (your ssh config, host keys checked) plus what the inventory sets."""

    name: str
    address: str
    user: Optional[str] = None
    port: Optional[int] = None
    key_file: Optional[str] = None
    ssh_args: list[str] = field(default_factory=list)  # ansible_ssh_common_args + ansible_ssh_extra_args
    python: str = "python3"
    local: bool = False  # ansible_connection=local: the reader runs on this machine, without ssh

    def ssh(self) -> list[str]:
        """The ssh command line up to (and including) the destination; empty for a local target."""
        if self.local:
            return []
        cmd = ["ssh", "-o", "BatchMode=yes"]
        if self.port:
            cmd += ["-p", str(self.port)]
        if self.key_file:
            cmd += ["-i", self.key_file]
        cmd += self.ssh_args
        cmd.append(f"{self.user}@{self.address}" if self.user else self.address)
        return cmd

    def command(self, root: str, interval: float, samples: int) -> list[str]:
        reader_argv = [self.python, "-", root, f"{interval:g}", str(samples)]
        if self.local:
            return reader_argv
        return [*self.ssh(), " ".join(shlex.quote(part) for part in reader_argv)]

    def check_hint(self) -> str:
        """What to run by hand to see why the node does not answer."""
        return shlex.join([*self.ssh(), f"{self.python} -V"] if not self.local else [self.python, "-V"])


class RemoteReader:
    """Runs rdma_reader.py on one node over plain ssh (the user's config; host keys checked) and queues its samples."""

    def __init__(self, target: SshTarget, root: str, interval: float, samples: int) -> None:
        self.target = target
        self.root = root
        self.lines: queue.Queue[Optional[str]] = queue.Queue()
        self.proc = subprocess.Popen(target.command(root, interval, samples), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdin is not None
        self.proc.stdin.write(Path(rdma_reader.__file__).read_text())
        self.proc.stdin.close()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def next_sample(self, timeout: float) -> Sample:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty as exc:
            self.stop()
            raise SccError(f"{self.target.name}: no sample from the RDMA reader within {timeout:g}s: check that "
                           f"`{self.target.check_hint()}` answers") from exc
        if line is None:
            rc = self.proc.wait()
            err = (self.proc.stderr.read() if self.proc.stderr else "").strip().splitlines()
            raise SccError(f"{self.target.name}: ssh/reader stopped (exit {rc}): "
                           f"{err[-1] if err else 'no output'}; check `{self.target.check_hint()}`")
        data = json.loads(line)
        if "error" in data:
            raise SccError(no_devices_message(self.root, self.target.name), exit_code=NO_DEVICES_EXIT)
        return data

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def no_devices_message(root: str, where: str) -> str:
    return (f"no RDMA devices under {root} on {where}: load the RDMA driver (check `ibv_devices`), "
            "or point --sysfs-root at the right directory")


# ---------------------------------------------------------------------------------------------------- output


class Printer:
    """Live table (redrawn in place on a terminal, appended otherwise) or JSON lines."""

    def __init__(self, stream: TextIO, as_json: bool) -> None:
        self.stream = stream
        self.as_json = as_json
        self.live = not as_json and hasattr(stream, "isatty") and stream.isatty()
        self.last_lines = 0

    def emit(self, rates: list[PortRate], stamp: Optional[float] = None) -> None:
        """One round of rows: the ssh reader's (now) or Prometheus' (at `stamp`, Unix seconds, for history)."""
        when = datetime.now(timezone.utc) if stamp is None else datetime.fromtimestamp(stamp, timezone.utc)
        stamp_text = when.isoformat(timespec="seconds")
        if self.as_json:
            for rate in rates:
                print(json.dumps({"time": stamp_text, **asdict(rate)}), file=self.stream, flush=True)
            return
        lines = [f"RDMA traffic at {stamp_text}", format_table(rates)]
        text = "\n".join(lines)
        if self.live and self.last_lines:
            self.stream.write(f"\x1b[{self.last_lines}F\x1b[J")
        print(text, file=self.stream, flush=True)
        self.last_lines = text.count("\n") + 1


def format_table(rates: list[PortRate]) -> str:
    header = ("HOST", "DEVICE", "PORT", "TX Gbit/s", "RX Gbit/s", "TX pkt/s", "RX pkt/s", "NOTES")
    rows = [header] + [(r.host, r.device, r.port, _fmt(r.tx_gbps, 3), _fmt(r.rx_gbps, 3), _fmt(r.tx_pps, 0),
                        _fmt(r.rx_pps, 0), ", ".join(r.notes)) for r in rates]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    out = []
    for row in rows:
        cells = [row[i].ljust(widths[i]) if i in (0, 1, 2, 7) else row[i].rjust(widths[i]) for i in range(len(row))]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def _fmt(value: Optional[float], digits: int) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


# ---------------------------------------------------------------------------------------------------- driver


def monitor(root: str = DEFAULT_ROOT, interval: float = 1.0, count: int = 0, as_json: bool = False,
            targets: Optional[list[SshTarget]] = None, stream: Optional[TextIO] = None,
            host_label: str = "localhost") -> int:
    """Print `count` rounds of rates (0: until interrupted) for this machine, or for every ssh target."""
    if interval <= 0:
        raise SccError(f"--interval must be > 0 seconds (got {interval:g})")
    if count < 0:
        raise SccError(f"--count must be >= 0 (0 = until Ctrl-C), got {count}")
    printer = Printer(stream or sys.stdout, as_json)
    samples = count + 1 if count else 0
    if not targets:
        previous: Optional[Sample] = None
        for sample in local_samples(root, interval, samples):
            if previous is not None:
                printer.emit(compute_rates(host_label, previous, sample))
            previous = sample
        return 0
    readers = [RemoteReader(target, root, interval, samples) for target in targets]
    try:
        last: dict[str, Sample] = {}
        rounds = 0
        while count == 0 or rounds <= count:
            rates: list[PortRate] = []
            for item in readers:
                sample = item.next_sample(timeout=interval * 3 + 30)
                if item.target.name in last:
                    rates += compute_rates(item.target.name, last[item.target.name], sample)
                last[item.target.name] = sample
            if rounds:
                printer.emit(rates)
            rounds += 1
    finally:
        for item in readers:
            item.stop()
    return 0


def hosts_from_inventory(inventory: str, group: str = "scc_cluster") -> list[SshTarget]:
    """ssh targets of `group` (children included) from `ansible-inventory --list`, reached the way Ansible's ssh
    connection reaches them (see target_from_hostvars)."""
    if not Path(inventory).exists():
        raise SccError(f"inventory {inventory} does not exist: pass --inventory PATH or --hosts h1,h2")
    data = inventory_json(inventory)
    names = group_hosts(data, group)
    if not names:
        raise SccError(f"inventory {inventory} has no hosts in group {group!r}: add them, or use --hosts h1,h2")
    hostvars = data.get("_meta", {}).get("hostvars", {})
    return [target_from_hostvars(name, plain(hostvars.get(name, {}))) for name in sorted(names)]


# Ansible's connection variables and their older aliases, in Ansible's order of preference.
_SSH_VARS = {
    "address": ("ansible_host", "ansible_ssh_host"),
    "user": ("ansible_user", "ansible_ssh_user"),
    "port": ("ansible_port", "ansible_ssh_port"),
    "key_file": ("ansible_ssh_private_key_file", "ansible_private_key_file"),
    "common_args": ("ansible_ssh_common_args",),
    "extra_args": ("ansible_ssh_extra_args",),
    "python": ("ansible_python_interpreter",),
    "connection": ("ansible_connection",),
}


def target_from_hostvars(name: str, hostvars: dict[str, Any]) -> SshTarget:
    """The node as Ansible's ssh connection reaches it: ansible_host, ansible_user, ansible_port,
    ansible_ssh_private_key_file, ansible_ssh_common_args and ansible_ssh_extra_args (e.g. a private
    UserKnownHostsFile, a ProxyJump), ansible_python_interpreter. What the monitor cannot honour is refused."""
    def get(key: str) -> Optional[str]:
        for var in _SSH_VARS[key]:
            value = hostvars.get(var)
            if value is None or value == "":
                continue
            text = str(value)
            if "{{" in text or "{%" in text:
                raise SccError(f"{name}: {var} is a template ({text!r}), which the monitor does not evaluate: set "
                               "a plain value in the inventory, or use --hosts")
            return text
        return None

    connection = get("connection") or "ssh"
    if connection not in ("ssh", "smart", "local", "ansible.builtin.ssh", "ansible.builtin.local"):
        raise SccError(f"{name}: ansible_connection={connection} is not supported by the monitor (it runs its reader "
                       "over ssh): use a host reachable by ssh, or --hosts")
    for var in ("ansible_password", "ansible_ssh_pass", "ansible_ssh_password"):
        if hostvars.get(var):
            raise SccError(f"{name}: {var} is set, but the monitor's ssh runs with BatchMode=yes (no password "
                           "prompt): give the node a key (ansible_ssh_private_key_file) or use an ssh agent")
    port_text = get("port")
    try:
        port = int(port_text) if port_text else None
    except ValueError:
        raise SccError(f"{name}: ansible_port {port_text!r} is not a number: set ansible_port: 22") from None
    args: list[str] = []
    for key in ("common_args", "extra_args"):
        text = get(key)
        if text:
            try:
                args += shlex.split(text)
            except ValueError as exc:
                raise SccError(f"{name}: {_SSH_VARS[key][0]} {text!r} does not split into ssh arguments ({exc}): "
                               "fix its quoting") from None
    python = get("python") or "python3"
    if python.startswith("auto"):  # auto, auto_silent, auto_legacy: Ansible's discovery, not a path
        python = "python3"
    key_file = get("key_file")
    return SshTarget(name=name, address=get("address") or name, user=get("user"), port=port,
                     key_file=str(Path(key_file).expanduser()) if key_file else None, ssh_args=args, python=python,
                     local=connection.endswith("local"))


def hosts_from_list(spec: str) -> list[SshTarget]:
    names = [h.strip() for h in spec.split(",") if h.strip()]
    if not names:
        raise SccError("--hosts needs at least one host name, e.g. --hosts node1,node2")
    return [SshTarget(name=name, address=name) for name in names]
