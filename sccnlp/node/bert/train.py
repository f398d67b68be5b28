"""BERT pretraining trainer: `python -m sccnlp.node.bert.train --data-dir ... --output-dir ...`, alone or under mpirun.

One process per GPU (rank/size from the launcher's environment, see `sccnlp.node.bert.distributed`), torch.distributed
(NCCL on GPUs, gloo on CPU) or a Horovod API (Horovod, AIACC), bf16 autocast on GPU, LAMB or fused AdamW, gradient
accumulation, warmup + poly decay, gradient clipping, NaN/Inf detection that names the parameter, atomic checkpoints
on shared storage with `--resume auto`, metrics as JSON lines and one stable human line per log interval.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sccnlp.node.bert.metrics import format_line
from sccnlp.node.errors import SccError

ENV_KNOB_PREFIXES = ("NCCL_", "PERSEUS_", "HOROVOD_", "OMPI_MCA_", "UCX_")
CKPT_RE = re.compile(r"^ckpt-(\d+)\.pt$")


class NonFiniteGradient(SccError):
    exit_code = 3


class ClientGone(SccError):
    exit_code = 76  # sccnlp.node.bert.watchdog.EXIT_CLIENT_GONE


class CheckpointWriteFailed(SccError):
    """Rank 0 could not write a checkpoint; every rank stops with it, and only rank 0 prints it (one message)."""

    exit_code = 78  # sccnlp.node.bert.watchdog.EXIT_STORAGE

    def __init__(self, message: str, echo: bool = True) -> None:
        super().__init__(message)
        self.echo = echo


CHECKPOINT, STOP = 1, 2  # Trainer.agree_on_action()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sccnlp.node.bert.train", description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", help="prepared phase directory (…/phase1_seq128) holding meta.json and shards")
    p.add_argument("--synthetic", action="store_true", help="random full-length data of the same shapes (benchmarks)")
    p.add_argument("--seq-len", type=int, default=128, help="with --synthetic (real data: from meta.json)")
    p.add_argument("--max-pred", type=int, default=0, help="with --synthetic; 0 = 20 at seq 128, 80 at 512")
    p.add_argument("--output-dir", help="checkpoints and metrics.jsonl (shared storage for multi-node resume)")
    p.add_argument("--model", default="bert-large", help="bert-tiny, bert-base or bert-large")
    p.add_argument("--vocab-size", type=int, default=0,
                   help="model vocabulary rows; 0 = from meta.json (rounded up to a multiple of 64)")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--attn-dropout", type=float, default=None,
                   help="dropout on attention probabilities (default: --dropout); 0 keeps flash attention lean")
    p.add_argument("--batch-size", type=int, default=64, help="sequences per GPU per micro-step")
    p.add_argument("--global-batch-size", type=int, default=0,
                   help="sequences per optimizer step over all ranks; sets the accumulation steps and must be a "
                        "multiple of batch-size x ranks (0 = batch-size x ranks x --accum-steps)")
    p.add_argument("--accum-steps", type=int, default=1)
    p.add_argument("--steps", type=int, default=1000, help="optimizer steps in total")
    p.add_argument("--optimizer", default="lamb", choices=("lamb", "adamw"))
    p.add_argument("--lr", type=float, default=6e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--warmup", type=float, default=0.2843, help="warmup steps, or a fraction of --steps if < 1")
    p.add_argument("--poly-power", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="0 = no clipping")
    p.add_argument("--nan-policy", default="stop", choices=("stop", "skip"))
    p.add_argument("--backend", default="torch", choices=("torch", "horovod", "aiacc"))
    p.add_argument("--precision", default="auto", choices=("auto", "bf16", "fp8", "fp32"),
                   help="auto = bf16 on GPU, fp32 on CPU; fp8 = bf16 with the layers' matrix products in float8 "
                        "(torchao; GPUs with FP8 tensor cores: Ada, Hopper or newer)")
    p.add_argument("--compile", default="auto", choices=("auto", "none", "default", "max-autotune-no-cudagraphs"),
                   help="torch.compile mode (auto = default on GPU, none on CPU)")
    p.add_argument("--no-compile-optimizer", action="store_true",
                   help="keep the LAMB update eager when the model is compiled (for comparisons)")
    p.add_argument("--encoder", default="own", choices=("own", "hf"),
                   help="own = the project's fused encoder (sccnlp.node.bert.encoder, bf16 over fp32 master weights); "
                        "hf = transformers' BertForPreTraining modules under autocast (the old path)")
    p.add_argument("--attn", default="sdpa", choices=("sdpa", "eager"), help="attention of --encoder hf")
    p.add_argument("--full-head", action="store_true",
                   help="run the MLM head on every position like stock BertForPreTraining (slow; for comparison)")
    p.add_argument("--pad-multiple", type=int, default=0,
                   help="real data: cut padding to a multiple of this (0 = max(64, seq_len/4)); -1 = never cut")
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--ckpt-interval", type=int, default=0, help="optimizer steps between checkpoints (0 = at end)")
    p.add_argument("--ckpt-seconds", type=float, default=0.0,
                   help="also checkpoint when this many seconds passed since the last one (checked at log intervals; "
                        "0 = off)")
    p.add_argument("--keep-checkpoints", type=int, default=3)
    p.add_argument("--resume", default="auto", help="auto (latest ckpt-<step>.pt in --output-dir), none, or a path")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--peak-tflops", type=float, default=0.0,
                   help="dense bf16 peak per GPU for MFU (0 = from the GPU name; unknown GPUs show mfu=n/a)")
    p.add_argument("--log-data-ranges", action="store_true", help="every rank prints the record range it reads")
    p.add_argument("--collective-timeout", type=float, default=300.0,
                   help="seconds a collective may wait for a peer before it fails (gloo/NCCL process group timeout)")
    p.add_argument("--heartbeat-dir", default="",
                   help="shared directory for this launch's heartbeats (sccnlp.node.bert.watchdog); "
                        "empty = no watchdog")
    p.add_argument("--heartbeat-timeout", type=float, default=30.0,
                   help="seconds without a peer's heartbeat before the run stops naming that rank")
    p.add_argument("--client-lease", default="", help="file the launching client rewrites while it follows the run")
    p.add_argument("--client-lease-timeout", type=float, default=0.0,
                   help="seconds without a lease renewal before the run checkpoints and stops (0 = never)")
    p.add_argument("--textfile-dir", default="",
                   help="node_exporter's textfile directory: rank 0 writes the heartbeat there (scc_training.prom)")
    p.add_argument("--inject-nonfinite", default="", metavar="PARAM@STEP",
                   help="testing aid: turn PARAM's gradient into NaN at optimizer step STEP")
    return p


# --------------------------------------------------------------------------------------------------- helpers


def peak_flops(device: Any, override_tflops: float = 0.0) -> float:
    """Dense bf16 peak per GPU from its name (sccnlp.node.bert.metrics); 0 when unknown or on CPU."""
    if override_tflops:
        return override_tflops * 1e12
    if device.type != "cuda":
        return 0.0
    import torch

    from sccnlp.node.bert.metrics import peak_flops_for

    return peak_flops_for(torch.cuda.get_device_name(device))


def fp8_problem_here(device: Any) -> str:
    """sccnlp.node.bert.model.fp8_problem for this rank's device and venv."""
    from sccnlp.node.bert.model import fp8_problem

    name, capability = "", None
    if device.type == "cuda":
        import torch

        name, capability = torch.cuda.get_device_name(device), torch.cuda.get_device_capability(device)
    try:
        import torchao.float8  # noqa: F401
    except ImportError as exc:
        missing = str(exc)
    else:
        missing = ""
    return fp8_problem(device.type, name, capability, missing)


