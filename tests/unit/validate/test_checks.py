"""sccnlp.node.gates.checks: one message format naming the node, the metric, the value and the floor."""

from __future__ import annotations

import pytest

from sccnlp.node.gates.checks import failures, fmt, make_check


@pytest.mark.parametrize(("value", "text"), [(700.1234, "700.1"), (3.9123, "3.912"), (720.0, "720"), (720, "720"),
                                             (0.5, "0.5"), (None, "n/a")])
def test_fmt(value, text):
    assert fmt(value) == text


def test_below_floor_names_node_metric_value_and_floor():
    check = make_check("node-2", {"name": "gemm_bf16_tflops", "value": 700.1, "unit": "TFLOP/s"},
                       {"gemm_bf16_tflops": 720})
    assert check["status"] == "fail"
    assert check["detail"] == "node-2: gemm_bf16_tflops 700.1 < floor 720"
    assert (check["measured"], check["floor"], check["unit"]) == (700.1, 720, "TFLOP/s")


def test_at_floor_passes_and_inline_floor_wins():
    check = make_check("n1", {"name": "copy_tbps", "value": 3.9, "unit": "TB/s", "floor": 3.9}, {"copy_tbps": 99})
    assert check["status"] == "pass"
    assert check["detail"] == "n1: copy_tbps 3.9 >= floor 3.9"


def test_ceiling():
    bad = make_check("n1", {"name": "xid_faults", "value": 2, "unit": "events", "ceiling": 0, "detail": "XIDs 79"})
    assert bad["status"] == "fail"
    assert bad["detail"] == "n1: xid_faults 2 > ceiling 0 (XIDs 79)"
    assert bad["ceiling"] == 0 and bad["floor"] is None
    assert make_check("n1", {"name": "xid_faults", "value": 0, "ceiling": 0})["status"] == "pass"


def test_floor_and_ceiling_both_apply():
    spec = {"name": "gpu_count", "floor": 8, "ceiling": 8, "unit": "GPUs"}
    assert make_check("n", {**spec, "value": 7})["detail"] == "n: gpu_count 7 < floor 8"
    assert make_check("n", {**spec, "value": 9})["detail"] == "n: gpu_count 9 > ceiling 8"
    assert make_check("n", {**spec, "value": 8})["status"] == "pass"


def test_skip_is_never_pass_and_keeps_the_reason():
    check = make_check("n1", {"name": "gemm_bf16_tflops", "value": None, "skip": "no GPU on this node"},
                       {"gemm_bf16_tflops": 720})
    assert check["status"] == "skip"
    assert "no GPU on this node" in check["detail"]


def test_missing_measurement_fails():
    check = make_check("n1", {"name": "copy_tbps", "value": None, "detail": "gate program crashed"}, {"copy_tbps": 3.9})
    assert check["status"] == "fail"
    assert check["detail"] == "n1: copy_tbps was not measured (gate program crashed)"


def test_no_floor_is_skip_with_the_value():
    check = make_check("n1", {"name": "nccl_all_reduce_busbw_gbps", "value": 120.5, "unit": "GB/s"}, {})
    assert check["status"] == "skip"
    assert "120.5 GB/s measured; no floor" in check["detail"]


def test_string_numbers_from_ansible_are_numbers():
    check = make_check("n1", {"name": "gpu_count", "value": "8", "floor": "8", "ceiling": "8"})
    assert check["status"] == "pass" and check["measured"] == 8.0


def test_failures_lists_details():
    checks = [make_check("a", {"name": "x", "value": 1, "floor": 2}),
              make_check("a", {"name": "y", "value": 3, "floor": 2})]
    assert failures(checks) == ["a: x 1 < floor 2"]
