"""Shared fixtures: the scc inventory plugin loaded through Ansible's real plugin loader, from this checkout; a
role's Python file imported from its path; the inventory of a converged test bed for the tests marked `testbed`."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sccnlp.runner import _collections_path

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def collections_path() -> str:
    return _collections_path().split(":", maxsplit=1)[0]


@pytest.fixture(scope="session")
def plugin_factory(collections_path: str) -> Callable[[], Any]:
    from ansible.plugins.loader import init_plugin_loader, inventory_loader

    init_plugin_loader([collections_path])

    def make() -> Any:
        plugin = inventory_loader.get("scc.nlp_training.scc")
        assert plugin is not None, "scc.nlp_training.scc did not load"
        return plugin

    return make


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[[str], str]:
    def write(text: str, name: str = "test.scc.yml") -> str:
        path = tmp_path / name
        path.write_text("plugin: scc.nlp_training.scc\n" + text)
        return str(path)

    return write


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def role_file() -> Callable[[str, str], ModuleType]:
    """roles/<role>/files/<name>.py imported from its path: the roles run these on the nodes as scripts, the tests
    call their functions."""
    def load(role: str, name: str) -> ModuleType:
        path = ROOT / "roles" / role / "files" / name
        spec = importlib.util.spec_from_file_location(f"scc_{role}_{path.stem}", path)
        assert spec and spec.loader, path
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture
def no_default_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The Alibaba Cloud SDK's default credential chain finds nothing: no instance metadata, no CLI profile, no
    credentials file, no keys (it reads these settings at import, so they are patched where it keeps them)."""
    from alibabacloud_credentials.utils import auth_util

    monkeypatch.setattr(auth_util, "environment_ecs_metadata_disabled", "true")
    monkeypatch.setattr(auth_util, "environment_cli_profile_disabled", "true")
    monkeypatch.setattr(auth_util, "environment_credentials_file", str(tmp_path / "no-credentials"))
    monkeypatch.setattr(auth_util, "environment_access_key_id", None)
    monkeypatch.setattr(auth_util, "environment_access_key_secret", None)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.fixture(scope="session")
def testbed_inventory() -> str:
    """The inventory of a converged test bed: `scripts/test.sh e2e` brings one up (`sccnlp up`) and exports
    SCCNLP_TESTBED_INVENTORY. A testbed test without it fails: it must never count as a pass or a skip."""
    path = os.environ.get("SCCNLP_TESTBED_INVENTORY", "")
    if not path:
        pytest.fail("SCCNLP_TESTBED_INVENTORY is not set: run `sccnlp up` (or `./scripts/test.sh e2e`) and export the "
                    "inventory path `sccnlp testbed inventory` prints")
    if not Path(path).exists():
        pytest.fail(f"SCCNLP_TESTBED_INVENTORY={path} does not exist: bring the test bed up with `sccnlp up`")
    return path


@pytest.fixture(scope="session")
def prometheus_tool() -> Callable[[str], str]:
    """Path of promtool, prometheus or prometheus-node-exporter: Debian's packages at the monitoring role's pins,
    unpacked into .cache/tools/bin by `scripts/bootstrap.sh test`, else found on PATH. A missing tool fails the test
    (never a skip): the rule tests and the loopback Prometheus are part of the test command."""

    def find(name: str) -> str:
        path = ROOT / ".cache" / "tools" / "bin" / name
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        found = shutil.which(name)
        if found:
            return found
        pytest.fail(f"{name} not found (neither {path} nor on PATH): run `scripts/bootstrap.sh test`, which unpacks "
                    "Debian's prometheus and prometheus-node-exporter packages into .cache/tools/bin")

    return find
