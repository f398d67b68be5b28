"""One version: sccnlp/__init__.py's __version__ is the source; the package metadata derives it, galaxy.yml's copy
(the collection's, which ansible-galaxy reads as plain YAML) must agree, and `sccnlp --version` prints it."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import tomllib
import yaml

import sccnlp

ROOT = Path(__file__).resolve().parents[3]


def test_pyproject_takes_the_version_from_the_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"], "pyproject.toml must not hold a copy of the version"
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sccnlp.__version__"}


def test_galaxy_yml_agrees_with_the_package() -> None:
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    assert str(galaxy["version"]) == sccnlp.__version__, (
        f"galaxy.yml says {galaxy['version']}, sccnlp/__init__.py says {sccnlp.__version__}: "
        "set galaxy.yml's version to __version__")


def test_installed_metadata_agrees_with_the_package() -> None:
    """The editable install of this checkout (make bootstrap) reports the same version through its metadata."""
    assert metadata.version("sccnlp") == sccnlp.__version__


def test_sccnlp_version_flag() -> None:
    proc = subprocess.run([sys.executable, "-m", "sccnlp.cli", "--version"], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"sccnlp {sccnlp.__version__}\n"
    assert proc.stderr == ""
