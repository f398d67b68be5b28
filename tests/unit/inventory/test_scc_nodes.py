"""Instance -> host variables, names and groups (pure functions of plugins/module_utils/scc_nodes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from plugins.module_utils.scc_nodes import (
    NodeError,
    assign_names,
    default_groups,
    group_name,
    host_vars,
    merge_types,
    name_candidates,
)
from sccnlp.testbed.ecs_api import make_instance

TABLE_FILE = Path(__file__).resolve().parents[3] / "sccnlp" / "data" / "instance_types.yml"


@pytest.fixture(scope="module")
def table() -> dict:
    return merge_types(yaml.safe_load(TABLE_FILE.read_text())["instance_types"], None)


@pytest.mark.parametrize(("itype", "count", "arch", "rdma"), [
    ("ecs.sccgn6.24xlarge", 8, "volta", True),
    ("ecs.sccgn6e.24xlarge", 8, "volta", True),
    ("ecs.sccgn6ne.24xlarge", 8, "volta", True),
    ("ecs.ebmgn7v.32xlarge", 8, "ampere", True),
    ("ecs.ebmgn7vx.32xlarge", 8, "ampere", True),
    ("ecs.ebmgn8v.48xlarge", 8, "hopper", True),
    ("ecs.ebmgn8is.32xlarge", 8, "ada", True),
    ("ecs.ebmgn8i.32xlarge", 8, "hopper", True),
])
def test_table_covers_the_scc_families(table: dict, itype: str, count: int, arch: str, rdma: bool) -> None:
    hv = host_vars(make_instance(1, instance_type=itype), "cn-hangzhou", table)
    assert (hv["gpu_count"], hv["gpu_arch"], hv["rdma"], hv["mpi_slots"]) == (count, arch, rdma, count)
    assert hv["gpu_model"]


def test_sccgn6_host_vars(table: dict) -> None:
    inst = make_instance(7, zone="cn-hangzhou-h", private_ip="10.0.0.7", rdma_ip="192.168.0.7",
                         tags={"cluster": "bert"}, name="node7", hostname="iZnode7Z")
    hv = host_vars(inst, "cn-hangzhou", table)
    assert hv["ansible_host"] == "10.0.0.7"
    assert hv["rdma_ip"] == "192.168.0.7"
    assert hv["gpu_model"] == "Tesla V100-SXM2-16GB"
    assert hv["scc_instance_id"] == inst["InstanceId"]
    assert (hv["scc_instance_name"], hv["scc_hostname"]) == ("node7", "iZnode7Z")
    assert (hv["scc_zone"], hv["scc_region"], hv["scc_status"]) == ("cn-hangzhou-h", "cn-hangzhou", "Running")
    assert (hv["scc_vpc_id"], hv["scc_vswitch_id"]) == ("vpc-scc0001", "vsw-cn-hangzhou-h")
    assert hv["scc_tags"] == {"cluster": "bert"}
    assert default_groups(hv) == ["zone_cn_hangzhou_h", "type_ecs_sccgn6_24xlarge"]


def test_single_ip_has_no_rdma_ip(table: dict) -> None:
    hv = host_vars(make_instance(1, private_ip="10.0.0.1"), "cn-hangzhou", table)
    assert "rdma_ip" not in hv


def test_unknown_type_uses_the_api_gpu_fields(table: dict) -> None:
    inst = make_instance(1, instance_type="ecs.gn7i-c32g1.32xlarge")
    inst.update(GPUAmount=4, GPUSpec="NVIDIA A10")
    hv = host_vars(inst, "cn-hangzhou", table)
    assert (hv["gpu_count"], hv["gpu_model"], hv["gpu_arch"], hv["mpi_slots"]) == (4, "NVIDIA A10", "ampere", 4)
    assert hv["scc_instance_type_known"] is False


def test_cpu_node_gets_one_mpi_slot(table: dict) -> None:
    hv = host_vars(make_instance(1, instance_type="ecs.g7.large"), "cn-hangzhou", table)
    assert (hv["gpu_count"], hv["gpu_arch"], hv["mpi_slots"], hv["rdma"]) == (0, "none", 1, False)


def test_user_entries_merge_over_the_table(table: dict) -> None:
    merged = merge_types(table, {"ecs.sccgn6.24xlarge": {"rdma": False}, "ecs.x1": {"gpu_count": 2}})
    assert merged["ecs.sccgn6.24xlarge"]["rdma"] is False
    assert merged["ecs.sccgn6.24xlarge"]["gpu_count"] == 8  # untouched fields kept
    assert merged["ecs.x1"]["gpu_count"] == 2


@pytest.mark.parametrize(("entry", "message"), [
    ({"gpu_count": -1}, "instance_types.ecs.x.gpu_count must be a whole number >= 0"),
    ({"gpu_count": "8"}, "gpu_count must be a whole number"),
    ({"gpu_count": 8, "gpu_arch": "kepler2"}, "instance_types.ecs.x.gpu_arch must be one of"),
    ({"gpu_count": 8, "rdma": "yes"}, "instance_types.ecs.x.rdma must be true or false"),
])
def test_bad_user_entries_are_refused(entry: dict, message: str) -> None:
    with pytest.raises(NodeError, match=message.replace(".", r"\.")):
        merge_types({}, {"ecs.x": entry})


def test_hostname_preferences_fall_back() -> None:
    inst = make_instance(3, name="", hostname="", tags={"node": "gpu-3"})
    assert name_candidates(inst, ["hostname", "instance_name", "tag:node", "instance_id"]) == \
        ["gpu-3", inst["InstanceId"]]
    assert name_candidates(inst, ["private_ip"]) == ["10.0.0.3"]


def test_duplicate_names_take_the_next_preference() -> None:
    a = make_instance(1, name="same")
    b = make_instance(2, name="same")
    pairs = assign_names([a, b, a], ["instance_name", "instance_id"])
    assert [name for name, _unused in pairs] == ["same", b["InstanceId"]]  # the repeated `a` is listed once


def test_unknown_hostname_source_is_refused() -> None:
    with pytest.raises(NodeError, match="hostnames entry 'dns_name'"):
        name_candidates(make_instance(1), ["dns_name"])


def test_group_names_are_safe() -> None:
    assert group_name("type", "ecs.ebmgn8v.48xlarge") == "type_ecs_ebmgn8v_48xlarge"
