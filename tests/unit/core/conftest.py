"""Shared helpers for the tests of the `sccnlp` core (cli, runner, paths, deploy, test-bed spec): no Docker."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def local_inventory(tmp_path: Path) -> Path:
    """An inventory of this machine under two names (connection local) plus one host whose SSH port is closed."""
    inv = tmp_path / "inventory.ini"
    inv.write_text(
        "[scc_cluster]\n"
        f"good ansible_connection=local ansible_python_interpreter={sys.executable}\n"
        f"bad ansible_connection=local ansible_python_interpreter={sys.executable}\n"
        "gone ansible_connection=ssh ansible_host=127.0.0.2 ansible_port=1 ansible_user=nobody\n"
    )
    return inv


@pytest.fixture(autouse=True, scope="session")
def _private_collections_shim(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """run_playbook links the collection under SCCNLP_COLLECTIONS_PATH: keep these tests off the shared shim (a
    copy of the tree under test must not re-point the link every other engineer's runs use)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SCCNLP_COLLECTIONS_PATH", str(tmp_path_factory.mktemp("collections-shim")))
        yield
