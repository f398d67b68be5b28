from __future__ import annotations

from sccnlp.report.summary import text_summary


def test_one_line_per_node_with_failures_named(results):
    lines = text_summary(results).splitlines()
    assert lines[0] == ("FAIL  gpu1     1 passed, 1 failed, 1 skipped: nccl_all_reduce_busbw: measured 360.5 GB/s "
                        "vs floor 431 GB/s (8 GPUs, 8 GiB message)")
    assert lines[1] == "PASS  gpu2     1 passed, 0 failed, 0 skipped"
    assert lines[2] == "PASS  cluster  1 passed, 0 failed, 0 skipped"
    assert lines[3].startswith("Overall: FAIL (2 nodes, 1 failed; run 2026-12-02T10:00:00+00:00 ..")
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