def storage_error_line(path: Path, exc: OSError) -> str:
    """One line naming the storage, the error and its free space: why a checkpoint could not be written."""
    try:
        usage = shutil.disk_usage(path.parent)
        free = f"{usage.free / 2**30:.2f} GiB free of {usage.total / 2**30:.2f} GiB"
    except OSError as probe:
        free = f"free space unknown ({probe.strerror or probe})"
    why = f"[Errno {exc.errno}] {exc.strerror}" if exc.errno is not None else str(exc)
    return (f"checkpoint {path} not written ({why}); storage {path.parent}: {free}. The previous checkpoint is kept. "
            "Fix: free space on that storage (or set a larger volume), then run the same command again to resume")


def remove_partial_checkpoints(output_dir: Path) -> None:
    """Temporary checkpoint files a failed or killed writer left (`.ckpt-<step>.pt.tmp-<pid>`)."""
    for tmp in output_dir.glob(".ckpt-*.pt.tmp-*"):
        with contextlib.suppress(OSError):
            tmp.unlink()


def latest_checkpoint(output_dir: Path) -> Path | None:
    found = [(int(m.group(1)), f) for f in output_dir.glob("ckpt-*.pt") if (m := CKPT_RE.match(f.name))]
    return max(found)[1] if found else None


# --------------------------------------------------------------------------------------------------- trainer


