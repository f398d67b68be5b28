"""Fixtures for the runtime roles' unit tests: the aiacc role's decision logic loaded by path, recorded outputs."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def aiacc() -> ModuleType:
    path = ROOT / "roles" / "aiacc" / "files" / "aiacc_logic.py"
    spec = importlib.util.spec_from_file_location("scc_aiacc_filters", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return Path(__file__).resolve().parent / "data"
