"""Fixtures for the runtime roles' unit tests: the aiacc role's decision logic loaded by path, recorded outputs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def aiacc(role_file: Callable[[str, str], ModuleType]) -> ModuleType:
    return role_file("aiacc", "aiacc_logic.py")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return Path(__file__).resolve().parent / "data"
