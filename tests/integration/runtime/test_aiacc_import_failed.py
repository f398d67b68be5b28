"""The aiacc role with a real wheel directory whose AIACC build does not import: with aiacc_backend aiacc the play
stops with the import error; nothing is taken from an index (pip runs with --no-index)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def _wheel_dir(tmp: Path) -> Path:
    target = tmp / "wheels"
    subprocess.run([sys.executable, str(ROOT / "molecule" / "runtime" / "files" / "make_test_wheel.py"), str(target)],
                   check=True, capture_output=True)
    return target


def _sha256(wheels: Path) -> str:
    return hashlib.sha256(next(wheels.glob("*.whl")).read_bytes()).hexdigest()


def test_a_wheel_that_does_not_match_its_sha256_is_refused_by_pip(role_play: Any, tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    wheels = _wheel_dir(tmp_path)
    run = role_play.run("aiacc", {"aiacc_backend": "aiacc", "aiacc_wheel_dir": str(wheels),
                                  "aiacc_package_version": "0.0.1", "aiacc_venv_path": str(tmp_path / "venv"),
                                  "aiacc_wheel_sha256": "0" * 64},
                        tasks_from="main", check=False)
    assert run.rc == 2, run.output
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in run.output
    assert "perseus_torch-0.0.1-py3-none-any.whl" in run.output
    assert not list((tmp_path / "venv").glob("lib/python3*/site-packages/perseus"))  # nothing installed from it


def test_a_wheel_directory_without_a_sha256_is_refused_before_any_change(role_play: Any, tmp_path: Path) -> None:
    run = role_play.run("aiacc", {"aiacc_backend": "aiacc", "aiacc_wheel_dir": str(tmp_path),
                                  "aiacc_package_version": "0.0.1", "aiacc_venv_path": str(tmp_path / "venv")},
                        tasks_from="main", check=False)
    flat = " ".join(run.output.split())
    assert run.rc == 2, run.output
    assert ("node-1: aiacc_wheel_dir needs aiacc_package_version and aiacc_wheel_sha256 (the wheel is installed "
            "with --require-hashes)") in flat, run.output
    assert not (tmp_path / "venv").exists()


def test_required_aiacc_that_does_not_import_stops_with_the_error(role_play: Any, tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    wheels = _wheel_dir(tmp_path)
    run = role_play.run("aiacc", {"aiacc_backend": "aiacc", "aiacc_wheel_dir": str(wheels),
                                  "aiacc_package_version": "0.0.1", "aiacc_venv_path": str(tmp_path / "venv"),
                                  "aiacc_wheel_sha256": _sha256(wheels)},
                        tasks_from="main", check=False)
    flat = " ".join(run.output.split())
    assert run.rc == 2, run.output
    assert ("node-1: aiacc_backend is 'aiacc' but `import perseus.torch.horovod` failed after installing from "
            "wheel_dir: ImportError: cannot import name '_perseus_ops' from 'perseus.torch'") in flat, run.output
    assert "set aiacc_backend: auto to fall back to aiacc_fallback (native)" in flat
    # the stand-in was really installed from the directory, and nothing was rendered
    assert list((tmp_path / "venv").glob("lib/python3*/site-packages/perseus/torch/horovod.py"))
    assert not (tmp_path / "etc" / "scc.env").exists()
