# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Callback `module_runs`: counts the module executions of a run per node (what a re-run costs each node).

A module run is one AnsiballZ payload started on a node: one per module task, several for an action plugin that
runs more than one (copy and template run stat, then copy or file), none for a task without a module (set_fact,
assert, debug, meta, include); a script or raw task, which runs a file or a command without a module, counts one.
The count is taken where Ansible starts the payload (ActionBase._execute_module, in the forked worker), attributed
to the node it runs on (the delegated host for delegate_to), and summed when the run ends. Enable it with
ANSIBLE_CALLBACK_PLUGINS=<this folder> and ANSIBLE_CALLBACKS_ENABLED=module_runs; with SCC_MODULE_RUNS_DIR set,
each run writes <dir>/<start time>-<pid>.json ({playbooks, hosts: {host: {runs, modules, tasks}}, stats}) and
prints one line per host."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any

from ansible.plugins.action import ActionBase
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: module_runs
type: aggregate
short_description: Count module executions per node
description:
  - Counts every module payload started on a node and writes the counts per host when the run ends.
options: {}
"""

_ENV_LOG = "_SCC_MODULE_RUNS_LOG"


def _record(action: ActionBase, module_name: str | None, task_vars: dict[str, Any] | None) -> None:
    path = os.environ.get(_ENV_LOG)
    if not path:
        return
    task = action._task
    host = str(task.delegate_to or (task_vars or {}).get("inventory_hostname") or "?")
    line = f"{host}\t{module_name or task.action}\t{task.get_name()}\n"
    with open(path, "a", encoding="utf-8") as handle:  # one short append per run: atomic across the workers
        handle.write(line)


def _patch() -> None:
    if getattr(ActionBase, "_scc_module_runs", False):
        return
    original = ActionBase._execute_module

    def counted(self: ActionBase, module_name: str | None = None, module_args: Any = None, tmp: Any = None,
                task_vars: dict[str, Any] | None = None, *args: Any, **kwargs: Any) -> Any:
        _record(self, module_name, task_vars)
        return original(self, module_name, module_args, tmp, task_vars, *args, **kwargs)

    ActionBase._execute_module = counted  # type: ignore[method-assign]
    ActionBase._scc_module_runs = True  # type: ignore[attr-defined]


class CallbackModule(CallbackBase):
    """Sum the module runs per host at the end of the run."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "module_runs"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._dir = os.environ.get("SCC_MODULE_RUNS_DIR", "")
        self._started = time.strftime("%Y%m%dT%H%M%S")
        self._playbooks: list[str] = []
        self._log = ""
        if self._dir:
            os.makedirs(self._dir, exist_ok=True)
            self._log = os.path.join(self._dir, f"{self._started}-{os.getpid()}.tsv")
            os.environ[_ENV_LOG] = self._log
            _patch()

    def _actionless(self, result: Any) -> None:
        """script and raw start no module: they run a file or a command on the node. Count each as one run."""
        task = result._task
        if self._log and task.action.split(".")[-1] in ("script", "raw") and not task.delegate_to:
            with open(self._log, "a", encoding="utf-8") as handle:
                handle.write(f"{result._host.get_name()}\t{task.action}\t{task.get_name()}\n")

    def v2_runner_on_ok(self, result: Any) -> None:
        self._actionless(result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._actionless(result)

    def v2_playbook_on_start(self, playbook: Any) -> None:
        self._playbooks.append(os.path.basename(str(getattr(playbook, "_file_name", ""))))

    def v2_playbook_on_stats(self, stats: Any) -> None:
        if not self._log:
            return
        runs: dict[str, Counter[str]] = {}
        tasks: dict[str, Counter[str]] = {}
        if os.path.exists(self._log):
            with open(self._log, encoding="utf-8") as handle:
                for line in handle:
                    host, module, name = [*line.rstrip("\n").split("\t", 2), "", ""][:3]
                    runs.setdefault(host, Counter())[module] += 1
                    tasks.setdefault(host, Counter())[name] += 1
        summary = {
            "playbooks": self._playbooks,
            "hosts": {h: {"runs": sum(c.values()), "modules": dict(c.most_common()),
                          "tasks": dict(tasks[h].most_common())} for h, c in sorted(runs.items())},
            "stats": {h: stats.summarize(h) for h in sorted(stats.processed)},
        }
        with open(self._log[:-len(".tsv")] + ".json", "w", encoding="utf-8") as handle:
            json.dump(summary, handle, indent=1, sort_keys=True)
        for host, entry in summary["hosts"].items():
            self._display.display(f"module runs: {host} {entry['runs']}")
