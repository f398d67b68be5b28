"""The ib_check role's sysfs reader on the recorded-style tree, and its agreement with the recorded ibv_devinfo."""

from __future__ import annotations

import json
import subprocess
import sys

from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo

from .conftest import FIXTURES, RDMA_TREE, ROOT


def test_reads_the_cx6_tree(rdma_sysfs):
    class_dir, devices = rdma_sysfs.read_tree(str(RDMA_TREE))
    assert class_dir.endswith("sys/class/infiniband")
    assert [d["name"] for d in devices] == ["mlx5_0"]
    dev = devices[0]
    assert (dev["fw_ver"], dev["hca_type"]) == ("20.24.4702", "MT4123")
    port = dev["ports"][0]
    assert (port["state"], port["state_code"], port["phys_state"]) == ("ACTIVE", 4, "LinkUp")
    assert (port["rate_gbps"], port["link_layer"], port["netdev"]) == (100.0, "Ethernet", "ens1f0np0")
    assert [g["index"] for g in port["gids"]] == [0, 1, 2, 3]  # all-zero GIDs 4..7 are left out
    assert port["roce_v2_gid_index"] == 3  # the IPv4-mapped RoCE v2 GID, NCCL_IB_GID_INDEX


def test_tree_matches_the_recorded_ibv_devinfo(rdma_sysfs):
    """The double is consistent: sysfs and the fake ibv_devinfo describe the same port."""
    _dir, devices = rdma_sysfs.read_tree(str(RDMA_TREE))
    tool = parse_ibv_devinfo((FIXTURES / "tool_outputs/ibv_devinfo/mlx5_cx6_roce_v2_gid_types.txt").read_text())
    assert tool["mlx5_0"]["fw_ver"] == devices[0]["fw_ver"]
    port = tool["mlx5_0"]["ports"][0]
    assert port["state"] == "PORT_ACTIVE" and port["link_layer"] == "Ethernet"
    assert {g["index"]: g["type"] for g in port["gids"]}[3] == "RoCE v2"


def test_gid_preference(rdma_sysfs):
    pick = rdma_sysfs.pick_roce_v2_index
    v4 = "0000:0000:0000:0000:0000:ffff:c0a8:010b"
    ll = "fe80:0000:0000:0000:ba59:9fff:fe37:8268"
    glob = "fd00:0000:0000:0000:0000:0000:0000:0001"
    assert pick([{"index": 1, "gid": ll, "type": "RoCE v2"}, {"index": 3, "gid": v4, "type": "RoCE v2"}]) == 3
    assert pick([{"index": 1, "gid": ll, "type": "RoCE v2"}, {"index": 5, "gid": glob, "type": "RoCE v2"}]) == 5
    assert pick([{"index": 1, "gid": ll, "type": "RoCE v2"}]) == 1
    assert pick([{"index": 0, "gid": ll, "type": "IB/RoCE v1"}]) is None
    assert pick([]) is None


def test_down_port_and_unreadable_gid_types(rdma_sysfs, tmp_path):
    port = tmp_path / "sys/class/infiniband/mlx5_bond_0/ports/1"
    (port / "gids").mkdir(parents=True)
    (port / "state").write_text("1: DOWN\n")
    (port / "phys_state").write_text("3: Disabled\n")
    (port / "rate").write_text("40 Gb/sec (4X QDR)\n")
    (port / "link_layer").write_text("Ethernet\n")
    (port / "gids" / "0").write_text("fe80:0000:0000:0000:0000:0000:0000:0001\n")  # no gid_attrs: type None
    _dir, devices = rdma_sysfs.read_tree(str(tmp_path))
    got = devices[0]["ports"][0]
    assert (got["state"], got["phys_state"], got["rate_gbps"]) == ("DOWN", "Disabled", 40.0)
    assert got["gids"][0]["type"] is None and got["roce_v2_gid_index"] is None


def test_script_prints_json_without_rdma(tmp_path):
    script = ROOT / "roles/ib_check/files/rdma_sysfs.py"
    out = subprocess.run([sys.executable, str(script), str(tmp_path), "ibv_devinfo"], check=True,
                         capture_output=True, text=True).stdout
    data = json.loads(out)
    assert data["present"] is False and data["devices"] == []
    assert set(data["tools"]) == {"ibv_devinfo"}


def test_fake_tools_print_the_recordings(tmp_path):
    """The fake ibv_devinfo/ib_write_bw of the double print the recorded outputs byte for byte."""
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    recorded = (FIXTURES / "tool_outputs/perftest/ib_write_bw_gbits_sweep_roce.txt").read_text()
    (outputs / "ib_write_bw.txt").write_text(recorded)
    env = {"SCC_RDMA_DOUBLE_DIR": str(tmp_path), "SCC_RDMA_DOUBLE_SERVER_WAIT": "0", "PATH": "/usr/bin:/bin"}
    fake = str(FIXTURES / "rdma_sysfs/bin/ib_write_bw")
    client = subprocess.run([fake, "-d", "mlx5_0", "--report_gbits", "10.0.0.2"], env=env, capture_output=True,
                            text=True, check=True)
    assert client.stdout == recorded
