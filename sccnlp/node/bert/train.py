"""BERT pretraining trainer: `python -m sccnlp.node.bert.train --data-dir ... --output-dir ...`, alone or under mpirun.

One process per GPU (rank/size from the launcher's environment, see `sccnlp.node.bert.distributed`), torch.distributed
(NCCL on GPUs, gloo on CPU) or a Horovod API (Horovod, AIACC), the project's encoder (`sccnlp.node.bert.encoder`: bf16
compute over fp32 master weights on GPU), LAMB or fused AdamW, gradient accumulation, warmup + poly decay, gradient
clipping, NaN/Inf detection that names the parameter, atomic checkpoints on shared storage with `--resume auto`,
metrics as JSON lines and one stable human line per log interval.

Read from the top: the command line, the builders (communication, data shape, model, optimizer, data), then
`Trainer`: its constructor calls the builders in order, `train_step` is one optimizer step, `run` is the main loop.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from sccnlp.node.bert import checkpoint, optim, watchdog
from sccnlp.node.bert import data as bdata
from sccnlp.node.bert import model as bmodel
from sccnlp.node.bert.distributed import Comm
from sccnlp.node.bert.encoder import BertPretrainer, fp8_linear, linear_bf16
from sccnlp.node.bert.metrics import format_line, peak_flops_for
from sccnlp.node.errors import SccError

ENV_KNOB_PREFIXES = ("NCCL_", "PERSEUS_", "HOROVOD_", "OMPI_MCA_", "UCX_")
SYNTHETIC_VOCAB = 30522  # BERT's uncased WordPiece vocabulary: the token range of --synthetic data


class NonFiniteGradient(SccError):
    exit_code = 3


class ClientGone(SccError):
    exit_code = watchdog.EXIT_CLIENT_GONE


class CheckpointWriteFailed(SccError):
    """Rank 0 could not write a checkpoint; every rank stops with it, and only rank 0 prints it (one message)."""

    exit_code = watchdog.EXIT_STORAGE

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
                   help="own = the project's fused encoder (sccnlp.node.bert.encoder, bf16 over fp32 master weights), "
                        "the trainer's only one; hf is refused: the Hugging Face model is the benchmark's peer "
                        "(python -m sccnlp.node.bert.bench --peer hf-compile)")
    p.add_argument("--attn", default="sdpa", choices=("sdpa", "eager"),
                   help="attention of the Hugging Face model; eager is refused like --encoder hf")
    p.add_argument("--full-head", action="store_true",
                   help="the Hugging Face model's MLM head on every position; refused like --encoder hf")
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


def check_args(args: argparse.Namespace) -> None:
    """Refuse what needs no process group to refuse: one line each, with the fix."""
    if not args.synthetic and not args.data_dir:
        raise SccError("no data: pass --data-dir <prepared phase directory> (or --synthetic for a benchmark)")
    for name in ("batch_size", "steps", "accum_steps", "log_interval"):
        if getattr(args, name) < 1:
            raise SccError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    bmodel.size_name(args.model)
    hf_only = [flag for flag, used in (("--encoder hf", args.encoder != "own"), ("--attn eager", args.attn != "sdpa"),
                                       ("--full-head", args.full_head)) if used]
    if hf_only:
        raise SccError(f"{' '.join(hf_only)}: the trainer has one encoder (sccnlp.node.bert.encoder); the Hugging Face "
                       "model is measured as the benchmark's peer: python -m sccnlp.node.bert.bench --peer hf-compile")


# --------------------------------------------------------------------------------------------------- builders


def accumulation_steps(args: argparse.Namespace, world: int) -> int:
    """Micro-batches per optimizer step: from --global-batch-size when given, else --accum-steps."""
    if not args.global_batch_size:
        return int(args.accum_steps)
    per_step = args.batch_size * world
    if args.global_batch_size % per_step:
        raise SccError(f"--global-batch-size {args.global_batch_size} is not a multiple of --batch-size "
                       f"{args.batch_size} x {world} ranks = {per_step}: choose a global batch size that is (e.g. "
                       f"{max(1, args.global_batch_size // per_step) * per_step}) or change --batch-size")
    return int(args.global_batch_size // per_step)


@dataclass(frozen=True)
class DataShape:
    """What the data decides about the model: row length, predictions a row, vocabulary rows."""

    seq_len: int
    max_pred: int
    data_vocab: int  # token ids the data holds
    vocab_size: int  # embedding rows (data_vocab padded, or --vocab-size)
    packed: bool  # several sentence pairs a row


def data_shape(args: argparse.Namespace, meta: bdata.ShardMeta | None) -> DataShape:
    if meta is not None:
        seq_len, max_pred, data_vocab = meta.seq_len, meta.max_pred, meta.vocab_size
    else:
        seq_len = args.seq_len
        max_pred = args.max_pred or (20 if seq_len <= 128 else 80)
        data_vocab = SYNTHETIC_VOCAB
    if args.vocab_size and args.vocab_size < data_vocab:
        raise SccError(f"vocabulary size mismatch: --vocab-size {args.vocab_size} is smaller than the data's "
                       f"vocab_size {data_vocab} ({args.data_dir}/meta.json): token ids would fall outside the "
                       "embedding; drop --vocab-size (it then follows meta.json) or prepare the data with the "
                       "model's vocabulary")
    return DataShape(seq_len, max_pred, data_vocab, args.vocab_size or bmodel.pad_vocab(data_vocab),
                     bool(meta is not None and meta.packed))


def choose_precision(args: argparse.Namespace, device: Any) -> str:
    """fp32, bf16 (bf16 compute over fp32 master weights: --precision bf16, or auto on a GPU) or fp8 (bf16 with
    the layers' matrix products in float8), refused where this rank cannot run it."""
    is_cuda = device.type == "cuda"
    if args.precision == "fp8":
        problem = fp8_problem_here(device)
        if problem:
            raise SccError(problem)
        return "fp8"
    if args.precision == "bf16" or (args.precision == "auto" and is_cuda):
        if not is_cuda:
            raise SccError("--precision bf16 needs a GPU; this rank has none (use --precision fp32 or auto)")
        return "bf16"
    return "fp32"


def fp8_problem_here(device: Any) -> str:
    """sccnlp.node.bert.model.fp8_problem for this rank's device and venv."""
    name, capability = "", None
    if device.type == "cuda":
        name, capability = torch.cuda.get_device_name(device), torch.cuda.get_device_capability(device)
    try:
        import torchao.float8  # noqa: F401
    except ImportError as exc:
        missing = str(exc)
    else:
        missing = ""
    return bmodel.fp8_problem(device.type, name, capability, missing)


def compile_mode(args: argparse.Namespace, is_cuda: bool) -> str:
    """torch.compile mode of the encoder's layer function: --compile, auto = default on GPU, none on CPU."""
    mode = args.compile if args.compile != "auto" else ("default" if is_cuda else "none")
    if mode != "none":
        for knob in ("recompile_limit", "cache_size_limit"):  # one compiled graph per padded row length
            if hasattr(torch._dynamo.config, knob):
                setattr(torch._dynamo.config, knob, 64)
    return mode


def build_model(args: argparse.Namespace, shape: DataShape, device: Any, precision: str,
                mode: str) -> tuple[BertPretrainer, Any]:
    """The encoder with the pretraining heads, initialised on the device (seconds, not a minute, for BERT-large)
    from --seed, so every rank starts from the same weights; returns it with its BertConfig."""
    config = bmodel.build_config(args.model, shape.vocab_size, shape.seq_len, args.dropout,
                                 attn_dropout=args.attn_dropout)
    torch.manual_seed(args.seed)
    with torch.device(device):
        model = BertPretrainer(config, torch.float32 if precision == "fp32" else torch.bfloat16, compile_mode=mode,
                               linear=fp8_linear() if precision == "fp8" else linear_bf16)
    return model, config


def build_ddp(model: BertPretrainer, comm: Comm, backend: str) -> Any:
    """DistributedDataParallel around the model for torch.distributed with more than one rank, else None (a Horovod
    API averages the gradients in its optimizer)."""
    if backend != "torch" or comm.world_size == 1:
        return None
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[comm.device] if comm.device.type == "cuda" else None,
                                   bucket_cap_mb=100, gradient_as_bucket_view=True)


