"""`sccnlp monitor rdma --inventory` on the test bed: the reader reaches every node the way Ansible does (the test
bed's own key and private known_hosts from ansible_ssh_private_key_file / ansible_ssh_common_args), through the real
sshd of each node. It failed with `Host key verification failed` when it ignored those settings.

The nodes have no RDMA device: each gets a counter tree under a scratch directory whose device is named after the
node (mlx5_<inventory name>), so each row proves whose sysfs it was read from. Needs a test bed
(SCCNLP_TESTBED_INVENTORY, set by `scripts/test.sh e2e`); only ssh and python3 on the nodes are used.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.testbed

SCRATCH = "/tmp/sccnlp-monitor-test-sysfs"
COUNTERS = ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets")


def _ansible(inventory: str, module: str, args: str) -> subprocess.CompletedProcess[str]:
    tool = str(Path(sys.executable).parent / "ansible")
    return subprocess.run([tool, "scc_cluster", "-i", inventory, "-m", module, "-a", args], capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def node_counters(testbed_inventory: str) -> Iterator[list[str]]:
    """A fake port on every node: <SCRATCH>/mlx5_<node>/ports/1/counters/* = 1000. Yields the node names."""
    counters = f"{SCRATCH}/mlx5_{{{{ inventory_hostname }}}}/ports/1/counters"
    script = f"rm -rf {SCRATCH} && mkdir -p {counters} && " + " && ".join(
        f"echo 1000 > {counters}/{name}" for name in COUNTERS)
    made = _ansible(testbed_inventory, "ansible.builtin.shell", script)
    assert made.returncode == 0, f"could not write the counter trees:\n{made.stdout[-3000:]}\n{made.stderr[-2000:]}"
    listed = subprocess.run([str(Path(sys.executable).parent / "ansible"), "scc_cluster", "-i", testbed_inventory,
                             "--list-hosts"], capture_output=True, text=True, timeout=120, check=True)
    nodes = sorted(line.strip() for line in listed.stdout.splitlines()[1:] if line.strip())
    assert len(nodes) >= 2, listed.stdout
    yield nodes
    _ansible(testbed_inventory, "ansible.builtin.file", f"path={SCRATCH} state=absent")


def test_monitor_reads_every_node_through_the_inventory_ssh_settings(testbed_inventory: str,
                                                                     node_counters: list[str]) -> None:
    assert not Path(SCRATCH).exists(), "the counters must exist on the nodes only, not on the controller"
    cmd = [sys.executable, "-m", "sccnlp.cli", "monitor", "rdma", "--inventory", testbed_inventory,
           "--sysfs-root", SCRATCH, "--interval", "0.5", "--count", "2", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"{shlex.join(cmd)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    # Two rounds of rates, one row per node per round; each node's row is its own device; static counters.
    assert sorted((r["host"], r["device"]) for r in rows) == sorted(
        (node, f"mlx5_{node}") for node in node_counters for _round in range(2))
    assert all((r["port"], r["tx_gbps"], r["rx_gbps"], r["tx_pps"], r["rx_pps"]) == ("1", 0.0, 0.0, 0.0, 0.0)
               for r in rows), rows
    assert "Host key verification failed" not in done.stderr
