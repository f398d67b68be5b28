"""The ib_check role's decisions (plugins/plugin_utils/ib_check.py) on the recorded ConnectX-6 RoCE tree read by the
role's own sysfs reader, and on the recorded ibv_devinfo -v: port checks, firmware, NCCL settings, agreement."""

from __future__ import annotations

import copy
from typing import Any

from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo
from ansible_collections.scc.nlp_training.plugins.plugin_utils import ib_check

from .conftest import FIXTURES, RDMA_TREE

SETTINGS = {"ib_hca": "", "ib_gid_index": "", "ib_tc": "106", "ib_timeout": 22, "socket_ifname": "", "extra": {}}


def _devices(rdma_sysfs: Any) -> list[dict[str, Any]]:
    return rdma_sysfs.read_tree(str(RDMA_TREE))[1]


def test_the_recorded_port_passes(rdma_sysfs: Any) -> None:
    devices = _devices(rdma_sysfs)
    assert ib_check.port_problems("n1", devices, 25, "") == []
    assert ib_check.port_problems("n1", devices, 25, "Ethernet") == []


def test_slow_wrong_layer_and_down(rdma_sysfs: Any) -> None:
    devices = _devices(rdma_sysfs)
    port = devices[0]["ports"][0]
    desc = f"mlx5_0 port 1: ACTIVE (LinkUp), {port['rate']}, Ethernet"
    assert ib_check.port_problems("n1", devices, 200, "InfiniBand") == [
        f"n1: RDMA port below ib_check_min_rate_gbps 200 Gb/s: {desc}. Check the link negotiation (ibstat Rate, "
        "ethtool) or lower ib_check_min_rate_gbps.",
        f"n1: RDMA port with the wrong link layer (ib_check_link_layer is InfiniBand): {desc}. Set the port type "
        "(mlxconfig LINK_TYPE_P1) or change ib_check_link_layer."]
    down = copy.deepcopy(devices)
    down[0]["ports"][0].update(state="DOWN", phys_state="Disabled")
    assert ib_check.port_problems("n1", down, 25, "") == [
        f"n1: RDMA port not ACTIVE: mlx5_0 port 1: DOWN (Disabled), {port['rate']}, Ethernet. Check the cable/switch "
        "port (ibstat, `rdma link show`), or disable the port so NCCL does not pick it."]


def test_firmware_across_nodes(rdma_sysfs: Any) -> None:
    devices = _devices(rdma_sysfs)
    assert ib_check.firmware_problems({"n1": devices, "n2": devices, "n3": []}) == []
    other = copy.deepcopy(devices)
    other[0]["fw_ver"] = "20.31.1014"
    assert ib_check.firmware_problems({"n1": devices, "n2": other}) == [
        "NIC firmware differs across nodes: n1 mlx5_0 20.24.4702;n2 mlx5_0 20.31.1014;. Set ib_check_firmware_update: "
        "true with ib_check_firmware_version and a pinned package or URL + sha256, or update by hand; "
        "ib_check_same_firmware: false accepts the mix."]


def test_nccl_settings_on_roce(rdma_sysfs: Any) -> None:
    devices = _devices(rdma_sysfs)
    assert ib_check.nccl_settings(True, devices, SETTINGS, "eth0") == {
        "NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "mlx5_0:1", "NCCL_IB_TIMEOUT": "22", "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "106", "NCCL_SOCKET_IFNAME": "eth0"}
    chosen = ib_check.nccl_settings(True, devices, {**SETTINGS, "ib_gid_index": 0, "ib_tc": "", "ib_hca": "mlx5_1",
                                                    "socket_ifname": "bond0", "extra": {"NCCL_DEBUG": "WARN"}}, "eth0")
    assert chosen == {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "mlx5_1", "NCCL_IB_TIMEOUT": "22",
                      "NCCL_IB_GID_INDEX": "0", "NCCL_SOCKET_IFNAME": "bond0", "NCCL_DEBUG": "WARN"}


def test_nccl_settings_without_rdma() -> None:
    settings = ib_check.nccl_settings(False, [], SETTINGS, "eth0\n")
    assert settings == {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eth0"}


def test_devinfo_agreement(rdma_sysfs: Any) -> None:
    devices = _devices(rdma_sysfs)
    tool = parse_ibv_devinfo((FIXTURES / "tool_outputs/ibv_devinfo/mlx5_cx6_roce_v2_gid_types.txt").read_text())
    assert ib_check.devinfo_disagreements(devices, tool) == []
    down = copy.deepcopy(tool)
    down["mlx5_0"]["ports"][0]["state"] = "PORT_DOWN"
    assert ib_check.devinfo_disagreements(devices, down) == ["mlx5_0:1"]
    assert ib_check.devinfo_disagreements(devices, {}) == []