def build_optimizer(args: argparse.Namespace, model: BertPretrainer, comm: Comm, accum: int,
                    compiled: bool) -> tuple[Any, Any]:
    """The optimizer (a torch Optimizer, or Horovod's DistributedOptimizer around it; LAMB's update compiled when
    `compiled`) and its LR schedule."""
    optimizer: Any = optim.build_optimizer(args.optimizer, model, args.lr, args.weight_decay, comm.device,
                                           compiled=compiled)
    if comm.hvd is not None:
        optimizer = comm.hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                                  backward_passes_per_step=accum)
    return optimizer, optim.build_scheduler(optimizer, args.steps, args.warmup, args.poly_power)


def build_loader(args: argparse.Namespace, shape: DataShape, comm: Comm) -> Any:
    """This rank's batches: its slice of the prepared shards, or synthetic full-length batches on the device."""
    if args.synthetic:
        return bdata.SyntheticLoader(args.batch_size, shape.seq_len, shape.max_pred,
                                     min(shape.data_vocab, shape.vocab_size), comm.device, seed=args.seed + comm.rank)
    shards = bdata.ShardSet(args.data_dir)
    pad = args.pad_multiple if args.pad_multiple else max(64, shape.seq_len // 4)
    loader = bdata.RankLoader(shards, comm.rank, comm.world_size, args.batch_size, args.seed,
                              pad_multiple=max(pad, 0))
    if args.log_data_ranges:
        print(f"rank={comm.rank} world={comm.world_size} data_range=[{loader.start},{loader.end}) "
              f"records={loader.end - loader.start} total={len(shards)}", flush=True)
    return loader


def build_export(args: argparse.Namespace, rank: int, output_dir: Path | None,
                 log: Callable[[str], None]) -> Any:
    """Rank 0's heartbeat for node_exporter's textfile collector (sccnlp.node.textfile.TrainingExport) with
    --textfile-dir, else None."""
    if not args.textfile_dir or rank != 0:
        return None
    from sccnlp.node.textfile import TrainingExport

    return TrainingExport(args.textfile_dir, output_dir.name if output_dir is not None else "bert", log)


def peak_flops(device: Any, override_tflops: float = 0.0) -> float:
    """Dense bf16 peak per GPU from its name (sccnlp.node.bert.metrics); 0 when unknown or on CPU."""
    if override_tflops:
        return override_tflops * 1e12
    if device.type != "cuda":
        return 0.0
    return peak_flops_for(torch.cuda.get_device_name(device))


# --------------------------------------------------------------------------------------------------- one rank


class StepLosses(NamedTuple):
    """One optimizer step's mean losses over its micro-batches, as device tensors (reading them syncs)."""

    loss: Any
    mlm: Any
    nsp: Any


@dataclass
class Counted:
    """Real (non-padding) tokens and masked predictions this rank trained on since the last take()."""

    tokens: int = 0
    masked: int = 0

    def take(self) -> tuple[int, int]:
        got = (self.tokens, self.masked)
        self.tokens = self.masked = 0
        return got


class NonFiniteRecord:
    """Which step and which parameters first had a non-finite gradient since the last check, and how many steps the
    optimizer skipped, kept on the device: recording costs no host synchronisation; reading it (`Trainer.
    check_nonfinite`, once a log interval) does."""

    def __init__(self, params: int, device: Any) -> None:
        self.seen = torch.zeros((), dtype=torch.bool, device=device)
        self.step = torch.zeros((), dtype=torch.long, device=device)
        self.mask = torch.zeros(params, dtype=torch.bool, device=device)
        self.skipped = torch.zeros((), dtype=torch.long, device=device)

    def add(self, norms: Any, step: int, every_param: bool) -> Any:
        """Record the per-parameter gradient norms of `step`; returns the device flag 'this step is not finite'."""
        bad = ~torch.isfinite(norms)
        found = bad.any()
        if every_param:
            self.mask = torch.where(self.seen, self.mask, bad)
        self.step = torch.where(self.seen, self.step, step)
        self.seen = self.seen | found
        self.skipped += found.long()
        return found

    def clear(self) -> None:
        self.seen = torch.zeros_like(self.seen)


class Trainer:
    """One rank of the run: the parts the builders make, one optimizer step (`train_step`, shared with the
    benchmark), checkpoints, and the main loop (`run`)."""

    def __init__(self, args: argparse.Namespace) -> None:
        check_args(args)
        meta = bdata.read_meta(args.data_dir) if not args.synthetic else None  # checked before any rendezvous
        self.args = args
        self.comm = Comm(args.backend, timeout_s=args.collective_timeout)
        self.rank, self.world, self.device = self.comm.rank, self.comm.world_size, self.comm.device
        self.is_cuda = self.device.type == "cuda"
        self.guard = watchdog.start_for(args, self.rank, self.world)
        self.accum = accumulation_steps(args, self.world)
        self.global_batch = args.batch_size * self.world * self.accum
        shape = data_shape(args, meta)
        self.seq_len, self.max_pred, self.vocab_size, self.packed = (shape.seq_len, shape.max_pred,
                                                                     shape.vocab_size, shape.packed)

        self.seed = args.seed + 1000 * self.rank  # this rank's randomness (dropout, Python, NumPy)
        random.seed(self.seed)
        torch.manual_seed(self.seed)
        self.precision = choose_precision(args, self.device)
        if self.is_cuda:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        self.compile_mode = compile_mode(args, self.is_cuda)

        self.model, self.config = build_model(args, shape, self.device, self.precision, self.compile_mode)
        torch.manual_seed(self.seed)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.param_names = {p: n for n, p in self.model.named_parameters()}
        self.flops_per_token = bmodel.flops_per_token(self.config, self.seq_len)
        self.peak = peak_flops(self.device, args.peak_tflops)
        self.ddp = build_ddp(self.model, self.comm, args.backend)
        self.forward = self.ddp if self.ddp is not None else self.model
        self.optimizer, self.scheduler = build_optimizer(
            args, self.model, self.comm, self.accum,
            compiled=self.compile_mode != "none" and self.is_cuda and not args.no_compile_optimizer)
        self.nonfinite = NonFiniteRecord(len(self.params), self.device)
        self.counted = Counted()
        self.loader = build_loader(args, shape, self.comm)

        self.step = 0
        self.skipped = 0
        self.last_ckpt = time.monotonic()
        self.output_dir = Path(args.output_dir) if args.output_dir else None
        if self.output_dir is not None and self.rank == 0:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            checkpoint.remove_partial(self.output_dir)
        self.resume()
        self.export = build_export(args, self.rank, self.output_dir, self.log)
        if self.export is not None:
            self.export.beat(self.step)
        if self.comm.hvd is not None:
            self.comm.hvd.broadcast_parameters(self.model.state_dict(), root_rank=0)
            self.comm.hvd.broadcast_optimizer_state(self.optimizer, root_rank=0)
        self.inject_nonfinite(args.inject_nonfinite)

    # ---------------------------------------------------------------------------------------------- one step

    def train_step(self, batches: Sequence[dict[str, Any]]) -> StepLosses:
        """One optimizer step over `accum` micro-batches, with no host synchronisation: a non-finite gradient is
        recorded on the device (which step, which parameters) and the optimizer skips the step there
        (`found_inf`); `check_nonfinite()` reads the record every log interval. Whether the step was applied is
        known only then."""
        losses = [self._micro_step(b, sync=(i == len(batches) - 1)) for i, b in enumerate(batches)]
        mean = StepLosses(*(torch.stack(part).mean() for part in zip(*losses)))
        if self.comm.hvd is not None:
            self.optimizer.synchronize()
        grads = [p.grad for p in self.params if p.grad is not None]
        norms = optim.grad_norms(grads)
        total = torch.linalg.vector_norm(norms)
        found = self.nonfinite.add(norms, self.step + 1, every_param=len(grads) == len(self.params))
        optim.clip_by_norm(grads, total, self.args.max_grad_norm)
        self.optimizer.found_inf = found.float()
        if self.comm.hvd is not None:
            with self.optimizer.skip_synchronize():
                self.optimizer.step()
        else:
            self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return mean

    def _micro_step(self, batch: dict[str, Any], sync: bool) -> tuple[Any, Any, Any]:
        """Forward and backward of one micro-batch; DDP reduces the gradients on the last one (`sync`)."""
        batch = self._to_device(batch)
        ids = batch["input_ids"]
        self.counted.tokens += int(batch.get("real_tokens", ids.numel()))
        self.counted.masked += int(batch.get("masked", 0))
        no_sync = self.ddp.no_sync() if (self.ddp is not None and not sync) else contextlib.nullcontext()
        with no_sync:
            loss, mlm, nsp = self.forward(ids, batch["token_type_ids"], batch["mlm_positions"], batch["mlm_labels"],
                                          batch["nsp_labels"], pair_ids=batch.get("pair_ids"),
                                          position_ids=batch.get("position_ids"), pair_starts=batch.get("pair_starts"))
            (loss / self.accum).backward()
        return loss.detach(), mlm, nsp

    def _to_device(self, batch: dict[str, Any]) -> dict[str, Any]:
        if not self.is_cuda or batch["input_ids"].is_cuda:
            return batch
        return {k: (v.pin_memory().to(self.device, non_blocking=True) if hasattr(v, "pin_memory") else v)
                for k, v in batch.items()}

    def check_nonfinite(self, loss: Any = None) -> None:
        """Read the device record of non-finite gradients (one sync, at a log interval); stop or report."""
        record = self.nonfinite
        if not bool(record.seen):
            return
        names = [self.param_names[p] for p, b in zip(self.params, record.mask.tolist()) if b]
        step = int(record.step)
        skipped = int(record.skipped)
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
        record.clear()

    def inject_nonfinite(self, spec: str) -> None:
        """--inject-nonfinite PARAM@STEP: PARAM's gradient becomes NaN at optimizer step STEP."""
        if not spec:
            return
        name, _unused, step = spec.rpartition("@")
        if name not in set(self.param_names.values()) or not step.isdigit():
            raise SccError(f"--inject-nonfinite {spec!r}: expected PARAM@STEP with PARAM one of the model's "
                           f"parameters (e.g. bert.encoder.layer.0.attention.self.query.weight)")
        target = int(step)
        param = next(p for p, n in self.param_names.items() if n == name)
        param.register_hook(lambda g: g * float("nan") if self.step + 1 == target else g)

    # ---------------------------------------------------------------------------------------------- checkpoints

    def model_identity(self) -> dict[str, Any]:
        return {"model": self.args.model, "vocab_size": self.vocab_size, "seq_len": self.seq_len,
                "max_pred": self.max_pred}

    def save_checkpoint(self) -> Path | None:
        """Rank 0 writes ckpt-<step>.pt atomically; every rank sends its RNG state, and rank 0's outcome reaches
        every rank (it serves as the barrier): a failed write stops all of them with the same message."""
        if self.output_dir is None:
            return None
        rngs = self.comm.all_gather_object(rng_state(self.is_cuda))
        path = checkpoint.path_for(self.output_dir, self.step)
        failure = ""
        if self.rank == 0:
            state = {"step": self.step, "skipped": self.skipped, "identity": self.model_identity(),
                     "world_size": self.world, "global_batch": self.global_batch,
                     "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                     "scheduler": self.scheduler.state_dict(), "data": self.loader.position_after_handed(),
                     "rng": rngs, "args": vars(self.args)}
            try:
                checkpoint.write(state, path)
            except OSError as exc:  # ENOSPC, EIO, EDQUOT, ...: stop now, every rank, not at the next collective
                failure = checkpoint.storage_error_line(path, exc)
            else:
                checkpoint.prune(self.output_dir, self.args.keep_checkpoints)
                self.log(f"saved checkpoint {path}")
                if self.export is not None:
                    self.export.checkpoint()
        failure = str(self.comm.all_gather_object(failure)[0])
        if failure:
            raise CheckpointWriteFailed(failure, echo=self.rank == 0)
        return path

    def resume(self) -> None:
        """--resume auto (the latest checkpoint of --output-dir, if any), none, or a checkpoint path."""
        args = self.args
        if args.resume == "none":
            return
        if args.resume == "auto":
            if self.output_dir is None:
                return
            self.comm.barrier()  # rank 0 has removed the partial files
            path = checkpoint.latest(self.output_dir)
            if path is None:
                self.log(f"no checkpoint in {self.output_dir}: starting from step 0")
                return
        else:
            path = Path(args.resume)
            if not path.is_file():
                raise SccError(f"--resume {path}: no such checkpoint; use --resume auto or a ckpt-<step>.pt path")
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
            set_rng_state(state["rng"][self.rank], self.is_cuda)
        else:
            data = state["data"]
            old_records = max(int(data.get("end", 0)) - int(data.get("start", 0)), 1)
            done = min(int(data["batch_in_epoch"]) * args.batch_size / old_records, 1.0)
            per = getattr(self.loader, "batches_per_epoch", 0)
            self.loader.load_state_dict({"epoch": int(data["epoch"]), "batch_in_epoch": int(done * per)})
            self.log(f"checkpoint written by {state['world_size']} ranks, now {self.world}: data continues at epoch "
                     f"{data['epoch']}, {done:.1%} of it, in each rank's new slice; RNG re-seeded")
        self.log(f"resumed from step {self.step} ({path})")

    # ---------------------------------------------------------------------------------------------- the loop

    def run(self) -> int:
        """Optimizer steps until --steps. At each log interval: the non-finite check, one metrics line, and rank
        0's decision for every rank (checkpoint now, or checkpoint and stop); a checkpoint every --ckpt-interval
        steps and one at the end."""
        args = self.args
        self.log(self.describe())
        knobs = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(ENV_KNOB_PREFIXES))
        if knobs:
            self.log("env: " + " ".join(knobs))
        batches = iter(self.loader)
        window: list[StepLosses] = []  # the steps since the last metrics line
        self.sync()
        clock = Clock(self.step)  # time and steps since the last metrics line or checkpoint
        self.last_ckpt = time.monotonic()
        while self.step < args.steps:
            window.append(self.train_step([next(batches) for _round in range(self.accum)]))
            if self.guard is not None:
                self.guard.step = self.step
            action = 0
            if self.step % args.log_interval == 0 or self.step == args.steps:
                self.check_nonfinite(window[-1].loss)
                self.sync()
                self.write_metrics(self.metrics(window, *clock.read(self.step)))
                window = []
                clock.restart(self.step)
                action = self.agree_on_action()
            if not action and args.ckpt_interval and self.step % args.ckpt_interval == 0 and self.step < args.steps:
                self.check_nonfinite()  # never checkpoint weights a non-finite step touched unseen
                action = CHECKPOINT
            if action:
                self.save_checkpoint()
                self.last_ckpt = time.monotonic()
                if action == STOP:
                    why = (self.guard.stop_reason if self.guard is not None else "") or \
                        "the sccnlp train client stopped following the run (rank 0's lease check)"
                    raise ClientGone(f"{why}: stopped at step {self.step} after a checkpoint; run the same command "
                                     "again to resume")
                clock.restart(self.step)
        self.check_nonfinite()
        if self.output_dir is not None and not checkpoint.path_for(self.output_dir, self.step).exists():
            self.save_checkpoint()
        self.log(f"done: step={self.step} skipped={self.skipped}")
        if self.export is not None:
            self.export.beat(self.step, completed=True)
        return 0

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
            flag = torch.tensor([float(action)], device=self.device)
            action = int(self.comm.all_reduce_sum(flag).item())
        return action

    def metrics(self, window: list[StepLosses], seconds: float, steps: int) -> dict[str, Any]:
        """The metrics record of the last `steps` optimizer steps, which took `seconds`."""
        loss, mlm, nsp = torch.stack([torch.stack(x) for x in window]).float().mean(0).tolist()
        seq_s = steps * self.global_batch / seconds if seconds > 0 else 0.0
        tokens, masked = self.counted.take()  # this rank's real (non-padding) tokens
        flops = bmodel.step_flops(self.config, self.seq_len, tokens, masked)
        mfu = flops / seconds / self.peak if self.peak and seconds > 0 else None
        mem = torch.cuda.max_memory_allocated(self.device) / 2**30 if self.is_cuda else None
        return {"step": self.step, "loss": loss, "mlm": mlm, "nsp": nsp,
                "lr": self.scheduler.get_last_lr()[0], "seq_per_s": seq_s, "seq_per_s_gpu": seq_s / self.world,
                "mfu": mfu, "tok_per_s": tokens * self.world / seconds if seconds > 0 else 0.0, "mem_gib": mem,
                "skipped": self.skipped, "time": time.time(),
                "world_size": self.world, "global_batch": self.global_batch}

    def write_metrics(self, record: dict[str, Any]) -> None:
        """Rank 0: the human line on stdout, the heartbeat for node_exporter (--textfile-dir) and the JSON line in
        <output-dir>/metrics.jsonl."""
        if self.rank != 0:
            return
        print(format_line(record), flush=True)
        if self.export is not None:
            self.export.beat(self.step, record["loss"], record["seq_per_s"])
        if self.output_dir is None:
            return
        path = self.output_dir / "metrics.jsonl"
        try:
            with open(path, "a") as fh:
                fh.write(json.dumps(record) + "\n")
        except OSError as exc:  # the run goes on; a checkpoint the storage refuses stops it
            self.log(f"metrics line not written to {path} ({exc})")

    # ---------------------------------------------------------------------------------------------- small parts

    def log(self, msg: str, all_ranks: bool = False) -> None:
        if all_ranks or self.rank == 0:
            prefix = f"[rank {self.rank}] " if all_ranks and self.world > 1 else ""
            print(prefix + msg, flush=True)

    def sync(self) -> None:
        if self.is_cuda:
            torch.cuda.synchronize(self.device)

    def describe(self) -> str:
        return (f"model={self.args.model} params={sum(p.numel() for p in self.params) / 1e6:.1f}M "
                f"seq_len={self.seq_len} max_pred={self.max_pred} vocab={self.vocab_size} ranks={self.world} "
                f"batch/gpu={self.args.batch_size} accum={self.accum} global_batch={self.global_batch} "
                f"optimizer={self.args.optimizer} precision={self.precision} "
                f"compile={self.compile_mode} encoder={self.args.encoder} packed={self.packed} "
                f"backend={self.args.backend}/"
                f"{'nccl' if self.is_cuda else 'gloo'} device={self.device} "
                f"data={'synthetic' if self.args.synthetic else self.args.data_dir} "
                f"flops/token={self.flops_per_token:.3g}")


class Clock:
    """Seconds and optimizer steps since the last restart (a metrics line, or a checkpoint write, whose time is
    left out of the throughput)."""

    def __init__(self, step: int) -> None:
        self.restart(step)

    def restart(self, step: int) -> None:
        self.start, self.first_step = time.perf_counter(), step

    def read(self, step: int) -> tuple[float, int]:
        return time.perf_counter() - self.start, step - self.first_step


def rng_state(is_cuda: bool) -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state() if is_cuda else None}


def set_rng_state(state: dict[str, Any], is_cuda: bool) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if is_cuda and state.get("cuda") is not None:
        torch.cuda.set_rng_state(state["cuda"])


def whole_line_output() -> None:
    """Each line in one write (line buffered, not write-through even under PYTHONUNBUFFERED): mpirun --tag-output
    tags every chunk it reads, so a line written in pieces showed a rank's tag glued to its end."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(line_buffering=True, write_through=False)


def main(argv: Sequence[str] | None = None) -> int:
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
    # exception", exit 134 instead of the code above).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_code)
