"""Rank/size/rendezvous discovery from the launchers' environments, the metrics line, the LAMB step."""

from __future__ import annotations

import pytest

from sccnlp.errors import SccError
from sccnlp.node.bert.distributed import DistEnv, detect_env, master_address
from sccnlp.node.bert.metrics import format_line, parse_line


@pytest.mark.parametrize(("env", "expected"), [
    ({}, DistEnv(0, 1, 0, 1, "single")),
    ({"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "16", "OMPI_COMM_WORLD_LOCAL_RANK": "5",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "8"}, DistEnv(5, 16, 5, 8, "openmpi")),
    ({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}, DistEnv(3, 4, 1, 2, "torchrun")),
    ({"PMI_RANK": "2", "PMI_SIZE": "4", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2"}, DistEnv(2, 4, 0, 2, "pmi")),
    ({"SLURM_PROCID": "9", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "8"},
     DistEnv(9, 16, 1, 8, "slurm")),
])
def test_detect_env(env: dict, expected: DistEnv) -> None:
    assert detect_env(env) == expected


def test_detect_env_rejects_nonsense() -> None:
    with pytest.raises(SccError, match="OMPI_COMM_WORLD_SIZE='x' is not an integer"):
        detect_env({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "x"})
    with pytest.raises(SccError, match="rank 4, world size 4"):
        detect_env({"OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_SIZE": "4"})


def test_master_address() -> None:
    multi = DistEnv(3, 16, 3, 8, "openmpi")
    assert master_address(multi, {"MASTER_ADDR": "node1", "MASTER_PORT": "29555"}) == ("node1", 29555)
    assert master_address(DistEnv(1, 8, 1, 8, "openmpi"), {}) == ("127.0.0.1", 29500)
    assert master_address(DistEnv(1, 8, 1, 4, "slurm"), {"SLURM_JOB_NODELIST": "gpu[03-05,07],cpu1"})[0] == "gpu03"
    with pytest.raises(SccError, match="MASTER_ADDR=<first host of the hostfile>"):
        master_address(multi, {"OMPI_MCA_ess_base_jobid": "1234"})


def test_metrics_line_round_trip() -> None:
    rec = {"step": 120, "loss": 7.123, "mlm": 6.43, "nsp": 0.693, "lr": 1e-4, "seq_per_s": 14801.6,
           "seq_per_s_gpu": 1850.2, "mfu": 0.451, "tok_per_s": 1894604.8, "mem_gib": 41.2, "skipped": 0}
    line = format_line(rec)
    assert line.startswith("step=120 loss=7.1230 mlm=6.4300 nsp=0.6930 lr=1.00e-04 seq/s=14801.6 "
                           "seq/s/gpu=1850.2 mfu=45.1%")
    back = parse_line(line)
    assert back is not None and back["seq_per_s_gpu"] == 1850.2 and back["mfu"] == pytest.approx(0.451)
    assert parse_line(format_line(dict(rec, mfu=None, mem_gib=None)))["mfu"] is None
    assert parse_line("resumed from step 20") is None


def test_lamb_matches_reference() -> None:
    torch = pytest.importorskip("torch")
    from sccnlp.node.bert.optim import Lamb

    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(5, 3))
    g = torch.randn(5, 3)
    p0 = p.detach().clone()
    opt = Lamb([p], lr=0.1, weight_decay=0.01, eps=1e-6)
    p.grad = g.clone()
    opt.step()
    m, v = 0.1 * g, 0.001 * g * g
    u = (m / 0.1) / ((v / 0.001).sqrt() + 1e-6) + 0.01 * p0
    ref = p0 - 0.1 * (p0.norm() / u.norm()) * u
    assert torch.allclose(p.detach(), ref, atol=1e-6)
