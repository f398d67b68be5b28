"""Shared paths for the validation tests; makes `ansible_collections.scc.nlp_training` importable (parsers)."""

from __future__ import annotations

import sys
from collections.abc import Callable
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
def rdma_sysfs(role_file: Callable[[str, str], ModuleType]) -> ModuleType:
    """The ib_check role's sysfs reader (roles/ib_check/files/rdma_sysfs.py)."""
    return role_file("ib_check", "rdma_sysfs.py")
