"""Bundle wheels: the lock's sets become hash-pinned `pip download` runs for the nodes' interpreter and platform; a
file already there that matches the lock is reused without pip; a file whose sha256 differs is removed and listed;
pip's failures are reported per file with URLs stripped of credentials."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sccnlp.bundle import wheels as w
from sccnlp.errors import SccError
from sccnlp.paths import data_dir

A = b"wheel a"
B = b"wheel b"
LOCK = {"target": {"python": "3.11", "platform": "linux_x86_64", "release": "debian-12"},
        "sets": {"one": {"pins": [{"name": "a", "version": "1", "file": "a-1-py3-none-any.whl",
                                   "sha256": hashlib.sha256(A).hexdigest()}]},
                 "two": {"pins": [{"name": "a", "version": "1", "file": "a-1-py3-none-any.whl",
                                   "sha256": hashlib.sha256(A).hexdigest()},
                                  {"name": "b", "version": "2", "file": "b-2-cp311-cp311-manylinux_2_17_x86_64.whl",
                                   "sha256": hashlib.sha256(B).hexdigest()}]}}}


def test_the_collections_lock_has_a_usable_target_and_only_wheels() -> None:
    lock = yaml.safe_load((data_dir() / "pip_lock.yml").read_text())
    assert w.lock_target(lock, "lock") == ("3.11", "linux_x86_64", "debian-12")
    found = w.wheels_for(lock, {"python36": ["python36"], "pytorch": ["pytorch-cpu"]}, "lock")
    assert {x.role for x in found if x.name == "pyyaml"} == {"python36"}
    assert any(x.name == "torch" and x.role == "pytorch" for x in found)


def test_sets_are_merged_each_file_once_first_role_wins() -> None:
    found = w.wheels_for(LOCK, {"python36": ["one"], "pytorch": ["two"]}, "lock")
    assert [(x.name, x.role) for x in found] == [("a", "python36"), ("b", "pytorch")]


def test_a_missing_set_names_the_setting() -> None:
    with pytest.raises(SccError, match=r"no set 'three'.*pytorch_pip_lock_set"):
        w.wheels_for(LOCK, {"pytorch": ["three"]}, "lock")


def test_pip_argv_targets_the_nodes_not_the_controller(tmp_path: Path) -> None:
    argv = w.pip_argv("3.11", "linux_x86_64", "debian-12", tmp_path / "r.txt", tmp_path, pip=["pip"])
    text = " ".join(argv)
    for part in ("download", "--only-binary=:all:", "--no-deps", "--require-hashes", "--python-version 3.11",
                 "--implementation cp", "--abi cp311", "--platform manylinux_2_36_x86_64",
                 "--platform manylinux2014_x86_64", "--platform linux_x86_64"):
        assert part in text
    assert "manylinux_2_37" not in text  # newer than bookworm's glibc


def test_redact_strips_credentials_from_urls() -> None:
    text = "ERROR: 403 for https://user:tok3n@mirror.example/simple/a/?sig=abc and file:///opt/x"
    out = w.pip_error(text)
    assert "tok3n" not in out and "sig=abc" not in out and "https://mirror.example/simple/a/" in out


class FakePip:
    """pip download that writes the given content per file name (missing name: fails like pip)."""

    def __init__(self, contents: dict[str, bytes]) -> None:
        self.contents = contents
        self.calls = 0

    def __call__(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        self.calls += 1
        dest = Path(argv[argv.index("--dest") + 1])
        lines = Path(argv[argv.index("-r") + 1]).read_text().splitlines()
        for line in lines:
            name = line.split("==")[0]
            match = [f for f in self.contents if f.startswith(name + "-")]
            if not match:
                return subprocess.CompletedProcess(argv, 1, "", f"ERROR: No matching distribution for {name} at "
                                                   "https://u:secret@idx.example/simple/")
            (dest / match[0]).write_bytes(self.contents[match[0]])
        return subprocess.CompletedProcess(argv, 0, "", "")


def _fetch(tmp_path: Path, pip: Any) -> tuple[list[w.Wheel], dict[str, str], int]:
    wanted = w.wheels_for(LOCK, {"pytorch": ["two"]}, "lock")
    return w.fetch(tmp_path, wanted, "3.11", "linux_x86_64", "debian-12", run=pip)


def test_fetch_then_reuse_without_pip(tmp_path: Path) -> None:
    pip = FakePip({"a-1-py3-none-any.whl": A, "b-2-cp311-cp311-manylinux_2_17_x86_64.whl": B})
    done, unfetched, reused = _fetch(tmp_path, pip)
    assert len(done) == 2 and not unfetched and reused == 0 and pip.calls == 1
    done, unfetched, reused = _fetch(tmp_path, pip)
    assert len(done) == 2 and reused == 2 and pip.calls == 1


def test_a_changed_file_is_fetched_again(tmp_path: Path) -> None:
    pip = FakePip({"a-1-py3-none-any.whl": A, "b-2-cp311-cp311-manylinux_2_17_x86_64.whl": B})
    _fetch(tmp_path, pip)
    (tmp_path / "wheels" / "a-1-py3-none-any.whl").write_bytes(b"tampered")
    done, _unfetched, reused = _fetch(tmp_path, pip)
    assert reused == 1 and len(done) == 2 and (tmp_path / "wheels" / "a-1-py3-none-any.whl").read_bytes() == A


def test_a_file_the_index_changed_is_removed_and_named(tmp_path: Path) -> None:
    pip = FakePip({"a-1-py3-none-any.whl": A, "b-2-cp311-cp311-manylinux_2_17_x86_64.whl": b"other bytes"})
    done, unfetched, _reused = _fetch(tmp_path, pip)
    assert [x.name for x in done] == ["a"]
    assert "differs from the lock" in unfetched["b-2-cp311-cp311-manylinux_2_17_x86_64.whl"]
    assert not (tmp_path / "wheels" / "b-2-cp311-cp311-manylinux_2_17_x86_64.whl").exists()


def test_a_failed_download_is_named_per_file_without_credentials(tmp_path: Path) -> None:
    pip = FakePip({"a-1-py3-none-any.whl": A})
    done, unfetched, _reused = _fetch(tmp_path, pip)
    assert [x.name for x in done] == ["a"]
    why = unfetched["b-2-cp311-cp311-manylinux_2_17_x86_64.whl"]
    assert "No matching distribution for b" in why and "secret" not in why
