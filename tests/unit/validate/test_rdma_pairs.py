"""RDMA pair verdicts of the ib_check role's pairs entry point (plugins/plugin_utils/rdma_pairs.py) on recorded
perftest output and the recorded ConnectX-6 sysfs tree: the ring and perftest arguments, pass, a slow pair, the node
at fault, failed tools, the report checks."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.perftest import parse_perftest

from plugins.plugin_utils import rdma_pairs
from plugins.plugin_utils.rdma_pairs import active_port, judge_pairs, narrow_faults, report

from .conftest import FIXTURES, RDMA_TREE

PERFTEST = FIXTURES / "tool_outputs" / "perftest"
BW = parse_perftest((PERFTEST / "ib_write_bw_gbits_sweep_roce.txt").read_text())  # 92.46 Gb/s at best
LAT = parse_perftest((PERFTEST / "ib_write_lat_mlx4_cpufreq_warnings.txt").read_text())  # 1.88 us typical
RING3 = [{"client": "n1", "server": "n2"}, {"client": "n2", "server": "n3"}, {"client": "n3", "server": "n1"}]
RING2 = [{"client": "n1", "server": "n2"}, {"client": "n2", "server": "n1"}]


@pytest.fixture(scope="module")
def devices(rdma_sysfs: Any) -> list[dict[str, Any]]:
    return rdma_sysfs.read_tree(str(RDMA_TREE))[1]


def results(ring: list[dict[str, str]], slow: tuple[str, ...] = (), **overrides: dict[str, Any]) -> list[dict]:
    """Recorded bandwidth and latency per client; clients in `slow` reach half the recorded bandwidth."""
    out = []
    for pair in ring:
        bw = copy.deepcopy(BW)
        if pair["client"] in slow:
            bw["summary"]["max_bw_avg_gbps"] = 46.0
        out.append({"tool": "ib_write_bw", "client": pair["client"], "server": pair["server"], "rc": 0,
                    "parsed": bw, "stderr": "", **overrides.get(pair["client"] + "_bw", {})})
        out.append({"tool": "ib_write_lat", "client": pair["client"], "server": pair["server"], "rc": 0,
                    "parsed": LAT, "stderr": "", **overrides.get(pair["client"] + "_lat", {})})
    return out


def judge(ring: list[dict[str, str]], res: list[dict], devices: list[dict[str, Any]], **per_host: Any) -> list[dict]:
    by_host = {p["client"]: per_host.get(p["client"], devices) for p in ring}
    return judge_pairs(ring, res, by_host, 0.9, 10)


def test_good_ring(devices):
    pairs = judge(RING3, results(RING3), devices)
    assert [(p["client"], p["server"], p["line_gbps"], p["gbps"], p["usec"], p["ok"], p["error"]) for p in pairs] == [
        ("n1", "n2", 100.0, 92.46, 1.88, True, ""), ("n2", "n3", 100.0, 92.46, 1.88, True, ""),
        ("n3", "n1", 100.0, 92.46, 1.88, True, "")]
    assert pairs[0]["where"] == "mlx5_0:1 -> mlx5_0:1"
    assert narrow_faults(pairs, 3) == {"suspects": [], "loopback": []}
    out = report(pairs, [], [], 0.9, 10, ["n1", "n2", "n3"], 3)
    assert (out["bad"], out["faulty"], out["percent"]) == ([], [], 90)
    assert [(c["name"], c["status"]) for c in out["checks"]] == [
        ("rdma_write_bw n1->n2", "pass"), ("rdma_write_lat n1->n2", "pass"), ("rdma_write_bw n2->n3", "pass"),
        ("rdma_write_lat n2->n3", "pass"), ("rdma_write_bw n3->n1", "pass"), ("rdma_write_lat n3->n1", "pass")]
    assert out["checks"][0] == {
        "name": "rdma_write_bw n1->n2", "status": "pass", "measured": 92.46, "floor": 90.0, "unit": "Gb/s",
        "detail": "n1: rdma_write_bw 92.46 >= floor 90.0 (90% of 100.0 Gb/s line rate, mlx5_0:1 -> mlx5_0:1 on n2)"}
    assert out["checks"][1] == {
        "name": "rdma_write_lat n1->n2", "status": "pass", "measured": 1.88, "floor": None, "ceiling": 10.0,
        "unit": "us", "detail": "n1: rdma_write_lat 1.88 us typical (ceiling 10 us) to n2"}
    assert list(out["curves"]) == ["ib_write_bw n1->n2", "ib_write_bw n2->n3", "ib_write_bw n3->n1"]
    assert len(out["curves"]["ib_write_bw n1->n2"]) == 23
    assert out["curves"]["ib_write_bw n1->n2"][0] == {"size": 2, "bw_avg": 0.11}


def test_line_rate_of_the_slower_end(devices):
    slow = copy.deepcopy(devices)
    slow[0]["ports"][0]["rate_gbps"] = 50.0
    pairs = judge(RING3, results(RING3), devices, n2=slow)
    assert [p["line_gbps"] for p in pairs] == [50.0, 50.0, 100.0]  # n2 is in the first two pairs
    assert all(p["ok"] for p in pairs)


def test_node_in_two_failing_pairs_is_at_fault(devices):
    # n2's NIC is slow: n1->n2 (n1 client) and n2->n3 (n2 client) fail, n3->n1 passes.
    pairs = judge(RING3, results(RING3, slow=("n1", "n2")), devices)
    assert [p["ok"] for p in pairs] == [False, False, True]
    faults = narrow_faults(pairs, 3)
    assert faults == {"suspects": ["n2"], "loopback": []}
    out = report(pairs, faults["suspects"], [], 0.9, 10, ["n1", "n2", "n3"], 3)
    assert out["bad"] == ["n1->n2", "n2->n3"]
    assert out["faulty"] == ["n2"]
    assert out["checks"][0]["detail"] == (
        "n1: rdma_write_bw 46.0 < floor 90.0 (90% of 100.0 Gb/s line rate, mlx5_0:1 -> mlx5_0:1 on n2)")
    assert out["checks"][-1] == {
        "name": "rdma_node_at_fault n2", "status": "fail", "measured": None, "floor": None, "unit": "",
        "detail": "n2: RDMA at fault: in two failing pairs while the other pairs pass; check its NIC, cable and "
                  "switch port (ibstat, dmesg)"}


def test_two_nodes_go_to_loopback(devices):
    pairs = judge(RING2, results(RING2, slow=("n1",)), devices)
    assert narrow_faults(pairs, 2) == {"suspects": [], "loopback": ["n1", "n2"]}
    out = report(pairs, [], ["n2"], 0.9, 10, ["n1", "n2"], 2)
    assert out["faulty"] == ["n2"]
    assert out["checks"][-1]["detail"] == (
        "n2: RDMA at fault: loopback ib_write_bw failed or below the floor; check its NIC, cable and switch port "
        "(ibstat, dmesg)")


def test_one_failing_pair_in_a_ring_of_three_goes_to_loopback(devices):
    pairs = judge(RING3, results(RING3, slow=("n3",)), devices)
    assert narrow_faults(pairs, 3) == {"suspects": [], "loopback": ["n3", "n1"]}


def test_failed_tool_is_the_error(devices):
    res = results(RING3, n1_bw={"rc": 1, "stderr": "Couldn't connect to 10.92.0.2:18515"})
    pairs = judge(RING3, res, devices)
    assert (pairs[0]["gbps"], pairs[0]["usec"], pairs[0]["ok"]) == (None, 1.88, False)
    assert pairs[0]["error"] == "Couldn't connect to 10.92.0.2:18515"
    check = report(pairs, [], [], 0.9, 10, ["n1", "n2", "n3"], 3)["checks"][0]
    assert (check["status"], check["measured"]) == ("fail", None)
    assert check["detail"] == ("n1: rdma_write_bw n/a < floor 90.0 (90% of 100.0 Gb/s line rate, mlx5_0:1 -> "
                               "mlx5_0:1 on n2): Couldn't connect to 10.92.0.2:18515")


def test_latency_failure_and_missing_results(devices):
    res = [r for r in results(RING3, n2_lat={"rc": 2, "stderr": "timeout"}) if r["client"] != "n3"]
    pairs = judge(RING3, res, devices)
    assert (pairs[1]["usec"], pairs[1]["ok"], pairs[1]["error"]) == (None, False, "timeout")
    assert (pairs[2]["gbps"], pairs[2]["usec"], pairs[2]["error"], pairs[2]["curve"]) == (None, None, "no result", [])
    out = report(pairs, [], [], 0.9, 10, ["n1", "n2", "n3"], 3)
    assert out["checks"][3]["detail"] == "n2: rdma_write_lat n/a us typical (ceiling 10 us) to n3"
    assert "ib_write_bw n3->n1" not in out["curves"]


def test_latency_above_the_ceiling(devices):
    pairs = judge_pairs(RING2, results(RING2), {"n1": devices, "n2": devices}, 0.9, 1.5)
    assert [p["ok"] for p in pairs] == [False, False]
    out = report(pairs, [], [], 0.9, 1.5, ["n1", "n2"], 2)
    assert [c["status"] for c in out["checks"]] == ["pass", "fail", "pass", "fail"]


def test_no_active_port_names_the_host(devices):
    down = copy.deepcopy(devices)
    down[0]["ports"][0]["state"] = "DOWN"
    with pytest.raises(ValueError, match=r"^n2: no ACTIVE RDMA port"):
        active_port("n2", down)


def test_no_pairs_is_a_skip():
    assert report([], [], [], 0.9, 10, ["n1"], 3)["checks"] == [{
        "name": "rdma_pairs", "status": "skip", "measured": 1, "floor": None, "unit": "RDMA nodes",
        "detail": "RDMA devices on 1 of 3 nodes (n1): perftest pairs skipped; NCCL uses TCP where there is no RDMA"}]
    assert report([], [], [], 0.9, 10, [], 2)["checks"][0]["detail"] == (
        "RDMA devices on 0 of 2 nodes: perftest pairs skipped; NCCL uses TCP where there is no RDMA")


def test_ring_of_rdma_nodes() -> None:
    assert rdma_pairs.ring(["n1", "n2", "n3"]) == [{"client": "n1", "server": "n2"}, {"client": "n2", "server": "n3"},
                                                   {"client": "n3", "server": "n1"}]
    assert rdma_pairs.ring(["n1", "n2"]) == [{"client": "n1", "server": "n2"}, {"client": "n2", "server": "n1"}]
    assert rdma_pairs.ring(["n1"]) == [] and rdma_pairs.ring([]) == []


def test_perftest_args_of_the_recorded_port(rdma_sysfs) -> None:
    devices = rdma_sysfs.read_tree(str(RDMA_TREE))[1]
    assert rdma_pairs.perftest_args("n1", devices, 18515) == ["-d", "mlx5_0", "-i", "1", "-x", "3", "-p", "18515"]
    infiniband = [{"name": "mlx5_1", "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand",
                                                "roce_v2_gid_index": None}]}]
    assert rdma_pairs.perftest_args("n1", infiniband, 1) == ["-d", "mlx5_1", "-i", "1", "-p", "1"]
