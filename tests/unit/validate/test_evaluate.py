"""sccnlp.node.gates.evaluate: a node's inputs -> a fragment that sccnlp.report accepts and merges."""

from __future__ import annotations

import json

from sccnlp.node.gates.evaluate import build_fragment, main
from sccnlp.report.collect import merge
from sccnlp.report.model import validate

RUN = {"started": "2026-12-02T10:00:00Z", "cluster": "scc_cluster", "inventory": "inv.yml"}


def _spec(tmp_path, host="node-1", gemm=781.2, first=True):
    gate = tmp_path / f"{host}-gpu.json"
    gate.write_text(json.dumps({
        "facts": {"gpu_model": "NVIDIA H200", "framework": "torch 2.11.0"},
        "measurements": [{"name": "gemm_bf16_tflops", "value": gemm, "unit": "TFLOP/s", "detail": "best at n=8192"}],
    }))
    return {
        "host": host, "run": RUN, "floors": {"gemm_bf16_tflops": 720, "shared_storage_write_mbps": 5},
        "facts": {"gpu_count": 1}, "checks": [],
        "measurements": [{"name": "gpu_count", "value": 1, "floor": 1, "ceiling": 1, "unit": "GPUs"}],
        "curves": {"nccl_all_reduce": [{"size": 1024, "algbw": 1.5, "busbw": 0.0}]},
        "gate_files": [str(gate), str(tmp_path / "missing.json")],
        "cluster": {"measurements": [{"name": "shared_storage_write_mbps", "value": 120.0, "unit": "MB/s"}]
                    if first else [], "checks": []},
    }


def test_fragment_shape_and_checks(tmp_path):
    fragment = build_fragment(_spec(tmp_path))
    validate(fragment)  # the report's own schema check
    node = fragment["nodes"]["node-1"]
    assert node["facts"]["gpu_model"] == "NVIDIA H200" and node["facts"]["gpu_count"] == 1
    assert {c["name"]: c["status"] for c in node["checks"]} == {"gpu_count": "pass", "gemm_bf16_tflops": "pass"}
    assert fragment["cluster"]["checks"][0]["name"] == "shared_storage_write_mbps"
    assert fragment["run"]["finished"]  # set when missing


def test_fragments_merge_with_a_failing_node(tmp_path):
    paths = []
    for host, gemm, first in (("node-1", 781.2, True), ("node-2", 700.1, False)):
        out = tmp_path / f"{host}.json"
        src = tmp_path / f"{host}-in.json"
        src.write_text(json.dumps(_spec(tmp_path, host, gemm, first)))
        assert main([str(src), str(out)]) == 0
        paths.append(out)
    merged = merge(paths)
    bad = [c for c in merged["nodes"]["node-2"]["checks"] if c["status"] == "fail"]
    assert [c["detail"] for c in bad] == ["node-2: gemm_bf16_tflops 700.1 < floor 720 (best at n=8192)"]


def test_main_prints_failures(tmp_path, capsys):
    src, out = tmp_path / "in.json", tmp_path / "out.json"
    src.write_text(json.dumps(_spec(tmp_path, "node-2", 700.1)))
    main([str(src), str(out)])
    assert "FAIL node-2: gemm_bf16_tflops 700.1 < floor 720" in capsys.readouterr().out


def test_main_prints_cluster_failures_apart(tmp_path, capsys):
    # The role fails the nodes a cluster check names, not the first node that ran it: it tells them apart by prefix.
    spec = _spec(tmp_path, "node-1")
    spec["cluster"]["measurements"] = [{"name": "shared_storage_visible", "value": 2, "floor": 3, "unit": "nodes",
                                        "detail": "not seen by node-2"}]
    src, out = tmp_path / "in.json", tmp_path / "out.json"
    src.write_text(json.dumps(spec))
    main([str(src), str(out)])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["FAIL CLUSTER node-1: shared_storage_visible 2 < floor 3 (not seen by node-2)"]
