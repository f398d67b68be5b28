from __future__ import annotations

from sccnlp.report.summary import stack_summary, text_summary


def test_one_line_per_node_with_failures_named(results):
    lines = text_summary(results).splitlines()
    assert lines[0] == ("FAIL  gpu1     1 passed, 1 failed, 1 skipped: nccl_all_reduce_busbw: measured 360.5 GB/s "
                        "vs floor 431 GB/s (8 GPUs, 8 GiB message)")
    assert lines[1] == "PASS  gpu2     1 passed, 0 failed, 0 skipped"
    assert lines[2] == "PASS  cluster  1 passed, 0 failed, 0 skipped"
    assert lines[3].startswith("Overall: FAIL (2 nodes, 1 failed: gpu1 (checks failed); "
                               "run 2026-12-02T10:00:00+00:00 ..")
    assert len(lines) == 4


def test_all_skipped_node_is_not_a_pass(results):
    for check in results["nodes"]["gpu1"]["checks"]:
        check["status"] = "skip"
    results["nodes"]["gpu2"]["checks"][0]["status"] = "skip"
    results["cluster"]["checks"][0]["status"] = "skip"
    summary = text_summary(results)
    assert summary.splitlines()[0].startswith("SKIP  gpu1     0 passed, 0 failed, 3 skipped")
    assert summary.splitlines()[-1].startswith("Overall: SKIP")
    assert "PASS" not in summary


def test_null_measurement_in_a_failure(results):
    results["nodes"]["gpu2"]["checks"].append({"name": "gpu_count", "status": "fail", "measured": None,
                                               "floor": 8, "unit": "GPUs", "detail": "nvidia-smi failed"})
    line = text_summary(results).splitlines()[1]
    assert line.endswith("gpu_count: measured n/a vs floor 8 GPUs (nvidia-smi failed)")


def test_stack_summary_groups_nodes_with_the_same_software(results):
    results["nodes"]["gpu2"]["facts"] = dict(results["nodes"]["gpu1"]["facts"])
    assert stack_summary(results).splitlines() == [
        "Software: the same on every node",
        "  gpu1, gpu2: Python 3.11.9, framework torch 2.6.0, driver 570.124.06, CUDA 12.8, NCCL 2.26.2, cuDNN 9.8.0, "
        "backend horovod, NCCL transport nccl/ib (mlx5_0,mlx5_1)",
    ]


def test_stack_summary_shows_drift_and_missing_facts(results):
    results["nodes"]["gpu1"]["facts"]["training_backend"] = "aiacc (AIACC-Training 1.5.0 imports)"
    lines = stack_summary(results).splitlines()
    assert lines[0] == "Software: 2 different stacks"
    assert lines[1].startswith("  gpu1: Python 3.11.9, framework torch 2.6.0,")
    assert "backend aiacc, NCCL transport nccl/ib (mlx5_0,mlx5_1)" in lines[1]
    assert lines[2] == ("  gpu2: Python -, framework -, driver 570.124.06, CUDA -, NCCL -, cuDNN -, backend -, "
                        "NCCL transport -")


def test_stack_summary_names_at_most_six_hosts(results):
    facts = results["nodes"]["gpu2"]["facts"]
    results["nodes"] = {f"n{i:02d}": {"facts": dict(facts), "checks": []} for i in range(9)}
    assert stack_summary(results).splitlines()[1].startswith("  n00, n01, n02, n03, n04, n05 and 3 more: Python -,")
