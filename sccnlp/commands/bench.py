"""`sccnlp bench bert`: BERT pretraining throughput (seq/s per GPU, MFU) on this node, through mpirun."""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
from typing import Any

from sccnlp.commands import add_command, add_group
from sccnlp.errors import SccError


def register(subparsers: Any) -> None:
    sub = add_group(subparsers, "bench", "benchmarks (BERT pretraining throughput)",
                    examples=["sccnlp bench bert --np 8", "sccnlp bench bert --matrix --dry-run"], metavar="WHAT")
    p = add_command(
        sub, "bert", "sequences/s and MFU of the BERT trainer (python -m sccnlp.node.bert.bench) on this node",
        details="Runs `python -m sccnlp.node.bert.bench` under `mpirun -np N` (one rank per GPU), the launch path of\n"
                "training. Synthetic full-length data unless --data-dir is given.",
        examples=["sccnlp bench bert --model bert-base --np 8",
                  "sccnlp bench bert --matrix --np 8 --json /tmp/bert-matrix.json",
                  "sccnlp bench bert --python /opt/scc/venv/bin/python --seq-len 512 --batch-size 32 --dry-run"])
    p.add_argument("--model", default="bert-large", help="bert-base or bert-large (default %(default)s)")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=256, help="sequences per GPU per step")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--matrix", action="store_true", help="bert-base and bert-large at seq 128 and 512")
    p.add_argument("--data-dir", help="real prepared shards instead of synthetic data")
    p.add_argument("--json", dest="json_path", default="bert-bench.json", help="results file (default %(default)s)")
    p.add_argument("--np", type=int, default=1, help="ranks (GPUs) on this node for mpirun (default 1)")
    p.add_argument("--python", default=sys.executable, help="the training venv's python (default: this one)")
    p.add_argument("--train-args", default="", help="extra trainer options, written --train-args=\"...\"")
    p.add_argument("--dry-run", action="store_true", help="print the command only")
    p.set_defaults(func=run_bert)


def command(args: argparse.Namespace, mpirun: str | None) -> list[str]:
    bench = [args.python, "-m", "sccnlp.node.bert.bench", "--model", args.model, "--seq-len", str(args.seq_len),
             "--batch-size", str(args.batch_size), "--steps", str(args.steps), "--warmup", str(args.warmup),
             "--json", args.json_path]
    bench += ["--matrix"] if args.matrix else []
    bench += ["--data-dir", args.data_dir] if args.data_dir else []
    bench += [f"--train-args={args.train_args}"] if args.train_args else []
    if mpirun is None:
        return bench
    return [mpirun, "--allow-run-as-root", "-np", str(args.np), "--bind-to", "none", "--map-by", "slot",
            "-x", "PATH", "-x", "LD_LIBRARY_PATH", "-x", "PYTHONPATH", "-x", "MASTER_ADDR=127.0.0.1", *bench]


def run_bert(args: argparse.Namespace) -> int:
    if args.np < 1:
        raise SccError(f"--np must be at least 1, got {args.np}")
    mpirun = shutil.which("mpirun")
    if mpirun is None and args.np > 1:
        raise SccError(f"--np {args.np} needs mpirun, which is not on PATH: run the runtime role (OpenMPI) first, "
                       "or use --np 1")
    cmd = command(args, mpirun)
    print("+ " + shlex.join(cmd), flush=True)
    if args.dry_run:
        return 0
    return subprocess.call(cmd)
