"""sccnlp: drives the scc.nlp_training collection; its node-side programs are the subpackage `sccnlp.node`.

The Python API of the controller side (the same runs as the `sccnlp` command, without its printing of a summary):

    import sccnlp

    result = sccnlp.deploy("inventory/static/hosts.yml", check=True)  # site.yml in check mode
    print(result.ok, {host: h.changed for host, h in result.hosts.items()})

- ``deploy(inventory, *, playbook="site", check=False, ...)``: site.yml (or one phase) on the inventory.
- ``validate(inventory, *, report_dir, ...)``: validate.yml; report.json/report.html written under ``report_dir``.
- ``train(inventory, *, model=None, steps=None, ...)``: bert.yml (data preparation and the training run).
- ``run_playbook(name, inventory, ...)``: any playbook of the collection (``playbooks/<name>.yml``) or a .yml path.

Each returns a ``RunResult`` (``.ok``, ``.rc``, ``.hosts``: per host ok/changed/failed/unreachable and messages) and
raises ``SccError`` for input refused before anything runs (unknown playbook or tag, missing inventory, bad YAML).
Options common to all: ``limit``, ``tags``, ``extravars``, ``verbose``, ``stream`` (progress lines; default stdout).
The controller modules are imported on call, so the node programs (`sccnlp.node`) import from a checkout without
them; on the nodes, the sccnlp-node wheel puts a stub of this package in its place.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

# sccnlp.runner.RunResult; the annotations name it without importing it (see the module docstring).
RunResult = Any

__version__ = "0.3.0"
__all__ = ["__version__", "deploy", "run_playbook", "train", "validate"]


def run_playbook(name: str, inventory: str | os.PathLike[str], **options: Any) -> RunResult:
    """Run `playbooks/<name>.yml` of the collection (or a .yml path) on `inventory`; options as sccnlp.runner's
    run_playbook (extravars, limit, tags, check, verbose, stream, envvars, event_handler)."""
    runner = importlib.import_module("sccnlp.runner")
    return runner.run_playbook(name, inventory, **options)


def deploy(inventory: str | os.PathLike[str], *, playbook: str = "site", check: bool = False,
           **options: Any) -> RunResult:
    """Take the nodes from bare to training-ready (site.yml, or one phase: preflight, cluster, storage, gpu_stack,
    runtime, validate); with check=True report what would change and change nothing."""
    return run_playbook(playbook, inventory, check=check, **options)


def validate(inventory: str | os.PathLike[str], *, report_dir: str | os.PathLike[str], **options: Any) -> RunResult:
    """Validate the cluster (validate.yml): fragments, report.json and report.html under `report_dir`."""
    extravars = {**(options.pop("extravars", None) or {}), "validate_report_dir": os.fspath(report_dir)}
    return run_playbook("validate", inventory, extravars=extravars, **options)


def train(inventory: str | os.PathLike[str], *, model: str | None = None, steps: int | None = None,
          **options: Any) -> RunResult:
    """Prepare the data and run BERT pretraining across the nodes (bert.yml); `model` and `steps` set bert_model and
    bert_steps, other bert_* settings go in extravars."""
    extravars = dict(options.pop("extravars", None) or {})
    if model is not None:
        extravars["bert_model"] = model
    if steps is not None:
        extravars["bert_steps"] = steps
    return run_playbook("bert", inventory, extravars=extravars, **options)
