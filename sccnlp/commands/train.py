"""`sccnlp train`: prepare the BERT data and train across the cluster (playbooks/bert.yml), streaming progress."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from typing import Any, TextIO

from sccnlp import runner
from sccnlp.commands import add_command, add_extra_vars_option
from sccnlp.errors import SccError
from sccnlp.extravars import parse_extra_vars

FOLLOW_TASK = "Follow the training log"
WHERE_TASK = "Show where the run writes"
SHOWN_TASKS = ("Report a run that is already complete", "Show the prepared data")
_TAG = re.compile(r"^\[\d+,\d+\]<(stdout|stderr)>:\s?")
_STEP = re.compile(r"\bstep=(\d+)\b")
_NOTABLE = re.compile(r"error|Error|resumed from|no checkpoint|saved checkpoint|data_range=|^done:|^launch:|^lost:|"
                      r"stopped following")


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers, "train", "prepare BERT data and train on every GPU (playbooks/bert.yml)",
        details="Prepares the corpus into shards on the shared storage, then launches the trainer with mpirun across\n"
                "every slot of the cluster's hostfile and streams its progress. A run resumes from its last\n"
                "checkpoint by default (--resume auto).",
        examples=["sccnlp train -i inventory/static/hosts.yml --model base --steps 1000",
                  "sccnlp train -i inventory/static/hosts.yml --data-only --corpus /mnt/shared/corpus.txt",
                  "sccnlp train -i inventory/static/hosts.yml --model large --phase 2 --run-name exp1 --resume auto",
                  "sccnlp train -i inventory/static/hosts.yml --framework tensorflow --model base --steps 1000"])
    p.add_argument("-i", "--inventory", required=True, help="inventory of the cluster")
    p.add_argument("--framework", choices=("pytorch", "tensorflow"),
                   help="the trainer: pytorch (a rank per GPU) or tensorflow (MultiWorkerMirroredStrategy, a worker "
                        "per node; AIACC's Horovod API when the aiacc role installed it) (bert_framework)")
    p.add_argument("--model", choices=("tiny", "base", "large"), help="BERT size (bert_model)")
    p.add_argument("--phase", type=int, choices=(1, 2), help="1 = seq 128, 2 = seq 512 (bert_phase)")
    p.add_argument("--steps", type=int, help="optimizer steps (bert_steps)")
    p.add_argument("--batch-size", type=int, help="sequences per GPU per micro-step (bert_batch_size)")
    p.add_argument("--accum-steps", type=int, help="gradient accumulation (bert_accum_steps)")
    p.add_argument("--lr", type=float, help="peak learning rate (bert_lr)")
    p.add_argument("--precision", choices=("auto", "bf16", "fp8", "fp32"),
                   help="bert_precision (fp8: float8 matrix products on GPUs with FP8 tensor cores, needs torchao)")
    p.add_argument("--resume", help="auto, none or a checkpoint path (bert_resume)")
    p.add_argument("--run-name", help="run directory name under <shared>/bert/runs (bert_run_name)")
    p.add_argument("--corpus", help="corpus path on the first node, or an http(s) URL (with --corpus-sha256)")
    p.add_argument("--corpus-sha256", help="sha256 of the corpus URL")
    p.add_argument("--vocab", help="a given vocab.txt on the first node (bert_vocab_file)")
    p.add_argument("--vocab-size", type=int, help="vocabulary size (bert_vocab_size)")
    p.add_argument("--data-only", action="store_true", help="prepare the data, do not launch training")
    add_extra_vars_option(p, "-e bert_dupe_factor=2 for any other bert_* setting")
    p.add_argument("--limit", help="Ansible --limit")
    p.add_argument("--check", action="store_true", help="check mode: show what would change")
    p.add_argument("-v", "--verbose", action="store_true", help="show every task")
    p.set_defaults(func=run)


def extravars(args: argparse.Namespace) -> dict[str, Any]:
    """Command-line options -> role variables."""
    out: dict[str, Any] = {}
    simple = {"framework": "bert_framework", "model": "bert_model", "phase": "bert_phase", "steps": "bert_steps",
              "batch_size": "bert_batch_size", "accum_steps": "bert_accum_steps", "lr": "bert_lr",
              "precision": "bert_precision", "resume": "bert_resume", "run_name": "bert_run_name",
              "vocab": "bert_vocab_file", "vocab_size": "bert_vocab_size"}
    for attr, var in simple.items():
        value = getattr(args, attr, None)
        if value is not None:
            out[var] = value
    if args.corpus:
        if "://" in args.corpus:
            if not args.corpus_sha256:
                raise SccError("--corpus is a URL: give its sha256 with --corpus-sha256")
            out.update(bert_corpus_source="url", bert_corpus_url=args.corpus, bert_corpus_sha256=args.corpus_sha256)
        else:
            out.update(bert_corpus_source="path", bert_corpus_path=args.corpus)
    if args.data_only:
        out["bert_launch"] = False
    out.update(parse_extra_vars(args.extra_var))
    return out


class ProgressPrinter:
    """Turns the playbook's events into progress lines: training steps, notable log lines, where the run writes."""

    def __init__(self, stream: TextIO, verbose: bool = False) -> None:
        self.stream = stream
        self.base = runner._event_printer(stream, verbose)
        self.verbose = verbose
        self.last_step = -1
        self.seen: set[str] = set()
        self.where: dict[str, Any] = {}

    def __call__(self, event: dict[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data") or {}
        task = data.get("task", "")
        res = data.get("res") or {}
        if task == FOLLOW_TASK and kind in ("runner_retry", "runner_on_ok"):
            self.log_lines(str(res.get("stdout", "")).splitlines())
            return True
        if task == WHERE_TASK and kind == "runner_on_ok":
            msg = res.get("msg")
            if isinstance(msg, dict) and isinstance(msg.get("bert_run"), dict):
                self.where = msg["bert_run"]
                print(f"   training: {self.where.get('ranks', '?')} ranks from {self.where.get('node', '?')}, "
                      f"log {self.where.get('log', '?')}", file=self.stream, flush=True)
            return True
        if task in SHOWN_TASKS and kind == "runner_on_ok" and res.get("msg"):
            print(f"   {' '.join(str(res['msg']).split())}", file=self.stream, flush=True)
            return True
        if kind == "runner_on_skipped" and not self.verbose:
            return True
        return self.base(event)

    def log_lines(self, lines: list[str]) -> None:
        for raw in lines:
            line = _TAG.sub("", raw).rstrip()
            if not line or line.startswith("BERT_RUN_EXIT="):
                continue
            step = _STEP.search(line)
            if step and "loss=" in line:
                if int(step.group(1)) > self.last_step:
                    self.last_step = int(step.group(1))
                    print(f"   {line}", file=self.stream, flush=True)
            elif _NOTABLE.search(line) and line not in self.seen:
                self.seen.add(line)
                print(f"   {line}", file=self.stream, flush=True)


def run(args: argparse.Namespace) -> int:
    stream = sys.stdout
    printer = ProgressPrinter(stream, args.verbose)
    result = _run_bert(args.inventory, extravars(args), args.limit, args.check, printer)
    if result.ok:
        where = printer.where
        print("\nBERT done." if where else "\nBERT: data ready, nothing launched (or the run was already complete).",
              file=stream)
        # The log was followed on the first node's disk; once the run ended its copy is on the shared storage.
        where = {**where, "log": where.get("log_when_done", where.get("log"))} if "log" in where else where
        for key in ("run_dir", "log", "metrics", "checkpoints", "data"):
            if key in where:
                print(f"  {key:<12} {where[key]}", file=stream)
        return 0
    runner.print_summary(result, stream)
    bad = result.bad_hosts()
    for host, summary in sorted(bad.items()):
        reason = summary.messages[-1] if summary.messages else "unreachable" if summary.unreachable else "failed"
        print(f"sccnlp train: failed on {host}: {reason}", file=sys.stderr)
    if not bad:
        hint = f": ansible-playbook was not found ({runner.CONTROLLER_INSTALL_HINT})" if result.rc == 127 else ""
        print(f"sccnlp train: the playbook ended with status {result.status} (rc {result.rc}){hint}",
              file=sys.stderr)
    return 1


def _run_bert(inventory: str, variables: dict[str, Any], limit: str | None, check: bool,
              on_event: Callable[[dict[str, Any]], bool]) -> runner.RunResult:
    """playbooks/bert.yml with this command's event handler (progress lines)."""
    return runner.run_playbook("bert", inventory, extravars=variables, limit=limit, check=check,
                               event_handler=on_event)
