"""The node-side gate programs' logic, on the CPU (the GPU path runs in scripts/device/gpu_gates.sh)."""

from __future__ import annotations

import json

import pytest

from sccnlp.node.gates import allreduce, gpu


def test_allreduce_sizes_and_bus_factor():
    assert allreduce.sizes(1024, 8192) == [1024, 2048, 4096, 8192]
    assert allreduce.bus_factor(8) == pytest.approx(1.75)
    assert allreduce.bus_factor(1) == 0.0


def test_gpu_gates_on_cpu_report_skips(tmp_path):
    pytest.importorskip("torch", reason="torch is part of the dev venv; the CPU run checks the program logic")
    out = tmp_path / "gates.json"
    assert gpu.main(["--device", "cpu", "--quick", "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    names = [m["name"] for m in data["measurements"]]
    assert names == ["gemm_bf16_tflops", "copy_tbps", "h2d_gbps", "d2h_gbps"]
    assert all(m["value"] > 0 and "CPU" in m["skip"] for m in data["measurements"])
    assert data["facts"]["framework"].startswith("torch ")


def test_fp16_gemm_name():
    pytest.importorskip("torch")
    data = gpu.measure("cpu", True, "float16")
    assert data["measurements"][0]["name"] == "gemm_fp16_tflops"
