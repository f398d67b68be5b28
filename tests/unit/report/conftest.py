from __future__ import annotations

import copy

import pytest

BASE = {
    "run": {"started": "2026-12-02T10:00:00+00:00", "finished": "2026-12-02T10:21:30+00:00", "cluster": "scc-demo",
            "inventory": "inventory/scc.yml"},
    "nodes": {
        "gpu1": {
            "facts": {"gpu_model": "NVIDIA H200", "gpu_count": 8, "driver": "570.124.06", "cuda": "12.8",
                      "nccl": "2.26.2", "cudnn": "9.8.0", "python": "3.11.9", "framework": "torch 2.6.0",
                      "training_backend": "horovod (AIACC source not configured; fallback)",
                      "comm_backend": "nccl/ib (mlx5_0,mlx5_1)", "rdma_devices": ["mlx5_0", "mlx5_1"],
                      "kernel": "6.1.0"},
            "checks": [
                {"name": "nccl_all_reduce_busbw", "status": "fail", "measured": 360.5, "floor": 431, "unit": "GB/s",
                 "detail": "8 GPUs, 8 GiB message"},
                {"name": "rdma_ports_active", "status": "pass", "measured": 2, "floor": 2, "unit": "ports",
                 "detail": "mlx5_0/1, mlx5_1/1"},
                {"name": "ib_write_bw_loopback", "status": "skip", "measured": None, "floor": 78.0, "unit": "Gb/s",
                 "detail": "perftest not installed"},
            ],
            "curves": {"nccl_all_reduce": [{"size": 2**e, "algbw": e * 4.0, "busbw": e * 7.0} for e in range(3, 34)],
                       "ib_write_bw_mlx5_0": [{"size": 2**e, "bw_avg": min(92.4, 2.0**e / 50)} for e in range(1, 24)]},
        },
        "gpu2": {
            "facts": {"gpu_model": "NVIDIA H200", "gpu_count": 8, "driver": "570.124.06"},
            "checks": [{"name": "rdma_ports_active", "status": "pass", "measured": 2, "floor": 2, "unit": "ports",
                        "detail": ""}],
            "curves": {"nccl_all_reduce": [{"size": 2**e, "algbw": e * 4.2, "busbw": e * 7.3} for e in range(3, 34)]},
        },
    },
    "cluster": {"checks": [{"name": "nccl_all_reduce_2_nodes", "status": "pass", "measured": 45.2, "floor": 40.0,
                            "unit": "GB/s", "detail": "16 ranks"}],
                "curves": {"nccl_all_reduce_2_nodes": [{"size": 2**e, "algbw": e, "busbw": e * 1.9}
                                                       for e in range(10, 30)]}},
}


@pytest.fixture
def results():
    return copy.deepcopy(BASE)
