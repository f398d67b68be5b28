# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Build the node-side wheel `sccnlp-node` on the controller: the one way node programs reach the nodes.

The wheel is the package `sccnlp/node/` as it is (every file under it: data preparation and trainer
`sccnlp.node.bert`, validation gates `sccnlp.node.gates`, the RDMA counter reader, the error type), plus a generated
stub `sccnlp/__init__.py` holding only the version: the controller side of `sccnlp` never reaches the nodes, and
nothing decides file by file what ships. The sources are found through the import system (the collection's
`sccnlp/` folder, or the `sccnlp` package itself), so a checkout and an installed collection tarball build the
same wheel.

The wheel is built by the standard backend (setuptools' `build_meta` through `pip wheel --no-build-isolation
--no-index`, offline, with the setuptools of the controller's Python) from a staging copy of those files and a
generated pyproject.toml. SOURCE_DATE_EPOCH fixes the timestamps, so the same sources give the same bytes and the
same sha256: re-delivering an unchanged wheel changes nothing on the nodes."""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.resources
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

DIST_NAME = "sccnlp-node"
# The oldest Python of a training venv the runtime roles build (EL8/EL9 python39); a unit test parses every shipped
# module with this feature_version.
NODE_PYTHON_FLOOR = (3, 9)
# The subpackage of sccnlp that is the node wheel.
NODE_PACKAGE = "node"
SETUPTOOLS_FLOOR = (68, 0)
_EPOCH = "315532800"  # 1980-01-01, the oldest time a zip entry holds


class NodeWheelError(RuntimeError):
    """The node wheel could not be built; the message says why and the fix."""


def package_dir() -> Path:
    """The sccnlp package folder: the collection's copy as Ansible imports it, else the sccnlp package."""
    errors = []
    for package, sub in (("ansible_collections.scc.nlp_training", "sccnlp"), ("sccnlp", "")):
        try:
            root = importlib.resources.files(importlib.import_module(package))
        except (ImportError, TypeError) as exc:
            errors.append("%s: %s" % (package, exc))
            continue
        folder = Path(str(root.joinpath(sub) if sub else root))
        if (folder / "__init__.py").is_file() and (folder / NODE_PACKAGE / "__init__.py").is_file():
            return folder
        errors.append("%s: no sccnlp package with %s/ at %s" % (package, NODE_PACKAGE, folder))
    raise NodeWheelError("the sccnlp sources were not found (%s). Fix: reinstall the scc.nlp_training collection"
                         % "; ".join(errors))


def node_sources(pkg: Path) -> list[Path]:
    """Every file of sccnlp/node (caches aside), relative to the sccnlp package folder, sorted."""
    return sorted(path.relative_to(pkg) for path in (pkg / NODE_PACKAGE).rglob("*")
                  if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc")


def _stub_init(version: str) -> str:
    return ('"""Node-side programs of scc.nlp_training (sccnlp.node); the controller side of sccnlp is not '
            'installed here."""\n\n__version__ = "%s"\n' % version)


def package_version(pkg: Path) -> str:
    """sccnlp.__version__, read without importing the package."""
    tree = ast.parse((pkg / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    raise NodeWheelError("%s has no __version__ = \"...\". Fix: restore it" % (pkg / "__init__.py"))


def _pyproject(version: str, files: list[Path]) -> str:
    """pyproject.toml of the staging copy: every folder with an __init__.py is a package, every other file its
    package data."""
    packages = sorted({".".join(("sccnlp", *rel.parent.parts)) for rel in files if rel.name == "__init__.py"})
    data: dict[str, list[str]] = {"sccnlp": ["py.typed"]}
    for rel in files:
        if rel.suffix != ".py":
            data.setdefault(".".join(("sccnlp", *rel.parent.parts)), []).append(rel.name)
    floor = "%d.%d" % NODE_PYTHON_FLOOR
    return (
        "[build-system]\n"
        "requires = [\"setuptools>=%d\"]\n"
        "build-backend = \"setuptools.build_meta\"\n\n"
        "[project]\n"
        "name = \"%s\"\n"
        "version = \"%s\"\n"
        "description = \"Node-side programs of scc.nlp_training (data preparation, trainer, validation gates).\"\n"
        "requires-python = \">=%s\"\n\n"
        "[tool.setuptools]\n"
        "packages = [%s]\n"
        "include-package-data = false\n\n"
        "[tool.setuptools.package-data]\n"
        "%s"
    ) % (SETUPTOOLS_FLOOR[0], DIST_NAME, version, floor, ", ".join('"%s"' % p for p in ["sccnlp", *packages]),
         "".join('"%s" = [%s]\n' % (package, ", ".join('"%s"' % n for n in sorted(names)))
                 for package, names in sorted(data.items())))


def _check_backend(python: str) -> None:
    probe = subprocess.run(
        [python, "-c", "import setuptools; print(setuptools.__version__)"],
        capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        raise NodeWheelError("the controller's Python %s has no setuptools (the build backend of the node wheel). "
                             "Fix: %s -m pip install 'setuptools>=%d' (or run `make bootstrap`)"
                             % (python, python, SETUPTOOLS_FLOOR[0]))
    parts = tuple(int(p) for p in probe.stdout.strip().split(".")[:2] if p.isdigit())
    if parts < SETUPTOOLS_FLOOR:
        raise NodeWheelError("setuptools %s in %s is older than %d. Fix: %s -m pip install 'setuptools>=%d'"
                             % (probe.stdout.strip(), python, SETUPTOOLS_FLOOR[0], python, SETUPTOOLS_FLOOR[0]))


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def build(out_dir: str, python: str | None = None) -> dict[str, str]:
    """Build (or find, when the same sources were built before) the node wheel in out_dir.

    Returns {'path', 'name', 'sha256', 'version'}."""
    python = python or sys.executable
    pkg = package_dir()
    version = package_version(pkg)
    files = node_sources(pkg)
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    name = "%s-%s-py3-none-any.whl" % (DIST_NAME.replace("-", "_"), version)
    _check_backend(python)
    with tempfile.TemporaryDirectory(prefix="sccnlp-node-") as tmp:
        stage = Path(tmp) / "src"
        for rel in files:
            dest = stage / "sccnlp" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pkg / rel, dest)
        (stage / "sccnlp" / "__init__.py").write_text(_stub_init(version), encoding="utf-8")
        (stage / "sccnlp" / "py.typed").write_text("", encoding="utf-8")
        (stage / "pyproject.toml").write_text(_pyproject(version, files), encoding="utf-8")
        wheel_dir = Path(tmp) / "wheel"
        env = dict(os.environ, SOURCE_DATE_EPOCH=_EPOCH, PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
        env.pop("PIP_INDEX_URL", None)
        run = subprocess.run(
            [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
             "--wheel-dir", str(wheel_dir), str(stage)],
            capture_output=True, text=True, check=False, env=env, cwd=tmp)
        built = wheel_dir / name
        if run.returncode != 0 or not built.is_file():
            tail = " | ".join((run.stderr or run.stdout).strip().splitlines()[-4:])
            raise NodeWheelError("building %s with setuptools failed (rc %d): %s. Fix: check that %s has pip and "
                                 "setuptools>=%d" % (name, run.returncode, tail, python, SETUPTOOLS_FLOOR[0]))
        target = out / name
        digest = _sha256(built)
        # Replace the wheel only when its bytes changed, so its file time tells when the sources last changed.
        if not target.is_file() or _sha256(target) != digest:
            tmp_target = out / (".%s.%d.tmp" % (name, os.getpid()))
            shutil.copyfile(built, tmp_target)
            os.replace(tmp_target, target)
    return {"path": str(target), "name": name, "sha256": digest, "version": version}
