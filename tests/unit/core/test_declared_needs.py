"""Python and system needs where Ansible's tools read them: `ansible-builder introspect` of the collection (installed
layout: ansible_collections/scc/nlp_training) lists requirements.txt and bindep.txt through
meta/execution-environment.yml, and requirements.txt covers what the inventory plugin imports and the node wheel
build needs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[3]
BUILDER = Path(sys.executable).parent / "ansible-builder"


def _introspect(tmp_path: Path) -> dict[str, list[str]]:
    dest = tmp_path / "ansible_collections" / "scc" / "nlp_training"
    dest.mkdir(parents=True)
    for name in ("galaxy.yml", "requirements.txt", "bindep.txt", "meta"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        else:
            shutil.copy2(src, dest / name)
    proc = subprocess.run([str(BUILDER), "introspect", str(tmp_path)], capture_output=True, text=True, check=False,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return yaml.safe_load(proc.stdout)


def test_introspect_lists_the_python_and_system_needs(tmp_path: Path) -> None:
    found = _introspect(tmp_path)
    python = " ".join(found.get("python") or [])
    system = " ".join(found.get("system") or [])
    for need in ("alibabacloud_ecs20140526", "alibabacloud_tea_openapi", "setuptools"):
        assert need in python, f"ansible-builder introspect: python needs {found.get('python')} lack {need}"
    assert "openssh-client" in system, f"ansible-builder introspect: system needs {found.get('system')}"


def test_requirements_agree_with_the_controller_extra() -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["controller"]
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    for dep in extra:
        if dep.startswith("alibabacloud"):
            assert dep in lines, f"requirements.txt lacks the controller extra's {dep}"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _sep, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not pinned with =="
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_demo_requirements_are_the_test_requirements_pins() -> None:
    """`make demo` installs requirements/demo.txt, `make test` requirements/ci.txt: a venv made for the tests must
    serve the demo unchanged (scripts/bootstrap.sh relies on it), so every demo pin is in ci.txt at the same version."""
    demo, ci = _pins(ROOT / "requirements" / "demo.txt"), _pins(ROOT / "requirements" / "ci.txt")
    assert {"ansible", "ansible-core", "ansible-runner", "alibabacloud-ecs20140526"} <= demo.keys()
    differ = {name: (version, ci.get(name)) for name, version in demo.items() if ci.get(name) != version}
    assert not differ, f"requirements/demo.txt pins that requirements/ci.txt does not hold (demo, ci): {differ}"
    assert not {"ansible-lint", "molecule", "pytest", "mypy", "torch"} & demo.keys(), "test tools in the demo's needs"
