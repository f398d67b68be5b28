"""Fixtures for the runtime roles' unit tests: the aiacc role's decisions (plugin_utils.aiacc), recorded outputs."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from sccnlp.runner import _collections_path

for entry in reversed(_collections_path().split(":")):
    if entry and entry not in sys.path:
        sys.path.insert(0, entry)


@pytest.fixture(scope="session")
def aiacc() -> ModuleType:
    from ansible_collections.scc.nlp_training.plugins.plugin_utils import aiacc as module

    return module


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return Path(__file__).resolve().parent / "data"
