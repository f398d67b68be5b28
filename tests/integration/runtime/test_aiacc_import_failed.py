"""The aiacc role with a real wheel directory whose AIACC build does not import: with aiacc_backend aiacc the play
stops with the import error; nothing is taken from an index (pip runs with --no-index)."""

from __future__ import annotations

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


def test_required_aiacc_that_does_not_import_stops_with_the_error(role_play: Any, tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    wheels = _wheel_dir(tmp_path)
    run = role_play.run("aiacc", {"aiacc_backend": "aiacc", "aiacc_wheel_dir": str(wheels),
                                  "aiacc_package_version": "0.0.1", "aiacc_venv_path": str(tmp_path / "venv")},
                        tasks_from="main", check=False)
    flat = " ".join(run.output.split())
    assert run.rc == 2, run.output
    assert ("node-1: aiacc_backend is 'aiacc' but `import perseus.torch.horovod` failed after installing from "
            "wheel_dir: ImportError: cannot import name '_perseus_ops' from 'perseus.torch'") in flat, run.output
    assert "set aiacc_backend: auto to fall back to aiacc_fallback (native)" in flat
    # the stand-in was really installed from the directory, and nothing was rendered
    assert list((tmp_path / "venv").glob("lib/python3*/site-packages/perseus/torch/horovod.py"))
    assert not (tmp_path / "etc" / "scc.env").exists()