class Trainer:
    """Everything one rank holds; `train_step()` is shared with the benchmark."""

    def __init__(self, args: argparse.Namespace) -> None:
        import torch

        from sccnlp.node.bert import data as bdata
        from sccnlp.node.bert import model as bmodel
        from sccnlp.node.bert import watchdog
        from sccnlp.node.bert.distributed import Comm
        from sccnlp.node.bert.optim import build_optimizer, build_scheduler

        self.args = args
        self.torch = torch
        if not args.synthetic and not args.data_dir:
            raise SccError("no data: pass --data-dir <prepared phase directory> (or --synthetic for a benchmark)")
        for name in ("batch_size", "steps", "accum_steps", "log_interval"):
            if getattr(args, name) < 1:
                raise SccError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
        bmodel.size_name(args.model)  # unknown model -> one clear line, before any process group starts
        meta = bdata.read_meta(args.data_dir) if not args.synthetic else None  # checked before any rendezvous

        self.comm = Comm(args.backend, timeout_s=args.collective_timeout)
        self.rank, self.world = self.comm.rank, self.comm.world_size
        self.guard = watchdog.start_for(args, self.rank, self.world)
        self.device = self.comm.device
        self.is_cuda = self.device.type == "cuda"

        if args.global_batch_size:
            per_step = args.batch_size * self.world
            if args.global_batch_size % per_step:
                raise SccError(f"--global-batch-size {args.global_batch_size} is not a multiple of --batch-size "
                               f"{args.batch_size} x {self.world} ranks = {per_step}: choose a global batch size "
                               f"that is (e.g. {max(1, args.global_batch_size // per_step) * per_step}) or change "
                               "--batch-size")
            self.accum = args.global_batch_size // per_step
        else:
            self.accum = args.accum_steps
        self.global_batch = args.batch_size * self.world * self.accum

        # data
        if meta is not None:
            self.seq_len, self.max_pred, data_vocab = meta.seq_len, meta.max_pred, meta.vocab_size
        else:
            self.seq_len = args.seq_len
            self.max_pred = args.max_pred or (20 if self.seq_len <= 128 else 80)
            data_vocab = 30522
        if args.vocab_size and args.vocab_size < data_vocab:
            raise SccError(f"vocabulary size mismatch: --vocab-size {args.vocab_size} is smaller than the data's "
                           f"vocab_size {data_vocab} ({args.data_dir}/meta.json): token ids would fall outside the "
                           "embedding; drop --vocab-size (it then follows meta.json) or prepare the data with the "
                           "model's vocabulary")
        self.vocab_size = args.vocab_size or bmodel.pad_vocab(data_vocab)

        seed = args.seed + 1000 * self.rank
        random.seed(seed)
        torch.manual_seed(seed)

        self.fp8 = args.precision == "fp8"
        if self.fp8:
            problem = fp8_problem_here(self.device)
            if problem:
                raise SccError(problem)
        self.amp = args.precision in ("bf16", "fp8") or (args.precision == "auto" and self.is_cuda)
        if self.amp and not self.is_cuda:
            raise SccError("--precision bf16 needs a GPU; this rank has none (use --precision fp32 or auto)")
        if self.is_cuda:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True

        # model
        self.packed = bool(meta is not None and meta.packed)
        self.own = args.encoder == "own"
        if self.fp8 and not self.own:
            raise SccError("--precision fp8 is a setting of the project's encoder: drop --encoder hf")
        if self.packed and not self.own:
            raise SccError(f"{args.data_dir} holds packed rows (several pairs a row): they need --encoder own "
                           "(the default); --encoder hf reads unpacked shards only")
        if args.full_head and self.own:
            raise SccError("--full-head is a setting of the old path: add --encoder hf")
        self.config = bmodel.build_config(args.model, self.vocab_size, self.seq_len, args.dropout, args.attn,
                                          args.attn_dropout)
        mode = args.compile if args.compile != "auto" else ("default" if self.is_cuda else "none")
        self.compile_mode = mode
        if mode != "none":
            for knob in ("recompile_limit", "cache_size_limit"):
                if hasattr(torch._dynamo.config, knob):
                    setattr(torch._dynamo.config, knob, 64)
        torch.manual_seed(args.seed)  # identical initial weights on every rank
        with torch.device(self.device):  # initialise on the GPU: seconds instead of a minute for BERT-large
            if self.own:
                from sccnlp.node.bert.encoder import BertPretrainer, fp8_linear, linear_bf16

                self.model = BertPretrainer(self.config, torch.bfloat16 if self.amp else torch.float32,
                                            compile_mode=mode, linear=fp8_linear() if self.fp8 else linear_bf16)
            else:
                self.model = bmodel.build_model(self.config, full_head=args.full_head)
        torch.manual_seed(seed)
        self.param_names = {p: n for n, p in self.model.named_parameters()}
        self.flops_per_token = bmodel.flops_per_token(self.config, self.seq_len)
        self.peak = peak_flops(self.device, args.peak_tflops)

        self.ddp = None
        fwd_module: Any = self.model
        if args.backend == "torch" and self.world > 1:
            from torch.nn.parallel import DistributedDataParallel

            self.ddp = DistributedDataParallel(self.model, device_ids=[self.device] if self.is_cuda else None,
                                               bucket_cap_mb=100, gradient_as_bucket_view=True)
            fwd_module = self.ddp
        if mode != "none" and not self.own:  # the own encoder compiles its layer function itself
            self.forward = torch.compile(fwd_module, mode=None if mode == "default" else mode, dynamic=False)
        else:
            self.forward = fwd_module

        # A torch Optimizer, or Horovod's DistributedOptimizer around it (synchronize(), skip_synchronize()).
        self.optimizer: Any = build_optimizer(args.optimizer, self.model, args.lr, args.weight_decay,
                                              self.device, compiled=(mode != "none" and self.is_cuda
                                                                     and not args.no_compile_optimizer))
        if self.comm.hvd is not None:
            hvd = self.comm.hvd
            self.optimizer = hvd.DistributedOptimizer(self.optimizer, named_parameters=self.model.named_parameters(),
                                                      backward_passes_per_step=self.accum)
        self.scheduler = build_scheduler(self.optimizer, args.steps, args.warmup, args.poly_power)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        # device-side record of non-finite gradients, read every log interval (no host sync a step)
        self._bad_seen = torch.zeros((), dtype=torch.bool, device=self.device)
        self._bad_step = torch.zeros((), dtype=torch.long, device=self.device)
        self._bad_mask = torch.zeros(len(self.params), dtype=torch.bool, device=self.device)
        self._skipped_dev = torch.zeros((), dtype=torch.long, device=self.device)
        self._window_tokens = 0
        self._window_masked = 0

        # data loader
        if meta is not None:
            self.shards = bdata.ShardSet(args.data_dir)
            pad = args.pad_multiple if args.pad_multiple else max(64, self.seq_len // 4)
            self.loader: Any = bdata.RankLoader(self.shards, self.rank, self.world, args.batch_size, args.seed,
                                                pad_multiple=max(pad, 0))
            if args.log_data_ranges:
                print(f"rank={self.rank} world={self.world} data_range=[{self.loader.start},{self.loader.end}) "
                      f"records={self.loader.end - self.loader.start} total={len(self.shards)}", flush=True)
        else:
            self.loader = bdata.SyntheticLoader(args.batch_size, self.seq_len, self.max_pred, min(data_vocab,
                                                self.vocab_size), self.device, seed=args.seed + self.rank)

        self.step = 0
        self.skipped = 0
        self.output_dir = Path(args.output_dir) if args.output_dir else None
        if self.output_dir is not None and self.rank == 0:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            remove_partial_checkpoints(self.output_dir)
        self.export: Any = None  # sccnlp.node.textfile.TrainingExport on rank 0 with --textfile-dir
        self._maybe_resume()
        if args.textfile_dir and self.rank == 0:
            from sccnlp.node.textfile import TrainingExport

            run = self.output_dir.name if self.output_dir is not None else "bert"
            self.export = TrainingExport(args.textfile_dir, run, self.log)
            self.export.beat(self.step)
        if self.comm.hvd is not None:
            self.comm.hvd.broadcast_parameters(self.model.state_dict(), root_rank=0)
            self.comm.hvd.broadcast_optimizer_state(self.optimizer, root_rank=0)
        self._inject = self._parse_inject(args.inject_nonfinite)

    # ---------------------------------------------------------------------------------------------- pieces

    def log(self, msg: str, all_ranks: bool = False) -> None:
        if all_ranks or self.rank == 0:
            prefix = f"[rank {self.rank}] " if all_ranks and self.world > 1 else ""
            print(prefix + msg, flush=True)

    def _parse_inject(self, spec: str) -> tuple[str, int] | None:
        if not spec:
            return None
        name, _unused, step = spec.rpartition("@")
        names = set(self.param_names.values())
        if name not in names or not step.isdigit():
            raise SccError(f"--inject-nonfinite {spec!r}: expected PARAM@STEP with PARAM one of the model's "
                           f"parameters (e.g. bert.encoder.layer.0.attention.self.query.weight)")
        target = int(step)
        param = next(p for p, n in self.param_names.items() if n == name)
        param.register_hook(lambda g: g * float("nan") if self.step + 1 == target else g)
        return name, target

    def _to_device(self, batch: dict[str, Any]) -> dict[str, Any]:
        if not self.is_cuda or batch["input_ids"].is_cuda:
            return batch
        return {k: (v.pin_memory().to(self.device, non_blocking=True) if hasattr(v, "pin_memory") else v)
                for k, v in batch.items()}

    def _autocast(self) -> Any:
        if self.amp and not self.own:
            return self.torch.autocast("cuda", dtype=self.torch.bfloat16)
        return contextlib.nullcontext()

    def _micro_step(self, batch: dict[str, Any], sync: bool) -> tuple[Any, Any, Any]:
        torch = self.torch
        batch = self._to_device(batch)
        ids = batch["input_ids"]
        self._window_tokens += int(batch.get("real_tokens", ids.numel()))
        self._window_masked += int(batch.get("masked", 0))
        ctx = self.ddp.no_sync() if (self.ddp is not None and not sync) else contextlib.nullcontext()
        with ctx:
            if self.own:
                loss, mlm, nsp = self.forward(ids, batch["token_type_ids"], batch["mlm_positions"],
                                              batch["mlm_labels"], batch["nsp_labels"],
                                              pair_ids=batch.get("pair_ids"), position_ids=batch.get("position_ids"),
                                              pair_starts=batch.get("pair_starts"))
            else:
                mask = None
                if not batch["full"]:
                    mask = (torch.arange(ids.size(1), device=ids.device)[None, :] < batch["lengths"][:, None]).long()
                with self._autocast():
                    loss, mlm, nsp = self.forward(ids, batch["token_type_ids"], mask, batch["mlm_positions"],
                                                  batch["mlm_labels"], batch["nsp_labels"])
            (loss / self.accum).backward()
        return loss.detach(), mlm, nsp

    def nonfinite_params(self) -> list[str]:
        torch = self.torch
        return [self.param_names[p] for p in self.params
                if p.grad is not None and not bool(torch.isfinite(p.grad).all())]

    def train_step(self, batches: Sequence[dict[str, Any]]) -> tuple[Any, Any, Any, bool]:
        """One optimizer step over `accum` micro-batches, with no host synchronisation: a non-finite gradient is
        recorded on the device (which step, which parameters) and the optimizer skips the step there
        (`found_inf`); `check_nonfinite()` reads the record every log interval. Returns (loss, mlm, nsp) device
        tensors and True (whether the step was applied is known only at the next check)."""
        from sccnlp.node.bert.optim import clip_by_norm, grad_norms

        torch = self.torch
        losses = [self._micro_step(b, sync=(i == len(batches) - 1)) for i, b in enumerate(batches)]
        loss = torch.stack([x[0] for x in losses]).mean()
        mlm = torch.stack([x[1] for x in losses]).mean()
        nsp = torch.stack([x[2] for x in losses]).mean()
        if self.comm.hvd is not None:
            self.optimizer.synchronize()
        grads = [p.grad for p in self.params if p.grad is not None]
        norms = grad_norms(grads)
        total = torch.linalg.vector_norm(norms)
        bad = ~torch.isfinite(norms)
        found = bad.any()
        if len(grads) == len(self.params):
            self._bad_mask = torch.where(self._bad_seen, self._bad_mask, bad)
        self._bad_step = torch.where(self._bad_seen, self._bad_step, self.step + 1)
        self._bad_seen = self._bad_seen | found
        self._skipped_dev += found.long()
        clip_by_norm(grads, total, self.args.max_grad_norm)
        self.optimizer.found_inf = found.float()
        if self.comm.hvd is not None:
            with self.optimizer.skip_synchronize():
                self.optimizer.step()
        else:
            self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return loss, mlm, nsp, True

    def check_nonfinite(self, loss: Any = None) -> None:
        """Read the device record of non-finite gradients (one sync, at a log interval); stop or report."""
        if not bool(self._bad_seen):
            return
        names = [self.param_names[p] for p, b in zip(self.params, self._bad_mask.tolist()) if b]
        step = int(self._bad_step)
        skipped = int(self._skipped_dev)
        new = skipped - self.skipped
        self.skipped = skipped
        what = names[0] if names else "(no single parameter: the norm overflowed)"
        more = f" and {len(names) - 1} more ({', '.join(names[1:4])}{', ...' if len(names) > 4 else ''})" \
            if len(names) > 1 else ""
        loss_s = f"; loss={float(loss):.4g}" if loss is not None else ""
        msg = f"non-finite gradient at step {step}: {what}{more}{loss_s}"
        if self.args.nan_policy == "stop":
            self.log(msg + "; stopping (use --nan-policy skip to skip such steps, or lower --lr)", all_ranks=True)
            raise NonFiniteGradient(msg)
        self.log(msg + f"; step skipped (--nan-policy skip; {new} step(s) skipped since the last report)",
                 all_ranks=True)
        self._bad_seen = self.torch.zeros_like(self._bad_seen)

    # ---------------------------------------------------------------------------------------------- checkpoints

    def _rng_state(self) -> dict[str, Any]:
        import numpy as np

        torch = self.torch
        return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state() if self.is_cuda else None}

    def _set_rng_state(self, state: dict[str, Any]) -> None:
        import numpy as np

        torch = self.torch
        random.setstate(state["python"])
        np.random.set_state(state["numpy"])
        torch.set_rng_state(state["torch"])
        if self.is_cuda and state.get("cuda") is not None:
            torch.cuda.set_rng_state(state["cuda"])

    def model_identity(self) -> dict[str, Any]:
        return {"model": self.args.model, "vocab_size": self.vocab_size, "seq_len": self.seq_len,
                "max_pred": self.max_pred}

    def save_checkpoint(self) -> Path | None:
        """Rank 0 writes ckpt-<step>.pt atomically (temporary file + fsync + rename); every rank sends its RNG."""
        if self.output_dir is None:
            return None
        torch = self.torch
        rngs = self.comm.all_gather_object(self._rng_state())
        path = self.output_dir / f"ckpt-{self.step}.pt"
        if self.rank == 0:
            opt = self.optimizer
            state = {"step": self.step, "skipped": self.skipped, "identity": self.model_identity(),
                     "world_size": self.world, "global_batch": self.global_batch,
                     "model": self.model.state_dict(), "optimizer": opt.state_dict(),
                     "scheduler": self.scheduler.state_dict(), "data": self.loader.position_after_handed(),
                     "rng": rngs, "args": vars(self.args)}
            tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            try:
                with open(tmp, "wb") as fh:
                    torch.save(state, fh)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except OSError as exc:  # ENOSPC, EIO, EDQUOT, ...: stop now, every rank, not at the next collective
                with contextlib.suppress(OSError):
                    tmp.unlink()
                failure = storage_error_line(path, exc)
            else:
                failure = ""
                self._prune()
                self.log(f"saved checkpoint {path}")
                if self.export is not None:
                    self.export.checkpoint()
        else:
            failure = ""
        # Rank 0's outcome reaches every rank (and serves as the barrier): all stop with the same message.
        failure = str(self.comm.all_gather_object(failure)[0])
        if failure:
            raise CheckpointWriteFailed(failure, echo=self.rank == 0)
        return path

    def _prune(self) -> None:
        assert self.output_dir is not None
        found = sorted((int(m.group(1)), f) for f in self.output_dir.glob("ckpt-*.pt") if (m := CKPT_RE.match(f.name)))
        for _unused, f in found[:-self.args.keep_checkpoints] if self.args.keep_checkpoints > 0 else []:
            f.unlink(missing_ok=True)

    def _maybe_resume(self) -> None:
        args = self.args
        if args.resume == "none":
            return
        if args.resume == "auto":
            if self.output_dir is None:
                return
            self.comm.barrier()
            path = latest_checkpoint(self.output_dir) if self.output_dir.is_dir() else None
            if path is None:
                self.log(f"no checkpoint in {self.output_dir}: starting from step 0")
                return
        else:
            path = Path(args.resume)
            if not path.is_file():
                raise SccError(f"--resume {path}: no such checkpoint; use --resume auto or a ckpt-<step>.pt path")
        torch = self.torch
        try:
            state = torch.load(path, map_location=self.device, weights_only=False)
        except Exception as exc:  # a truncated or foreign file
            raise SccError(f"cannot read checkpoint {path} ({type(exc).__name__}: {exc}): delete it to resume from "
                           "the previous one") from None
        if state.get("identity") != self.model_identity():
            raise SccError(f"checkpoint {path} was written for {state.get('identity')}, this run is "
                           f"{self.model_identity()}: use another --output-dir or the same model/data settings")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step = int(state["step"])
        self.skipped = int(state.get("skipped", 0))
        if state["world_size"] == self.world:
            self.loader.load_state_dict(state["data"])
            self._set_rng_state(state["rng"][self.rank])
        else:
            data = state["data"]
            old_records = max(int(data.get("end", 0)) - int(data.get("start", 0)), 1)
            done = min(int(data["batch_in_epoch"]) * args.batch_size / old_records, 1.0)
            per = getattr(self.loader, "batches_per_epoch", 0)
            self.loader.load_state_dict({"epoch": int(data["epoch"]), "batch_in_epoch": int(done * per)})
            self.log(f"checkpoint written by {state['world_size']} ranks, now {self.world}: data continues at epoch "
                     f"{data['epoch']}, {done:.1%} of it, in each rank's new slice; RNG re-seeded")
        self.log(f"resumed from step {self.step} ({path})")

    # ---------------------------------------------------------------------------------------------- loop

    def _record(self, step_losses: list[tuple[Any, Any, Any]], seconds: float, steps: int) -> dict[str, Any]:
        torch = self.torch
        stacked = torch.stack([torch.stack(x) for x in step_losses]).float().mean(0).tolist()
        from sccnlp.node.bert.model import step_flops

        seqs = steps * self.global_batch
        seq_s = seqs / seconds if seconds > 0 else 0.0
        per_gpu = seq_s / self.world
        tokens, masked = self._window_tokens, self._window_masked  # this rank's real (non-padding) tokens
        self._window_tokens = self._window_masked = 0
        flops = step_flops(self.config, self.seq_len, tokens, masked)
        mfu = flops / seconds / self.peak if self.peak and seconds > 0 else None
        mem = torch.cuda.max_memory_allocated(self.device) / 2**30 if self.is_cuda else None
        return {"step": self.step, "loss": stacked[0], "mlm": stacked[1], "nsp": stacked[2],
                "lr": self.scheduler.get_last_lr()[0], "seq_per_s": seq_s, "seq_per_s_gpu": per_gpu, "mfu": mfu,
                "tok_per_s": tokens * self.world / seconds if seconds > 0 else 0.0, "mem_gib": mem,
                "skipped": self.skipped, "time": time.time(),
                "world_size": self.world, "global_batch": self.global_batch}

    def sync(self) -> None:
        if self.is_cuda:
            self.torch.cuda.synchronize(self.device)

    def describe(self) -> str:
        return (f"model={self.args.model} params={sum(p.numel() for p in self.params) / 1e6:.1f}M "
                f"seq_len={self.seq_len} max_pred={self.max_pred} vocab={self.vocab_size} ranks={self.world} "
                f"batch/gpu={self.args.batch_size} accum={self.accum} global_batch={self.global_batch} "
                f"optimizer={self.args.optimizer} precision={'fp8' if self.fp8 else 'bf16' if self.amp else 'fp32'} "
                f"compile={self.compile_mode} encoder={self.args.encoder} packed={self.packed} "
                f"backend={self.args.backend}/"
                f"{'nccl' if self.is_cuda else 'gloo'} device={self.device} "
                f"data={'synthetic' if self.args.synthetic else self.args.data_dir} "
                f"flops/token={self.flops_per_token:.3g}")

    def agree_on_action(self) -> int:
        """Rank 0's decision, the same on every rank (one small all-reduce a log interval): 0 = go on,
        CHECKPOINT = the --ckpt-seconds interval passed, STOP = the client lease expired (checkpoint, then stop)."""
        action = 0
        if self.rank == 0 and self.step < self.args.steps:
            if self.guard is not None and self.guard.stop_reason:
                action = STOP
            elif self.args.ckpt_seconds and time.monotonic() - self.last_ckpt >= self.args.ckpt_seconds:
                action = CHECKPOINT
        if self.world > 1:
            flag = self.torch.tensor([float(action)], device=self.device)
            action = int(self.comm.all_reduce_sum(flag).item())
        return action

    def run(self) -> int:
        args = self.args
        self.log(self.describe())
        knobs = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(ENV_KNOB_PREFIXES))
        if knobs:
            self.log("env: " + " ".join(knobs))
        metrics = self.output_dir / "metrics.jsonl" if self.output_dir is not None and self.rank == 0 else None
        it = iter(self.loader)
        window: list[tuple[Any, Any, Any]] = []
        self.sync()
        t0, window_start_step = time.perf_counter(), self.step
        self.last_ckpt = time.monotonic()
        while self.step < args.steps:
            batches = [next(it) for _round in range(self.accum)]
            loss, mlm, nsp, _unused = self.train_step(batches)
            window.append((loss, mlm, nsp))
            if self.guard is not None:
                self.guard.step = self.step
            if self.step % args.log_interval == 0 or self.step == args.steps:
                self.check_nonfinite(loss)
                self.sync()
                now = time.perf_counter()
                rec = self._record(window, now - t0, self.step - window_start_step)
                if self.rank == 0:
                    print(format_line(rec), flush=True)
                    if self.export is not None:
                        self.export.beat(self.step, rec["loss"], rec["seq_per_s"])
                    if metrics is not None:
                        try:
                            with open(metrics, "a") as fh:
                                fh.write(json.dumps(rec) + "\n")
                        except OSError as exc:  # the run goes on; a checkpoint the storage refuses stops it
                            self.log(f"metrics line not written to {metrics} ({exc})")
                window = []
                t0, window_start_step = time.perf_counter(), self.step
                action = self.agree_on_action()
                if action:
                    self.save_checkpoint()
                    self.last_ckpt = time.monotonic()
                    if action == STOP:
                        why = (self.guard.stop_reason if self.guard is not None else "") or \
                            "the sccnlp train client stopped following the run (rank 0's lease check)"
                        raise ClientGone(f"{why}: stopped at step {self.step} after a checkpoint; run the same "
                                         "command again to resume")
                    t0, window_start_step = time.perf_counter(), self.step
                    continue
            if args.ckpt_interval and self.step % args.ckpt_interval == 0 and self.step < args.steps:
                self.check_nonfinite()  # never checkpoint weights a non-finite step touched unseen
                self.save_checkpoint()
                self.last_ckpt = time.monotonic()
                t0, window_start_step = time.perf_counter(), self.step
        self.check_nonfinite()
        if self.output_dir is not None and not (self.output_dir / f"ckpt-{self.step}.pt").exists():
            self.save_checkpoint()
        self.log(f"done: step={self.step} skipped={self.skipped}")
        if self.export is not None:
            self.export.beat(self.step, completed=True)
        return 0


