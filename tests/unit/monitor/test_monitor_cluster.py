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


def test_inventory_ssh_settings_reach_the_ssh_command(tmp_path):
    """The test bed's inventory shape (group vars: user, key, private known_hosts) through a real ansible-inventory:
    ssh gets what Ansible's ssh connection would (the node failed with `Host key verification failed` before)."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  children:\n    scc_cluster:\n      hosts:\n        node1:\n          ansible_host: 10.85.0.11\n"
        "        node2:\n          ansible_host: 10.85.0.12\n          ansible_port: 2222\n"
        "          ansible_python_interpreter: /usr/bin/python3.11\n"
        "      vars:\n        ansible_user: root\n        ansible_ssh_private_key_file: ~/tb/id_ed25519\n"
        "        ansible_ssh_common_args: -o UserKnownHostsFile=/tmp/tb/known_hosts -o StrictHostKeyChecking=yes\n"
        "        ansible_ssh_extra_args: -o 'ProxyJump=jump user@bastion'\n")
    node1, node2 = rdma.hosts_from_inventory(str(inventory))
    key = str(Path("~/tb/id_ed25519").expanduser())
    common = ["-o", "UserKnownHostsFile=/tmp/tb/known_hosts", "-o", "StrictHostKeyChecking=yes",
              "-o", "ProxyJump=jump user@bastion"]
    assert node1.ssh() == ["ssh", "-o", "BatchMode=yes", "-i", key, *common, "root@10.85.0.11"]
    assert node2.ssh() == ["ssh", "-o", "BatchMode=yes", "-p", "2222", "-i", key, *common, "root@10.85.0.12"]
    assert node2.command("/sys/class/infiniband", 1.0, 3)[-1] == "/usr/bin/python3.11 - /sys/class/infiniband 1 3"
    assert node1.check_hint().endswith("root@10.85.0.11 'python3 -V'")


@pytest.mark.parametrize(("hostvars", "message"), [
    ({"ansible_host": "{{ lookup('env', 'NODE1') }}"},
     "node1: ansible_host is a template (\"{{ lookup('env', 'NODE1') }}\"), which the monitor does not evaluate: "
     "set a plain value in the inventory, or use --hosts"),
    ({"ansible_connection": "community.docker.docker"},
     "node1: ansible_connection=community.docker.docker is not supported by the monitor (it runs its reader over "
     "ssh): use a host reachable by ssh, or --hosts"),
    ({"ansible_password": "x"},
     "node1: ansible_password is set, but the monitor's ssh runs with BatchMode=yes (no password prompt): give the "
     "node a key (ansible_ssh_private_key_file) or use an ssh agent"),
    ({"ansible_port": "twenty-two"}, "node1: ansible_port 'twenty-two' is not a number: set ansible_port: 22"),
    ({"ansible_ssh_common_args": "-o 'UserKnownHostsFile=/x"},
     "node1: ansible_ssh_common_args \"-o 'UserKnownHostsFile=/x\" does not split into ssh arguments (No closing "
     "quotation): fix its quoting"),
])
def test_settings_the_monitor_cannot_honour_are_refused(hostvars, message):
    with pytest.raises(SccError) as err:
        rdma.target_from_hostvars("node1", hostvars)
    assert str(err.value) == message


def test_local_connection_runs_the_reader_here(tmp_path):
    sysfs = tmp_path / "sys"
    make_port(sysfs, "mlx5_0", 7)
    target = rdma.target_from_hostvars("ctl", {"ansible_connection": "local",
                                               "ansible_python_interpreter": sys.executable})
    assert target.command(str(sysfs), 0.1, 2) == [sys.executable, "-", str(sysfs), "0.1", "2"]
    out = io.StringIO()
    assert rdma.monitor(root=str(sysfs), interval=0.1, count=1, as_json=True, targets=[target], stream=out) == 0
    assert [json.loads(line)["host"] for line in out.getvalue().splitlines()] == ["ctl"]


def test_yaml_error_in_the_inventory_is_one_line(tmp_path, capsys):
    from sccnlp import cli

    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    node1: {ansible_host: [10.0.0.1\n")
    assert cli.main(["monitor", "rdma", "--inventory", str(inventory), "--count", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sccnlp: error: inventory {inventory}, line 4, column 1: YAML error: expected ',' or ']'")
    assert len(err.splitlines()) == 1
