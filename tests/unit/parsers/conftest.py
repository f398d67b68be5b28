"""Make the collection importable as `ansible_collections.scc.nlp_training` (the same shim `sccnlp` uses)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sccnlp.runner import _collections_path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tool_outputs"

for entry in reversed(_collections_path().split(":")):
    if entry and entry not in sys.path:
        sys.path.insert(0, entry)


@pytest.fixture
def fixture_text():
    def read(tool: str, name: str) -> str:
        return (FIXTURES / tool / name).read_text()

    return read
