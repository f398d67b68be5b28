"""Shared paths for the validation tests; makes `ansible_collections.scc.nlp_training` importable (parsers)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from sccnlp.runner import _collections_path

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
RDMA_TREE = FIXTURES / "rdma_sysfs" / "cx6_roce"

for entry in reversed(_collections_path().split(":")):
    if entry and entry not in sys.path:
        sys.path.insert(0, entry)


@pytest.fixture(scope="session")
def rdma_sysfs() -> ModuleType:
    """The ib_check role's sysfs reader (roles/ib_check/files/rdma_sysfs.py), imported from its path."""
    path = ROOT / "roles" / "ib_check" / "files" / "rdma_sysfs.py"
    spec = importlib.util.spec_from_file_location("rdma_sysfs", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
