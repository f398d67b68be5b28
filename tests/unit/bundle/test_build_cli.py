"""`sccnlp bundle build|verify` end to end without network: a bad inventory is refused with one line (exit 2, no
traceback); a build of pip-only roles with a fake pip writes a manifest that verifies, a re-run reuses every file,
and `bundle verify` names a tampered file."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from sccnlp import cli
from sccnlp.bundle import build, manifest, wheels
from sccnlp.errors import SccError

A = b"wheel a payload"


def _inventory(tmp_path: Path, host_vars: str) -> Path:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  children:\n    scc_cluster:\n      hosts:\n        n1:\n"
                    f"          ansible_host: 10.66.0.11\n{host_vars}")
    return path


def test_a_missing_inventory_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bundle", "build", "-i", str(tmp_path / "nope.yml"), "-o", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "nope.yml does not exist" in err and "Traceback" not in err


def test_an_inventory_without_cluster_nodes_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    other: {}\n")
    assert cli.main(["bundle", "build", "-i", str(inv), "-o", str(tmp_path / "b")]) == 2
    assert "no hosts in group 'scc_cluster'" in capsys.readouterr().err


def test_a_bad_setting_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = _inventory(tmp_path, "          cpfs_client_backend: ceph\n")
    assert cli.main(["bundle", "build", "-i", str(inv), "-o", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "n1: cpfs_client_backend 'ceph'" in err and "Traceback" not in err


def test_pip_only_build_verify_rerun_and_tamper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    pin = {"name": "a", "version": "1", "file": "a-1-py3-none-any.whl", "sha256": hashlib.sha256(A).hexdigest()}
    lock = {"target": {"python": "3.11", "platform": "linux_x86_64", "release": "debian-12"},
            "sets": {"python36": {"requires": ["a==1"], "pins": [pin]}}}
    lock_file = tmp_path / "lock.yml"
    lock_file.write_text(yaml.safe_dump(lock))
    calls = []

    def fake_pip(argv: list[str]) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        (Path(argv[argv.index("--dest") + 1]) / "a-1-py3-none-any.whl").write_bytes(A)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(wheels, "_run", fake_pip)
    inv = _inventory(tmp_path, "          scc_bundle_roles: [python36]\n"
                     "          python36_interpreter: /usr/bin/python3\n"
                     f"          python36_requirements: ['a==1']\n          python36_pip_lock_file: {lock_file}\n"
                     "          cpfs_client_backend: glusterfs\n")
    out = tmp_path / "bundle"
    assert cli.main(["bundle", "build", "-i", str(inv), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "1 files" in text and "python36: 1" in text and len(calls) == 1
    doc = json.loads((out / manifest.MANIFEST).read_text())
    assert doc["target"] == {"release": "debian-12", "arch": "x86_64", "python": "3.11",
                             "image": "scc-testbed:bookworm"}
    assert [e["file"] for e in doc["entries"]] == ["wheels/a-1-py3-none-any.whl"]

    assert cli.main(["bundle", "build", "-i", str(inv), "-o", str(out)]) == 0
    assert "reused 1 wheel" in capsys.readouterr().out and len(calls) == 1

    assert cli.main(["bundle", "verify", str(out)]) == 0
    (out / "wheels" / "a-1-py3-none-any.whl").write_bytes(b"tampered")
    assert cli.main(["bundle", "verify", str(out)]) == 2
    err = capsys.readouterr().err
    assert "bundle file wheels/a-1-py3-none-any.whl (a 1, for python36) does not match the manifest" in err


def test_group_hosts_follows_children() -> None:
    data = {"scc_cluster": {"children": ["a", "b"]}, "a": {"hosts": ["n1"]}, "b": {"hosts": ["n2"], "children": ["a"]}}
    assert build.group_hosts(data, "scc_cluster") == {"n1", "n2"}


def test_deploy_bundle_path_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sccnlp.commands import deploy

    with pytest.raises(SccError, match=r"--bundle /mnt/cpfs/not-here: no bundle there on this machine \(no "
                                       r"manifest.json\).*set -e scc_bundle_dir=PATH instead"):
        deploy.bundle_src("/mnt/cpfs/not-here")
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "a.whl").write_bytes(b"a")
    doc = manifest.manifest([manifest.entry_for(tmp_path, "wheels/a.whl", "a", "1", "pypi", "python36")],
                            {"release": "debian-12", "arch": "x86_64", "python": "3.11"})
    (tmp_path / manifest.MANIFEST).write_text(json.dumps(doc))
    assert deploy.bundle_src(str(tmp_path)) == str(tmp_path.resolve())
    (tmp_path / "wheels" / "a.whl").write_bytes(b"b")
    inv = _inventory(tmp_path, "")
    assert cli.main(["deploy", "-i", str(inv), "--bundle", str(tmp_path)]) == 2
    assert "controller: bundle file wheels/a.whl (a 1, for python36) does not match" in capsys.readouterr().err


def test_an_unwritable_output_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    inv = _inventory(tmp_path, "          scc_bundle_roles: [pytorch]\n          cpfs_client_backend: glusterfs\n")
    assert cli.main(["bundle", "build", "-i", str(inv), "-o", str(blocker / "b")]) == 2
    err = capsys.readouterr().err
    assert "Fix: pass -o a directory this user can write" in err and "Traceback" not in err
