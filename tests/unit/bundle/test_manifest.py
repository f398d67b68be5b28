"""The bundle manifest: entries and summary, verification (a tampered, truncated or missing file is named with the
node), the target check (another release/architecture/Python refused before any change), reuse on a re-run, and
no credentials in a recorded source."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sccnlp.bundle import manifest as m

TARGET = {"release": "debian-12", "arch": "x86_64", "python": "3.11"}


def _bundle(tmp_path: Path) -> tuple[Path, dict]:
    (tmp_path / "deb").mkdir()
    (tmp_path / "wheels").mkdir()
    (tmp_path / "deb" / "openmpi-bin_4.1.4-3_amd64.deb").write_bytes(b"deb payload" * 100)
    (tmp_path / "wheels" / "PyYAML-6.0.2-cp311.whl").write_bytes(b"wheel payload")
    entries = [m.entry_for(tmp_path, "deb/openmpi-bin_4.1.4-3_amd64.deb", "openmpi-bin", "4.1.4-3", "debian",
                           "openmpi"),
               m.entry_for(tmp_path, "wheels/PyYAML-6.0.2-cp311.whl", "pyyaml", "6.0.2", "pypi", "python36")]
    doc = m.manifest(entries, TARGET, {"nvidia-cudnn": "a downloader package, fetches from NVIDIA at install"})
    (tmp_path / m.MANIFEST).write_text(json.dumps(doc))
    return tmp_path, doc


def test_manifest_and_summary(tmp_path: Path) -> None:
    bundle, doc = _bundle(tmp_path)
    assert m.load(bundle) == doc
    assert [e["role"] for e in doc["entries"]] == ["openmpi", "python36"]
    assert doc["entries"][1]["sha256"] == m.sha256_file(bundle / "wheels" / "PyYAML-6.0.2-cp311.whl")
    s = m.summary(doc)
    assert s == {"count": 2, "total_bytes": 1100 + 13, "by_role": {"openmpi": 1, "python36": 1},
                 "unfetched": {"nvidia-cudnn": "a downloader package, fetches from NVIDIA at install"}}
    assert m.verify(bundle, doc) == []


def test_a_tampered_file_is_named_with_the_node(tmp_path: Path) -> None:
    bundle, doc = _bundle(tmp_path)
    (bundle / "wheels" / "PyYAML-6.0.2-cp311.whl").write_bytes(b"wheel paylOad")  # same size, other bytes
    problems = m.verify(bundle, doc, node="node-2")
    assert len(problems) == 1
    assert problems[0].startswith("node-2: bundle file wheels/PyYAML-6.0.2-cp311.whl (pyyaml 6.0.2, for python36) "
                                  "does not match the manifest: sha256 ")
    assert "refused before anything was installed from it" in problems[0] and "sccnlp bundle build" in problems[0]


def test_a_missing_or_truncated_file_is_named(tmp_path: Path) -> None:
    bundle, doc = _bundle(tmp_path)
    (bundle / "deb" / "openmpi-bin_4.1.4-3_amd64.deb").unlink()
    (bundle / "wheels" / "PyYAML-6.0.2-cp311.whl").write_bytes(b"wheel")
    problems = m.verify(bundle, doc, node="node-1")
    assert "node-1: bundle file deb/openmpi-bin_4.1.4-3_amd64.deb (openmpi-bin 4.1.4-3, for openmpi) is missing" \
        in problems[0]
    assert "size 5; expected" in problems[1]
    assert m.verify(bundle, doc, node="node-1", only=["wheels/PyYAML-6.0.2-cp311.whl"]) == problems[1:]


@pytest.mark.parametrize(("release", "arch", "python", "expected"), [
    ("debian-12", "x86_64", "3.11", ""),
    ("ubuntu-22.04", "x86_64", "3.11",
     "node-3: the bundle was built for release debian-12 (the node has ubuntu-22.04)"),
    ("debian-12", "aarch64", "3.11", "node-3: the bundle was built for arch x86_64 (the node has aarch64)"),
    ("debian-12", "x86_64", "3.12", "node-3: the bundle was built for python 3.11 (the node has 3.12)"),
])
def test_another_target_is_refused_before_any_change(
        tmp_path: Path, release: str, arch: str, python: str, expected: str) -> None:
    _unused, doc = _bundle(tmp_path)
    message = m.check_target(doc, "node-3", release, arch, python)
    assert message.startswith(expected)
    if expected:
        assert "nothing was changed" in message and "sccnlp bundle build" in message


def test_not_a_bundle_is_refused_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(m.BundleError, match=re.escape("has no manifest.json: it is not a bundle")):
        m.load(tmp_path)
    (tmp_path / m.MANIFEST).write_text("{broken")
    with pytest.raises(m.BundleError, match=re.escape("is not readable JSON")):
        m.load(tmp_path)
    (tmp_path / m.MANIFEST).write_text(json.dumps({"schema": 99, "entries": []}))
    with pytest.raises(m.BundleError, match=re.escape("is not a schema-1 bundle manifest")):
        m.load(tmp_path)


def test_a_rerun_reuses_only_what_verifies(tmp_path: Path) -> None:
    bundle, doc = _bundle(tmp_path)
    assert m.reusable(bundle, doc, "deb/openmpi-bin_4.1.4-3_amd64.deb") is not None
    (bundle / "deb" / "openmpi-bin_4.1.4-3_amd64.deb").write_bytes(b"partial")
    assert m.reusable(bundle, doc, "deb/openmpi-bin_4.1.4-3_amd64.deb") is None
    assert m.reusable(bundle, None, "wheels/PyYAML-6.0.2-cp311.whl") is None


def test_duplicate_files_and_credentials(tmp_path: Path) -> None:
    _unused, doc = _bundle(tmp_path)
    entry = m.Entry(**doc["entries"][0])
    with pytest.raises(m.BundleError, match=re.escape("lists deb/openmpi-bin_4.1.4-3_amd64.deb twice")):
        m.manifest([entry, entry], TARGET)
    assert m.safe_source("https://user:secret@mirror.invalid:8443/aiacc/x.whl?Signature=abc#f") == \
        "https://mirror.invalid:8443/aiacc/x.whl"


def test_bundle_target_against_the_node() -> None:
    from plugins.plugin_utils.bundle_target import mismatch

    node = {"release": "12", "arch": "amd64", "python": "3.11"}
    assert mismatch({"release": "12", "arch": "amd64", "python": "3.11"}, node) == []
    assert mismatch({"release": "11", "arch": "arm64", "python": "3.11"}, node) == [
        "release 11 (the node has 12)", "arch arm64 (the node has amd64)"]
    assert mismatch({}, node) == ["release ? (the node has 12)", "arch ? (the node has amd64)",
                                  "python ? (the node has 3.11)"]
