"""Make the collection importable as `ansible_collections.scc.nlp_training` and give the tests the matrix."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from sccnlp.compat import load_matrix
from sccnlp.runner import _collections_path

FIXTURES = Path(__file__).resolve().parent / "fixtures"

for entry in reversed(_collections_path().split(":")):
    if entry and entry not in sys.path:
        sys.path.insert(0, entry)


@pytest.fixture(scope="session")
def matrix() -> dict[str, Any]:
    return load_matrix()


@pytest.fixture
def fixture_text():
    def read(kind: str, name: str) -> str:
        return (FIXTURES / kind / name).read_text()

    return read
