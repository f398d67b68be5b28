"""Metrics for node_exporter's textfile collector: what the collection knows about a node, as Prometheus text.

Node-side and standard library only (it runs with the node's own python3 from the validation's private library,
and inside the training venv). Three files, each replaced atomically in the textfile directory (written under a
name the collector skips, then renamed over the old one, so a scrape never reads half a file):

- ``scc_gates.prom``: the last validation's checks of this node, ``scc_gate_status{check, scope}`` (1 passed,
  0 failed, -1 skipped), the measured value, floor and ceiling of each check, when it ran, and the shared storage
  the validation expects mounted (``scc_shared_storage_expected{mountpoint}``);
- ``scc_stack.prom``: the installed stack, ``scc_stack_info{component, version, method}`` from the roles' local facts
  (``/etc/ansible/facts.d/scc_<role>.fact``);
- ``scc_training.prom``: the training heartbeat of rank 0 (step, loss, sequences/s, when it beat, the last
  checkpoint, whether the run completed), written by ``sccnlp.node.bert.train --textfile-dir``.

``python -m sccnlp.node.textfile validation --fragment F --host H --facts-dir D --shared-dir S --out DIR`` writes
the first two from a validation fragment (``sccnlp.node.gates.evaluate``'s output).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

GATES_FILE = "scc_gates.prom"
STACK_FILE = "scc_stack.prom"
TRAINING_FILE = "scc_training.prom"
GATE_STATUS = {"pass": 1, "fail": 0, "skip": -1}
# Local facts that describe the stack, in the order they are listed: (fact name, component label).
STACK_FACTS = (("scc_gpu_driver", "gpu_driver"), ("scc_cuda", "cuda"), ("scc_nccl", "nccl"), ("scc_cudnn", "cudnn"),
               ("scc_python36", "python"), ("scc_pytorch", "pytorch"), ("scc_tensorflow", "tensorflow"),
               ("scc_aiacc", "aiacc"))
Labels = dict[str, str]


@dataclass
class Family:
    """One metric family: its name, type, help text and samples (labels, value)."""

    name: str
    help: str
    kind: str = "gauge"
    samples: list[tuple[Labels, float]] = field(default_factory=list)

    def add(self, labels: Labels, value: float) -> None:
        self.samples.append((dict(labels), value))


def escape_label(value: str) -> str:
    """A label value in the text format: backslash, double quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def render(families: Sequence[Family]) -> str:
    """The text exposition format of the families that have samples (label names sorted, one sample a line)."""
    lines: list[str] = []
    for family in families:
        if not family.samples:
            continue
        lines.append(f"# HELP {family.name} {escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for labels, value in family.samples:
            text = ",".join(f'{key}="{escape_label(str(labels[key]))}"' for key in sorted(labels))
            lines.append(f"{family.name}{{{text}}} {format_value(value)}" if text else
                         f"{family.name} {format_value(value)}")
    return "\n".join(lines) + "\n" if lines else ""


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _epoch(stamp: Any) -> Optional[float]:
    """ISO 8601 time (a trailing Z allowed) as Unix seconds; None when it is not one."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None


def _worst(checks: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One check per name (a name listed twice keeps the failed one, else the first): the label sets stay unique."""
    rank = {"fail": 0, "pass": 1, "skip": 2}
    chosen: dict[str, Mapping[str, Any]] = {}
    for check in checks:
        name = str(check.get("name") or "")
        if not name:
            continue
        have = chosen.get(name)
        if have is None or rank.get(str(check.get("status")), 3) < rank.get(str(have.get("status")), 3):
            chosen[name] = check
    return [chosen[name] for name in sorted(chosen)]


def gate_families(fragment: Mapping[str, Any], host: str, shared_dir: str = "") -> list[Family]:
    """The gate metrics of one node's validation fragment; cluster checks (the first node's fragment holds them)
    carry scope="cluster". shared_dir: the mount point the validation expects ("" = none expected)."""
    nodes = fragment.get("nodes") or {}
    if host not in nodes:
        raise ValueError(f"the fragment has no results for {host} (it has {', '.join(sorted(nodes)) or 'none'})")
    status = Family("scc_gate_status", "Result of a validation check: 1 passed, 0 failed, -1 skipped.")
    measured = Family("scc_gate_measured", "Value the validation measured for a check, in the unit label's unit.")
    floor = Family("scc_gate_floor", "Lowest value a check accepts, in the unit label's unit.")
    ceiling = Family("scc_gate_ceiling", "Highest value a check accepts, in the unit label's unit.")
    cluster = fragment.get("cluster") or {}
    scopes = (("node", nodes[host].get("checks") or []), ("cluster", cluster.get("checks") or []))
    for scope, checks in scopes:
        for check in _worst(checks):
            labels = {"check": str(check["name"]), "scope": scope}
            status.add(labels, GATE_STATUS.get(str(check.get("status")), 0))
            with_unit = {**labels, "unit": str(check.get("unit") or "")}
            for family, key in ((measured, "measured"), (floor, "floor"), (ceiling, "ceiling")):
                value = _number(check.get(key))
                if value is not None:
                    family.add(with_unit, value)
    families = [status, measured, floor, ceiling]
    finished = _epoch((fragment.get("run") or {}).get("finished"))
    if finished is not None:
        families.append(Family("scc_gate_last_run_timestamp_seconds", "When the last validation of this node ended.",
                               samples=[({}, finished)]))
    if shared_dir:
        families.append(Family("scc_shared_storage_expected",
                               "A shared storage mount point the last validation expects on this node.",
                               samples=[({"mountpoint": shared_dir}, 1)]))
    return families


def stack_families(facts: Mapping[str, Any]) -> list[Family]:
    """scc_stack_info from the local facts (name without .fact -> its JSON): one sample per recorded component."""
    info = Family("scc_stack_info", "Installed software of the training stack, as its role recorded it (value 1).")
    for fact, component in STACK_FACTS:
        data = facts.get(fact)
        if not isinstance(data, Mapping):
            continue
        # python36 records the venv's interpreter as python_version; aiacc the backend it chose.
        version = data.get("version", data.get("python_version"))
        method = data.get("backend") if component == "aiacc" else data.get("method")
        info.add({"component": component, "version": "" if version is None else str(version),
                  "method": "" if method is None else str(method)}, 1)
    return [info]


def training_families(run: str, step: int, loss: Optional[float], seq_per_s: Optional[float], beat: float,
                      last_checkpoint: Optional[float], completed: bool) -> list[Family]:
    """The training heartbeat of rank 0 (times in Unix seconds; None: not known yet)."""
    labels = {"run": run}
    families = [
        Family("scc_training_step", "Optimizer steps the training run has completed.", samples=[(labels, step)]),
        Family("scc_training_heartbeat_timestamp_seconds", "When rank 0 of the training run last reported.",
               samples=[(labels, beat)]),
        Family("scc_training_completed", "1 when the training run reached its last step, else 0.",
               samples=[(labels, 1 if completed else 0)]),
    ]
    loss_value, rate = _number(loss), _number(seq_per_s)
    if loss_value is not None:
        families.append(Family("scc_training_loss", "Training loss of the last log interval.",
                               samples=[(labels, loss_value)]))
    if rate is not None:
        families.append(Family("scc_training_sequences_per_second",
                               "Sequences per second over all ranks in the last log interval.",
                               samples=[(labels, rate)]))
    if last_checkpoint is not None:
        families.append(Family("scc_training_last_checkpoint_timestamp_seconds",
                               "When the training run last wrote a checkpoint.", samples=[(labels, last_checkpoint)]))
    return families


def write_atomic(directory: str, name: str, text: str) -> Path:
    """Replace directory/name with text in one rename (the temporary file's name does not end in .prom, so the
    collector never reads it); mode 0644, so an exporter running as another user reads it."""
    folder = Path(directory)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=str(folder))
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, folder / name)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return folder / name


