"""The Galaxy import gate of the lint stage (scripts/galaxy-import.sh) can fail: a copy of the collection whose
galaxy.yml lacks `repository` (what Galaxy refused in issue 25) is built and imported by the same script, which must
exit non-zero with the importer's own message naming the missing key. The metadata is checked before the importer's
content, ansible-doc and ansible-lint passes (the test asserts none of them started), so the refusal is quick: 14 to
16 s for `pytest -q tests/integration/collection/test_galaxy_import_gate.py` on a shared two-core machine under load
(2026-12-06; the script alone 12 s), nearly all of it the tarball build and the importer's start-up."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "galaxy-import.sh"
# The importer's message for the metadata problem, and its log lines (galaxy_importer 0.4.44, INFO) of the passes
# that come after the metadata check and must not be reached.
REFUSAL = "Invalid collection metadata. 'repository' is required"
LATER_PASSES = ("Finding content inside collection", "Getting doc strings via ansible-doc",
                "Linting collection via ansible-lint")
# What a build would leave out anyway, and what would only make the copy slow.
NOT_COPIED = shutil.ignore_patterns(".git", ".venv", ".tox", ".cache", ".pytest_cache", ".ruff_cache", ".mypy_cache",
                                    "__pycache__", "*.egg-info", ".whl", ".device", ".testbed", "build", "dist", "out",
                                    "validate-report", "tests", "molecule", "scc-nlp_training-*.tar.gz")


@pytest.fixture()
def broken_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "nlp_training"
    shutil.copytree(ROOT, copy, ignore=NOT_COPIED, symlinks=True)
    galaxy = yaml.safe_load((copy / "galaxy.yml").read_text())
    assert galaxy.pop("repository"), "galaxy.yml has no repository: the gate would refuse the checkout itself"
    (copy / "galaxy.yml").write_text(yaml.safe_dump(galaxy, sort_keys=False))
    return copy


def test_import_gate_refuses_a_galaxy_yml_without_repository(broken_copy: Path) -> None:
    started = time.monotonic()
    proc = subprocess.run([str(SCRIPT), str(broken_copy)], cwd=ROOT, capture_output=True, text=True, check=False,
                          timeout=120)
    took = time.monotonic() - started
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"the gate passed a collection without `repository`:\n{out[-3000:]}"
    assert REFUSAL in out, f"exit {proc.returncode} without the importer's refusal ({REFUSAL!r}):\n{out[-3000:]}"
    assert "would not import cleanly" in proc.stderr, out[-3000:]
    reached = [p for p in LATER_PASSES if p in out]
    assert not reached, f"the importer went on past the metadata error ({reached}): the refusal is not the first"
    assert took < 60, f"the refusal took {took:.0f} s: the metadata check should stop the import at once"
