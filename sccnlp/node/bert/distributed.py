"""Rank, world size and rendezvous for the trainer, whatever launched it.

Launchers understood, first match wins: torchrun (RANK/WORLD_SIZE/LOCAL_RANK), OpenMPI's mpirun
(OMPI_COMM_WORLD_*), PMIx (PMIX_RANK), MPICH/Intel MPI through PMI (PMI_RANK/PMI_SIZE, MPI_LOCALRANKID), Slurm's srun
(SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID). Nothing set means one process.

Under mpirun nothing tells a rank where rank 0 runs, so the rendezvous address comes from, in order: MASTER_ADDR
(recommended: `mpirun -x MASTER_ADDR=<first host of the hostfile>`), mpi4py (rank 0 broadcasts its host name) when
it is installed, 127.0.0.1 when every rank is on this node, the first Slurm node; otherwise a clear error.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sccnlp.node.errors import SccError

DEFAULT_PORT = 29500


@dataclass(frozen=True)
class DistEnv:
    """Where this process sits in the job."""

    rank: int
    world_size: int
    local_rank: int
    local_size: int
    launcher: str  # "single", "torchrun", "openmpi", "pmix", "pmi", "slurm"

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def _int(environ: Mapping[str, str], name: str) -> int:
    value = environ[name]
    try:
        return int(value)
    except ValueError:
        raise SccError(f"environment variable {name}={value!r} is not an integer: launch with mpirun/torchrun/srun, "
                       "or unset it for a single process") from None


def _first(environ: Mapping[str, str], names: tuple[str, ...], default: int) -> int:
    for name in names:
        if name in environ:
            return _int(environ, name)
    return default


def detect_env(environ: Mapping[str, str] | None = None) -> DistEnv:
    """Read rank/size/local rank from the launcher's environment variables."""
    env = os.environ if environ is None else environ
    if "RANK" in env and "WORLD_SIZE" in env:
        launcher, rank, size = "torchrun", _int(env, "RANK"), _int(env, "WORLD_SIZE")
        local_rank = _first(env, ("LOCAL_RANK",), 0)
        local_size = _first(env, ("LOCAL_WORLD_SIZE",), size)
    elif "OMPI_COMM_WORLD_RANK" in env:
        launcher, rank, size = "openmpi", _int(env, "OMPI_COMM_WORLD_RANK"), _int(env, "OMPI_COMM_WORLD_SIZE")
        local_rank = _first(env, ("OMPI_COMM_WORLD_LOCAL_RANK",), 0)
        local_size = _first(env, ("OMPI_COMM_WORLD_LOCAL_SIZE",), size)
    elif "PMIX_RANK" in env and ("PMIX_SIZE" in env or "OMPI_COMM_WORLD_SIZE" in env or "SLURM_NTASKS" in env):
        launcher, rank = "pmix", _int(env, "PMIX_RANK")
        size = _first(env, ("PMIX_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"), 1)
        local_rank = _first(env, ("PMIX_LOCAL_RANK", "SLURM_LOCALID"), 0)
        local_size = _first(env, ("PMIX_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"), size)
    elif "PMI_RANK" in env:
        launcher, rank, size = "pmi", _int(env, "PMI_RANK"), _first(env, ("PMI_SIZE",), 1)
        local_rank = _first(env, ("MPI_LOCALRANKID", "PMI_LOCAL_RANK"), 0)
        local_size = _first(env, ("MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"), size)
    elif "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        launcher, rank, size = "slurm", _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS")
        local_rank = _first(env, ("SLURM_LOCALID",), 0)
        local_size = _first(env, ("SLURM_NTASKS_PER_NODE",), size) if "SLURM_NTASKS_PER_NODE" in env and \
            env["SLURM_NTASKS_PER_NODE"].isdigit() else size
    else:
        return DistEnv(0, 1, 0, 1, "single")
    if size < 1 or not 0 <= rank < size or local_rank < 0:
        raise SccError(f"inconsistent launcher environment ({launcher}): rank {rank}, world size {size}, "
                       f"local rank {local_rank}; check the mpirun/srun command line")
    return DistEnv(rank, size, local_rank, max(local_size, 1), launcher)


def _first_slurm_host(nodelist: str) -> str:
    """First host of a Slurm node list such as `gpu[03-05,07],cpu1` -> `gpu03`."""
    match = re.match(r"([^,\[]+)(?:\[([^\]]+)\])?", nodelist.strip())
    if not match:
        return nodelist
    prefix, ranges = match.group(1), match.group(2)
    if not ranges:
        return prefix
    return prefix + ranges.split(",")[0].split("-")[0]