class TrainingExport:
    """Rank 0's heartbeat in <directory>/scc_training.prom: `beat` after each log interval and at the end,
    `checkpoint` after each checkpoint. A directory that does not exist (no monitoring on the node) or a failed
    write is reported once through `log` and never stops the run."""

    def __init__(self, directory: str, run: str, log: Callable[[str], None]) -> None:
        self.directory, self.run, self.log = directory, run, log
        self.step = 0
        self.loss: Optional[float] = None
        self.seq_per_s: Optional[float] = None
        self.last_checkpoint: Optional[float] = None
        self.enabled = os.path.isdir(directory)
        if not self.enabled:
            log(f"training metrics not exported: {directory} does not exist on this node (deploy "
                "playbooks/monitoring.yml)")

    def beat(self, step: int, loss: Optional[float] = None, seq_per_s: Optional[float] = None,
             completed: bool = False) -> None:
        self.step = step
        self.loss = self.loss if loss is None else loss
        self.seq_per_s = self.seq_per_s if seq_per_s is None else seq_per_s
        if not self.enabled:
            return
        text = render(training_families(self.run, step, self.loss, self.seq_per_s, time.time(),
                                        self.last_checkpoint, completed))
        try:
            write_atomic(self.directory, TRAINING_FILE, text)
        except OSError as exc:
            self.enabled = False
            self.log(f"training metrics not exported any more: {self.directory}/{TRAINING_FILE}: {exc}")

    def checkpoint(self) -> None:
        self.last_checkpoint = time.time()
        self.beat(self.step)


def read_facts(facts_dir: str) -> dict[str, Any]:
    """The collection's local facts (scc_*.fact, JSON) of a facts.d folder; unreadable files are left out."""
    found: dict[str, Any] = {}
    folder = Path(facts_dir)
    for path in sorted(folder.glob("scc_*.fact")) if folder.is_dir() else []:
        try:
            found[path.stem] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return found


def _validation(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.out):
        print(f"not exported: {args.out} does not exist on this node (deploy playbooks/monitoring.yml, or set "
              "scc_monitoring_textfile_dir to the textfile directory of your node_exporter)")
        return 0
    try:
        with open(args.fragment) as handle:
            fragment = json.load(handle)
        gates = render(gate_families(fragment, args.host, args.shared_dir))
    except (OSError, ValueError) as exc:
        print(f"{args.host}: cannot export {args.fragment}: {exc}", file=sys.stderr)
        return 1
    write_atomic(args.out, GATES_FILE, gates)
    write_atomic(args.out, STACK_FILE, render(stack_families(read_facts(args.facts_dir))))
    print(f"exported {args.out}/{GATES_FILE} and {args.out}/{STACK_FILE}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sccnlp.node.textfile",
        description="write the collection's metrics for node_exporter's textfile collector")
    sub = parser.add_subparsers(dest="what", required=True)
    val = sub.add_parser("validation", help="the gate results of a validation fragment and the stack's versions")
    val.add_argument("--fragment", required=True, help="the node's fragment (sccnlp.node.gates.evaluate output)")
    val.add_argument("--host", required=True, help="the node's inventory name in the fragment")
    val.add_argument("--facts-dir", default="/etc/ansible/facts.d", help="the local facts folder")
    val.add_argument("--shared-dir", default="", help="the shared storage mount point the validation expects")
    val.add_argument("--out", required=True, help="the textfile collector's directory")
    val.set_defaults(func=_validation)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
