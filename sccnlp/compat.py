"""Python access to the GPU stack compatibility matrix (sccnlp/data/compat_matrix.yml) for the CLI and tests.

The rules live in plugins/module_utils/scc_compat.py (pure Python, shared with the Ansible filters and the
gpu_facts module), imported by its collection name; this module loads the YAML and checks whole plans."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from sccnlp.errors import SccError
from sccnlp.paths import collection_module, data_dir


def matrix_path() -> Path:
    return data_dir() / "compat_matrix.yml"


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SccError(f"cannot read the compatibility matrix {path}: {exc}; restore it from the collection") from exc
    if not isinstance(data, dict) or data.get("schema") != 1:
        raise SccError(f"{path} is not a schema-1 compatibility matrix; restore it from the collection")
    return data


def load_matrix(path: Path | None = None) -> dict[str, Any]:
    """The matrix as a dict (cached per path)."""
    return _load(str(path or matrix_path()))


@lru_cache(maxsize=1)
def rules() -> ModuleType:
    """plugins/module_utils/scc_compat.py (it imports nothing from Ansible)."""
    return collection_module("plugins.module_utils.scc_compat")


def check_plan(plan: Mapping[str, Any], matrix: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One node's plan -> {'problems', 'notes', 'arch', 'skip'} (see scc_compat.check_plan)."""
    return rules().check_plan(dict(matrix or load_matrix()), dict(plan))


def check_cluster(plans: Iterable[Mapping[str, Any]], kernels: Mapping[str, str] | None = None,
                  matrix: Mapping[str, Any] | None = None) -> list[str]:
    """Every problem of every node's plan plus kernel drift across nodes, in node order."""
    table = dict(matrix or load_matrix())
    problems: list[str] = []
    for plan in plans:
        problems.extend(rules().check_plan(table, dict(plan))["problems"])
    problems.extend(rules().check_kernels(dict(kernels or {})))
    return problems


def assert_plan(plans: Iterable[Mapping[str, Any]], kernels: Mapping[str, str] | None = None) -> None:
    """Raise SccError listing every problem (one per line) when the plan is refused."""
    problems = check_cluster(plans, kernels)
    if problems:
        raise SccError("GPU stack plan refused:\n" + "\n".join(problems))


def arch_for(pci_device_id: str = "", model: str = "", chip: str = "") -> str:
    return str(rules().resolve_arch(load_matrix(), pci_device_id=pci_device_id, model=model, chip=chip))