def master_address(dist_env: DistEnv, environ: Mapping[str, str] | None = None) -> tuple[str, int]:
    """Address and port of the torch.distributed rendezvous (rank 0's host)."""
    env = os.environ if environ is None else environ
    port = _first(env, ("MASTER_PORT",), 0)
    if not port:
        # Same value on every rank of one mpirun job, different between jobs: fewer port clashes.
        jobid = env.get("OMPI_MCA_ess_base_jobid") or env.get("SLURM_JOB_ID") or ""
        port = DEFAULT_PORT + (int(jobid) % 1000 if jobid.isdigit() else 0)
    if env.get("MASTER_ADDR"):
        return env["MASTER_ADDR"], port
    if dist_env.local_size >= dist_env.world_size:
        return "127.0.0.1", port
    try:
        from mpi4py import MPI  # optional
    except ImportError:
        MPI = None
    if MPI is not None and dist_env.launcher in ("openmpi", "pmix", "pmi"):
        host = MPI.COMM_WORLD.bcast(socket.gethostname() if dist_env.rank == 0 else None, root=0)
        return str(host), port
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if nodelist:
        return _first_slurm_host(nodelist), port
    raise SccError(
        f"cannot find rank 0's host for the rendezvous ({dist_env.world_size} ranks over several nodes, "
        f"launcher {dist_env.launcher}): pass it to every rank, e.g. `mpirun -x MASTER_ADDR=<first host of the "
        "hostfile> -x MASTER_PORT=29500 ...`, or install mpi4py in the training venv")


BACKENDS = ("torch", "horovod", "aiacc")
_HVD_MODULES = {"horovod": "horovod.torch", "aiacc": "perseus.torch.horovod"}


class Comm:
    """The collective layer the trainer talks to: torch.distributed (NCCL/gloo) or a Horovod API (Horovod, AIACC)."""

    def __init__(self, backend: str = "torch", environ: Mapping[str, str] | None = None,
                 timeout_s: float = 1800.0) -> None:
        import torch

        if backend not in BACKENDS:
            raise SccError(f"unknown --backend {backend!r}: choose one of {', '.join(BACKENDS)}")
        self.backend = backend
        self.hvd = None
        self.pg_started = False
        if backend == "torch":
            self.env = detect_env(environ)
            self.device = self._pick_device(self.env.local_rank)
            if self.env.world_size > 1 and not __import__("torch.distributed").distributed.is_initialized():
                import datetime

                import torch.distributed as dist

                addr, port = master_address(self.env, environ)
                pg_backend = "nccl" if self.device.type == "cuda" else "gloo"
                dist.init_process_group(pg_backend, init_method=f"tcp://{addr}:{port}", rank=self.env.rank,
                                        world_size=self.env.world_size,
                                        timeout=datetime.timedelta(seconds=timeout_s),
                                        **({"device_id": self.device} if pg_backend == "nccl" else {}))
                self.pg_started = True
        else:
            module = _HVD_MODULES[backend]
            try:
                import importlib

                self.hvd = importlib.import_module(module)
            except ImportError as exc:
                what = "AIACC-Training (perseus-torch)" if backend == "aiacc" else "Horovod built with PyTorch"
                raise SccError(f"--backend {backend} needs {what}, but `import {module}` failed ({exc}): install it "
                               "in the training venv (role runtime) or use --backend torch") from None
            self.hvd.init()
            self.env = DistEnv(self.hvd.rank(), self.hvd.size(), self.hvd.local_rank(), self.hvd.local_size(),
                               backend)
            self.device = self._pick_device(self.env.local_rank)
        del torch

    @staticmethod
    def _pick_device(local_rank: int) -> Any:  # a torch.device
        import torch

        if torch.cuda.is_available():
            count = torch.cuda.device_count()
            index = local_rank % count
            torch.cuda.set_device(index)
            return torch.device("cuda", index)
        return torch.device("cpu")

    @property
    def rank(self) -> int:
        return self.env.rank

    @property
    def world_size(self) -> int:
        return self.env.world_size

    def all_reduce_sum(self, tensor):  # torch.Tensor -> torch.Tensor
        if self.world_size == 1:
            return tensor
        if self.hvd is not None:
            return self.hvd.allreduce(tensor, op=self.hvd.Sum)
        import torch.distributed as dist

        dist.all_reduce(tensor)
        return tensor

    def all_gather_object(self, obj: object) -> list[object]:
        if self.world_size == 1:
            return [obj]
        if self.hvd is not None:
            return list(self.hvd.allgather_object(obj))
        import torch.distributed as dist

        out: list[object] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.world_size == 1:
            return
        if self.hvd is not None:
            self.hvd.allreduce(__import__("torch").zeros(1), name="barrier")
            return
        import torch.distributed as dist

        dist.barrier()

    def close(self) -> None:
        if self.pg_started:
            import torch.distributed as dist

            dist.destroy_process_group()
            self.pg_started = False
