"""BERT pretraining throughput: `python -m sccnlp.node.bert.bench --model bert-large --seq-len 128 --batch-size 256`.

Runs the trainer's own step (`Trainer.train_step`, same launch path: alone or under `mpirun -np N`) on synthetic
full-length batches (or real shards with --data-dir), times `--steps` optimizer steps after `--warmup` steps (the
first step, which holds torch.compile's work, is reported apart as compile_s), and reports sequences/s (global and
per GPU), tokens/s, MFU and peak memory. `--matrix` runs BERT-base and BERT-large at seq 128 and 512.
`--peer hf-compile` times the peer instead (sccnlp.node.bert.peer: a plain Hugging Face + torch.compile loop, what a
user would pick), and `--ratios RESULT.json ...` prints each figure's ratio to the peer measured in the same call.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sccnlp.node.bert.model import step_flops
from sccnlp.node.errors import SccError

# (model, seq_len, batch per GPU) for --matrix
MATRIX = (("bert-base", 128, 256), ("bert-base", 512, 64), ("bert-large", 128, 256), ("bert-large", 512, 64))
# The seq/s per GPU each figure is measured against (docs/BENCHMARKS.md, BERT pretraining on one H200).
GOALS = {("bert-large", 128): 2050.0, ("bert-large", 512): 480.0}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sccnlp.node.bert.bench", description=__doc__.splitlines()[0])
    p.add_argument("--model", default="bert-large")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=256, help="sequences per GPU per step")
    p.add_argument("--steps", type=int, default=30, help="timed optimizer steps")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first (the first one compiles)")
    p.add_argument("--matrix", action="store_true", help="bert-base and bert-large at seq 128 and 512")
    p.add_argument("--data-dir", help="real shards instead of synthetic data (seq len from meta.json)")
    p.add_argument("--json", dest="json_path", help="write the results here (rank 0)")
    p.add_argument("--label", default="", help="free text stored with each result (e.g. the change measured)")
    p.add_argument("--profile", dest="profile_path", default="",
                   help="after timing, profile 3 steps with torch.profiler and write the top-kernel table here")
    p.add_argument("--curve", dest="curve_path", default="",
                   help="write every timed step's loss here (JSON list), for loss-curve comparisons")
    p.add_argument("--peer", choices=("hf-compile", "hf-eager"), default="",
                   help="time the peer loop (sccnlp.node.bert.peer) instead of this trainer; one process, one GPU")
    p.add_argument("--ratios", nargs="+", metavar="RESULT_JSON", default=[],
                   help="print each trainer figure's ratio to the hf-compile peer of the same model and seq_len")
    p.add_argument("--train-args", default="",
                   help="extra trainer options, e.g. \"--optimizer adamw --compile none --attn eager\"")
    return p


def trainer_argv(model: str, seq_len: int, batch: int, total_steps: int, data_dir: str | None,
                 extra: str) -> list[str]:
    argv = ["--model", model, "--batch-size", str(batch), "--steps", str(total_steps), "--resume", "none",
            "--log-interval", str(10**9), "--warmup", "0.1"]
    if data_dir:
        argv += ["--data-dir", data_dir]
    elif "--data-dir" not in extra.split():
        argv += ["--synthetic", "--seq-len", str(seq_len)]
    return argv + extra.split()


def bench_one(model: str, seq_len: int, batch: int, steps: int, warmup: int, data_dir: str | None,
              extra: str, label: str, profile_path: str = "", curve_path: str = "") -> dict[str, Any]:
    import torch

    from sccnlp.node.bert.train import Trainer
    from sccnlp.node.bert.train import build_parser as train_parser

    targs = train_parser().parse_args(trainer_argv(model, seq_len, batch, steps + warmup, data_dir, extra))
    trainer = Trainer(targs)
    it = iter(trainer.loader)

    def batches() -> list[dict[str, Any]]:
        return [next(it) for _round in range(trainer.accum)]

    trainer.sync()
    t0 = time.perf_counter()
    first = trainer.train_step(batches())
    trainer.sync()
    compile_s = time.perf_counter() - t0
    for _round in range(max(warmup - 1, 0)):
        trainer.train_step(batches())
    trainer.sync()
    if trainer.is_cuda:
        torch.cuda.reset_peak_memory_stats(trainer.device)
    trainer.counted.take()  # count from here
    t0 = time.perf_counter()
    losses = []
    for _round in range(steps):
        losses.append(trainer.train_step(batches()).loss)
    trainer.sync()
    seconds = time.perf_counter() - t0
    tokens, masked = trainer.counted.take()  # real (non-padding) tokens, this rank
    trainer.check_nonfinite()
    seq_s = steps * trainer.global_batch / seconds
    per_gpu = seq_s / trainer.world
    real_flops = step_flops(trainer.config, trainer.seq_len, tokens, masked)
    goal = GOALS.get((model, trainer.seq_len))
    if curve_path and trainer.rank == 0:
        Path(curve_path).parent.mkdir(parents=True, exist_ok=True)
        Path(curve_path).write_text(json.dumps([round(float(x), 4) for x in losses]) + "\n")
    if profile_path and trainer.is_cuda:
        profile(trainer, batches, profile_path)
    result = {
        "model": model, "seq_len": trainer.seq_len, "batch_per_gpu": batch, "global_batch": trainer.global_batch,
        "ranks": trainer.world, "steps": steps, "warmup": warmup,
        "data": "synthetic" if targs.synthetic else f"real:{targs.data_dir}",
        "seq_per_s": round(seq_s, 1), "seq_per_s_gpu": round(per_gpu, 1),
        "tok_per_s_gpu": round(per_gpu * trainer.seq_len),
        "real_tok_per_s_gpu": round(tokens / seconds),
        "padding": round(1 - tokens / (steps * trainer.accum * batch * trainer.seq_len), 4),
        "mfu": round(real_flops / seconds / trainer.peak, 4) if trainer.peak else None,
        "flops_per_token": trainer.flops_per_token, "peak_flops": trainer.peak or None,
        "step_ms": round(1000 * seconds / steps, 2), "compile_s": round(compile_s, 1),
        "first_loss": round(float(first.loss), 4), "last_loss": round(float(losses[-1]), 4),
        "mem_gib": round(torch.cuda.max_memory_allocated(trainer.device) / 2**30, 2) if trainer.is_cuda else None,
        "device": torch.cuda.get_device_name(trainer.device) if trainer.is_cuda else "cpu",
        "torch": torch.__version__, "trainer": trainer.describe(), "train_args": extra, "label": label,
        "goal_seq_per_s_gpu": goal, "date": time.strftime("%Y-%m-%d"),
    }
    result["_comm"] = trainer.comm
    return result


def profile(trainer: Any, batches: Any, path: str) -> None:
    """Three steps under torch.profiler; the top GPU kernels by total time go to `path`."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprofile

    with tprofile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _unused in range(3):
            trainer.train_step(batches())
        trainer.sync()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=30, max_name_column_width=90)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(table + "\n")


