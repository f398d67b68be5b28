"""roles/nccl_tests/files/find_nccl.sh: NCCL headers + library from NCCL_HOME, the system, or a venv's pip wheel."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import ROOT

SCRIPT = ROOT / "roles" / "nccl_tests" / "files" / "find_nccl.sh"


def _run(home: str, venv: str, system: str = "/nonexistent-prefix") -> subprocess.CompletedProcess[str]:
    """The script with the system prefixes pointed away, so this machine's own NCCL (if any) cannot answer."""
    return subprocess.run(["sh", str(SCRIPT), home, venv, system], capture_output=True, text=True, check=False)


def _wheel(venv: Path) -> tuple[Path, Path]:
    """The nvidia-nccl-cu12/cu13 wheel layout: site-packages/nvidia/nccl/{include/nccl.h, lib/libnccl.so.2}."""
    base = venv / "lib" / "python3.12" / "site-packages" / "nvidia" / "nccl"
    (base / "include").mkdir(parents=True)
    (base / "lib").mkdir()
    (base / "include" / "nccl.h").write_text("/* header */\n")
    (base / "lib" / "libnccl.so.2").write_bytes(b"\x7fELF")
    return base / "include", base / "lib" / "libnccl.so.2"


def test_wheel_in_venv(tmp_path):
    include, lib = _wheel(tmp_path / "venv")
    result = _run("", str(tmp_path / "venv"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(include), str(lib)]


def test_venv_given_as_symlink(tmp_path):
    include, lib = _wheel(tmp_path / "real")
    (tmp_path / "venv").symlink_to(tmp_path / "real")
    result = _run("", str(tmp_path / "venv"))
    assert result.stdout.split() == [str(tmp_path / "venv" / include.relative_to(tmp_path / "real")),
                                     str(tmp_path / "venv" / lib.relative_to(tmp_path / "real"))]


def test_system_prefix_with_lib64(tmp_path):
    prefix = tmp_path / "usr"
    (prefix / "include").mkdir(parents=True)
    (prefix / "lib64").mkdir()
    (prefix / "include" / "nccl.h").write_text("")
    (prefix / "lib64" / "libnccl.so").write_text("")
    _wheel(tmp_path / "venv")
    result = _run("", str(tmp_path / "venv"), str(prefix))
    assert result.stdout.split() == [str(prefix / "include"), str(prefix / "lib64" / "libnccl.so")]


def test_nccl_home_wins(tmp_path):
    home = tmp_path / "nccl"
    (home / "include").mkdir(parents=True)
    (home / "lib").mkdir()
    (home / "include" / "nccl.h").write_text("")
    (home / "lib" / "libnccl.so").write_text("")
    result = _run(str(home), str(tmp_path / "none"))
    assert result.stdout.split() == [str(home / "include"), str(home / "lib" / "libnccl.so")]


def test_nothing_found_says_where_it_looked(tmp_path):
    result = _run(str(tmp_path / "nope"), str(tmp_path / "novenv"))
    assert result.returncode == 1
    assert "no NCCL found" in result.stderr and str(tmp_path / "novenv") in result.stderr
