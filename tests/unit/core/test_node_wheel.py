"""The node wheel (sccnlp-node): built with setuptools from sccnlp/node alone, reproducible, installable without
build tools, and every shipped module parses with the oldest Python the roles support."""

from __future__ import annotations

import ast
import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from plugins.plugin_utils import node_wheel
from sccnlp.node.filehash import sha256_file

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return node_wheel.build(str(tmp_path_factory.mktemp("a")))


def test_the_same_sources_give_the_same_bytes(built: dict[str, str], tmp_path: Path) -> None:
    again = node_wheel.build(str(tmp_path))
    assert again["sha256"] == built["sha256"] == sha256_file(Path(built["path"]))
    assert Path(again["path"]).read_bytes() == Path(built["path"]).read_bytes()
    import sccnlp
    assert built["name"] == f"sccnlp_node-{sccnlp.__version__}-py3-none-any.whl"


def test_the_wheel_is_sccnlp_node_and_a_version_stub(built: dict[str, str]) -> None:
    with zipfile.ZipFile(built["path"]) as zf:
        names = set(zf.namelist())
        wheel_meta = zf.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        stub = zf.read("sccnlp/__init__.py").decode()
    node_files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "sccnlp" / "node").rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts}
    assert {"sccnlp/node/bert/train.py", "sccnlp/node/gates/evaluate.py", "sccnlp/node/rdma_reader.py"} <= node_files
    shipped = {n for n in names if ".dist-info/" not in n}
    assert shipped == node_files | {"sccnlp/__init__.py", "sccnlp/py.typed"}
    import sccnlp
    assert f'__version__ = "{sccnlp.__version__}"' in stub and "import" not in stub
    assert "Generator: setuptools" in wheel_meta or "Generator: bdist_wheel" in wheel_meta, wheel_meta
    assert "Name: sccnlp-node" in metadata and "Requires-Python: >=3.9" in metadata, metadata


def test_node_code_parses_with_the_oldest_supported_python(built: dict[str, str]) -> None:
    with zipfile.ZipFile(built["path"]) as zf:
        modules = [n for n in zf.namelist() if n.endswith(".py")]
        assert len(modules) > 10
        for name in modules:
            ast.parse(zf.read(name).decode(), filename=name, feature_version=node_wheel.NODE_PYTHON_FLOOR)


def test_record_hashes_match_and_it_installs_without_build_tools(built: dict[str, str], tmp_path: Path) -> None:
    with zipfile.ZipFile(built["path"]) as zf:
        record = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
        for line in zf.read(record).decode().splitlines():
            path, digest, size = line.rsplit(",", 2)
            if path == record:
                continue
            data = zf.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={expected}" and int(size) == len(data), path
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target),
                    "--disable-pip-version-check", "-q", built["path"]], check=True)
    out = subprocess.run([sys.executable, "-S", "-c", "import sccnlp.node.gates.evaluate as e; print(e.__file__)"],
                         env={"PYTHONPATH": str(target)}, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip().startswith(str(target))


def test_a_missing_backend_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(node_wheel.NodeWheelError, match=r"Fix: .*setuptools"):
        node_wheel.build(str(tmp_path), python="/bin/false")
