"""The bert role's settings (defaults vs argument specs) and its controller-side wheel builder."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

import sccnlp

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "bert"


def test_defaults_and_both_entry_points_list_the_same_settings() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert set(specs) == {"main", "preflight"}
    assert set(specs["main"]["options"]) == set(defaults) == set(specs["preflight"]["options"])
    for name, value in defaults.items():
        spec = specs["main"]["options"][name]
        if not (isinstance(value, str) and "{{" in value):
            assert spec["default"] == value, name
        if "choices" in spec and not (isinstance(value, str) and "{{" in value):
            assert value in spec["choices"], name


def _builder():
    spec = importlib.util.spec_from_file_location("sccnlp_wheel", ROLE / "files" / "sccnlp_wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_wheel_is_reproducible_and_complete(tmp_path: Path) -> None:
    builder = _builder()
    first = builder.build(ROOT, tmp_path / "a")
    second = builder.build(ROOT, tmp_path / "b")
    # The version comes from sccnlp.__version__ (pyproject declares it dynamic).
    assert first.name == second.name == f"sccnlp-{sccnlp.__version__}-py3-none-any.whl"
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as zf:
        names = zf.namelist()
        assert "sccnlp/bert/prepare.py" in names and "sccnlp/cli.py" in names
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        for line in zf.read(record).decode().splitlines():
            path, digest, size = line.rsplit(",", 2)
            if path == record:
                continue
            data = zf.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={expected}" and int(size) == len(data), path
        entry = next(n for n in names if n.endswith("entry_points.txt"))
        assert "sccnlp = sccnlp.cli:main" in zf.read(entry).decode()


def test_wheel_installs_without_build_tools(tmp_path: Path) -> None:
    wheel = _builder().build(ROOT, tmp_path / "w")
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target),
                    "--disable-pip-version-check", "-q", str(wheel)], check=True)
    assert (target / "sccnlp" / "bert" / "shards.py").is_file()
    # -S: no site packages (the checkout may be installed in editable mode there); cwd away from the checkout
    out = subprocess.run([sys.executable, "-S", "-c", "import sccnlp.bert.corpus as c; print(c.__file__)"],
                         env={"PYTHONPATH": str(target)}, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip().startswith(str(target))