def release() -> None:
    """Free the previous configuration's GPU memory and compiled graphs."""
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    torch._dynamo.reset()


def human(r: dict[str, Any]) -> str:
    mfu = f"{r['mfu'] * 100:.1f}%" if r.get("mfu") is not None else "n/a"
    real = f"real_tok/s={r['real_tok_per_s_gpu']} padding={r['padding'] * 100:.1f}% "
    goal = f" goal={r['goal_seq_per_s_gpu']:.0f}" if r.get("goal_seq_per_s_gpu") else ""
    return (f"bench model={r['model']} seq={r['seq_len']} batch/gpu={r['batch_per_gpu']} ranks={r['ranks']} "
            f"data={r['data']} seq/s={r['seq_per_s']:.1f} seq/s/gpu={r['seq_per_s_gpu']:.1f} {real}mfu={mfu} "
            f"step_ms={r['step_ms']} compile_s={r['compile_s']} mem={r['mem_gib']}GiB{goal} "
            f"loss={r['first_loss']}->{r['last_loss']} args=\"{r['train_args']}\"")


def run_peer(args: argparse.Namespace) -> int:
    from sccnlp.node.bert.peer import bench_peer

    r = bench_peer(args.peer, args.model, args.seq_len, args.batch_size, args.steps, args.warmup)
    r.update(label=args.label, goal_seq_per_s_gpu=GOALS.get((args.model, args.seq_len)))
    print(human(r), flush=True)
    if args.json_path:
        Path(args.json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_path).write_text(json.dumps([r], indent=2) + "\n")
    return 0


def print_ratios(paths: Sequence[str]) -> int:
    from sccnlp.node.bert.peer import ratios

    results: list[dict[str, Any]] = []
    for path in paths:
        try:
            results += json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            print(f"sccnlp.node.bert.bench: skipping {path}: {exc}", file=sys.stderr)
    lines = ratios(results)
    print("\n".join(lines) if lines else "no trainer figure has a peer figure of the same model and seq_len")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.ratios:
        return print_ratios(args.ratios)
    if args.peer:
        return run_peer(args)
    configs = list(MATRIX) if args.matrix else [(args.model, args.seq_len, args.batch_size)]
    results = []
    comm = None
    try:
        for model, seq_len, batch in configs:
            r = bench_one(model, seq_len, batch, args.steps, args.warmup, args.data_dir, args.train_args, args.label,
                          args.profile_path, args.curve_path)
            comm = r.pop("_comm")
            release()
            results.append(r)
            if comm.rank == 0:
                print(human(r), flush=True)
    except SccError as exc:
        print(f"sccnlp.node.bert.bench: error: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    finally:
        if comm is not None:
            comm.close()
    if args.json_path and (comm is None or comm.rank == 0):
        Path(args.json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_path).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