def whole_line_output() -> None:
    """Each line in one write (line buffered, not write-through even under PYTHONUNBUFFERED): mpirun --tag-output
    tags every chunk it reads, so a line written in pieces showed a rank's tag glued to its end."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(line_buffering=True, write_through=False)


def main(argv: Sequence[str] | None = None) -> int:
    from sccnlp.node.bert import watchdog

    whole_line_output()
    args = build_parser().parse_args(argv)
    trainer = None
    try:
        trainer = Trainer(args)
        code = trainer.run()
        watchdog.finish("done")
        return code
    except SccError as exc:
        if getattr(exc, "echo", True):
            print(f"sccnlp.node.bert.train: error: {exc}", file=sys.stderr, flush=True)
        watchdog.finish("error", str(exc))
        return exc.exit_code
    except RuntimeError as exc:
        if not watchdog.is_comm_error(exc):
            watchdog.finish("error", f"{type(exc).__name__}: {exc}")
            raise
        # A peer is gone: one line instead of a traceback, no process-group teardown that would wait for it.
        msg = watchdog.comm_error_line(exc)
        print(f"sccnlp.node.bert.train: error: {msg}", file=sys.stderr, flush=True)
        watchdog.finish("error", msg)
        trainer = None
        return watchdog.EXIT_COMM_ERROR
    finally:
        if trainer is not None:
            trainer.comm.close()


if __name__ == "__main__":
    _code = main()
    # The run is over and its results, checkpoint and heartbeat written: leave without the interpreter's teardown,
    # where the C++ destructors of torch's and gloo's threads sometimes abort ("terminate called without an active
    # exception", exit 134 instead of the code above, seen on the test bed and in a two-rank unit test).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_code)
