"""`sccnlp.paths`: where the collection is, from a checkout or through SCCNLP_COLLECTION."""

from __future__ import annotations

from pathlib import Path

import pytest

from sccnlp import paths

ROOT = Path(__file__).resolve().parents[3]


def test_collection_root_of_a_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCCNLP_COLLECTION", raising=False)
    root = paths.collection_root()
    assert root == ROOT
    assert (root / "galaxy.yml").is_file()
    assert paths.playbook("site") == ROOT / "playbooks" / "site.yml"
    assert paths.playbook("site").is_file()


def test_empty_override_means_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCCNLP_COLLECTION", "")
    assert paths.collection_root() == ROOT


def test_collection_root_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    other = tmp_path / "ansible_collections" / "scc" / "nlp_training"
    other.mkdir(parents=True)
    monkeypatch.setenv("SCCNLP_COLLECTION", str(other))
    assert paths.collection_root() == other
    assert paths.playbook("bert") == other / "playbooks" / "bert.yml"


def test_relative_override_is_made_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "coll").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCCNLP_COLLECTION", "coll")
    root = paths.collection_root()
    assert root.is_absolute()
    assert root == (tmp_path / "coll").resolve()


def test_data_dir_holds_the_shared_data() -> None:
    names = {p.name for p in paths.data_dir().glob("*.yml")}
    assert {"compat_matrix.yml", "floors.yml", "instance_types.yml"} <= names
