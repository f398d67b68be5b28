"""Cluster mode: the reader is streamed to `python3 -` through an `ssh` on PATH, and hosts come from a real
`ansible-inventory` run. The ssh here is a stand-in that runs the remote command locally (the unit tests have no
second machine); it records its arguments so the test can check what would be sent to real ssh."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from sccnlp.errors import SccError
from sccnlp.monitor import rdma

FAKE_SSH = """#!/bin/sh
echo "$@" >> "{log}"
for arg; do last="$arg"; done
exec sh -c "$last"
"""


@pytest.fixture
def local_ssh(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "ssh.log"
    ssh = bindir / "ssh"
    ssh.write_text(FAKE_SSH.format(log=log))
    ssh.chmod(ssh.stat().st_mode | stat.S_IEXEC)
    (bindir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return log


def make_port(root: Path, device: str, value: int) -> None:
    counters = root / device / "ports" / "1" / "counters"
    counters.mkdir(parents=True)
    for name in ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets"):
        (counters / name).write_text(f"{value}\n")


def test_two_hosts_over_ssh(tmp_path, local_ssh):
    sysfs = tmp_path / "sys"
    make_port(sysfs, "mlx5_0", 100)
    targets = rdma.hosts_from_list("node-a, node-b")
    out = io.StringIO()
    assert rdma.monitor(root=str(sysfs), interval=0.1, count=2, as_json=True, targets=targets, stream=out) == 0
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sorted({r["host"] for r in rows}) == ["node-a", "node-b"]
    assert len(rows) == 4 and all(r["tx_gbps"] == 0.0 and r["device"] == "mlx5_0" for r in rows)
    calls = local_ssh.read_text().splitlines()
    assert len(calls) == 2 and all(c.startswith("-o BatchMode=yes node-") for c in calls)


def test_remote_node_without_devices(tmp_path, local_ssh):
    with pytest.raises(SccError) as err:
        rdma.monitor(root=str(tmp_path / "empty"), interval=0.1, count=1, targets=rdma.hosts_from_list("gpu7"),
                     stream=io.StringIO())
    assert err.value.exit_code == rdma.NO_DEVICES_EXIT
    assert str(err.value).startswith(f"no RDMA devices under {tmp_path / 'empty'} on gpu7: load the RDMA driver")


def test_hosts_from_a_real_inventory(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  children:\n    scc_cluster:\n      children:\n        gpu_nodes:\n          hosts:\n"
        "            gpu1:\n              ansible_host: 10.0.0.11\n              ansible_user: root\n"
        "            gpu2:\n              ansible_host: 10.0.0.12\n              ansible_port: 2222\n"
        "    other:\n      hosts:\n        bastion: {}\n")
    targets = rdma.hosts_from_inventory(str(inventory))
    assert [(t.name, t.address, t.user, t.port) for t in targets] == [
        ("gpu1", "10.0.0.11", "root", None), ("gpu2", "10.0.0.12", None, 2222)]
    with pytest.raises(SccError, match="has no hosts in group 'missing'"):
        rdma.hosts_from_inventory(str(inventory), group="missing")
    with pytest.raises(SccError, match="does not exist"):
        rdma.hosts_from_inventory(str(tmp_path / "nope.yml"))
