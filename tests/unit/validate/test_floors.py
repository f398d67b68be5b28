"""sccnlp/data/floors.yml: the values the brief fixes, and a complete entry per GPU."""

from __future__ import annotations

import yaml

from sccnlp.paths import data_dir

REQUIRED = {"match", "gemm_dtype", "copy_tbps", "h2d_gbps", "d2h_gbps", "nccl_all_reduce_busbw_gbps",
            "nccl_all_reduce_min_bytes"}


def _floors():
    return yaml.safe_load((data_dir() / "floors.yml").read_text())


def test_h200_floors():
    h200 = _floors()["gpu"]["H200"]
    assert h200["gemm_bf16_tflops"] == 720
    assert h200["copy_tbps"] == 3.9
    assert h200["nccl_all_reduce_busbw_gbps"]["8"] == 340
    assert h200["nccl_all_reduce_min_bytes"] == 4 << 30


def test_every_entry_is_complete():
    gpus = _floors()["gpu"]
    assert {"H200", "H100", "A100", "V100"} <= set(gpus)
    for key, entry in gpus.items():
        assert set(entry) >= REQUIRED, key
        short = {"bfloat16": "bf16", "float16": "fp16"}[entry["gemm_dtype"]]
        assert isinstance(entry[f"gemm_{short}_tflops"], (int, float)), key
        assert all(isinstance(k, str) for k in entry["nccl_all_reduce_busbw_gbps"]), key


def test_match_order_picks_the_right_entry():
    gpus = _floors()["gpu"]

    def pick(name: str) -> str:
        return next((k for k, e in gpus.items() if any(p in name for p in e["match"])), "")

    assert pick("NVIDIA H200") == "H200"
    assert pick("NVIDIA H100 80GB HBM3") == "H100"
    assert pick("NVIDIA A100-SXM4-80GB") == "A100"
    assert pick("Tesla V100-SXM2-16GB") == "V100"
    assert pick("Tesla T4") == ""


def test_volta_uses_fp16():
    assert _floors()["gpu"]["V100"]["gemm_dtype"] == "float16"
