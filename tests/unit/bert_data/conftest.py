"""Fixtures: a real English corpus converted from installed Debian documentation (debian-reference-en)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sccnlp.node.bert import corpus as bcorpus

PACKAGE = "debian-reference-en"


def _docs_root(tmp: Path) -> Path:
    """`/` when the package is installed; otherwise the package unpacked from the Debian archive into `tmp`."""
    if Path("/usr/share/debian-reference").is_dir():
        return Path("/")
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        pytest.fail(f"these tests need the Debian package {PACKAGE}: apt-get install {PACKAGE}")
    tmp.mkdir(parents=True, exist_ok=True)
    got = subprocess.run(["apt-get", "download", PACKAGE], cwd=tmp, capture_output=True, text=True, check=False)
    debs = list(tmp.glob(f"{PACKAGE}_*.deb"))
    if got.returncode != 0 or not debs:
        pytest.fail(f"these tests need the Debian package {PACKAGE} (apt-get install {PACKAGE}): "
                    f"apt-get download failed: {got.stderr.strip()}")
    subprocess.run(["dpkg", "-x", str(debs[0]), str(tmp / "root")], check=True)
    return tmp / "root"


@pytest.fixture(scope="session")
def docs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _docs_root(tmp_path_factory.mktemp("debs"))


@pytest.fixture(scope="session")
def real_corpus(docs_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "debian-reference.txt"
    bcorpus.write_corpus(bcorpus.iter_debian_documents([PACKAGE], docs_root), out)
    return out
