"""The bundle settings as a new user gets them wrong: scc_bundle_roles, scc_bundle_image (sccnlp bundle build) and
scc_bundle_dir (sccnlp deploy -e): one message naming the node or option, the setting and the fix, never a
traceback, and nothing runs. (scc_bundle_dir in the inventory: tests/unit/cluster/test_inventory_check.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from sccnlp import cli
from sccnlp.bundle import plan as p
from sccnlp.errors import SccError
from sccnlp.paths import collection_root

ROOT = collection_root()


def _refused(**settings: Any) -> str:
    with pytest.raises(SccError) as err:
        p.plan_cluster(ROOT, {"n1": {"cpfs_client_backend": "nfs", **settings}})
    text = str(err.value)
    assert text.startswith("n1: ") and "Fix: " in text and "\n" not in text
    return text


def test_a_misspelt_role_is_named_with_the_closest_one() -> None:
    text = _refused(scc_bundle_roles=["python36", "pytroch"])
    assert "scc_bundle_roles has pytroch (did you mean pytorch?), which the bundle does not cover" in text
    assert "python36, pytorch, tensorflow" in text and "remove it for all of them" in text


def test_a_role_with_no_close_name_is_named_alone() -> None:
    assert "scc_bundle_roles has nvidia, which" in _refused(scc_bundle_roles=["nvidia"])


@pytest.mark.parametrize("value", [5, {"python36": True}, None, True])
def test_roles_that_are_not_a_list(value: Any) -> None:
    assert f"scc_bundle_roles is {value!r}, not a list of role names. Fix: set scc_bundle_roles to a YAML list" in \
        _refused(scc_bundle_roles=value)


@pytest.mark.parametrize("value", [[], "", " , "])
def test_no_roles_is_refused_not_an_empty_bundle(value: Any) -> None:
    assert "scc_bundle_roles is empty, so the bundle would hold nothing" in _refused(scc_bundle_roles=value)


def test_roles_as_a_comma_separated_string() -> None:
    plan = p.plan_cluster(ROOT, {"n1": {"cpfs_client_backend": "nfs", "scc_bundle_roles": "python36, openmpi"}})
    assert list(plan.debian) == ["openmpi", "python36"] and list(plan.pip_sets) == ["python36"]


@pytest.mark.parametrize("value", ["Scc-Testbed:bookworm", "scc testbed", "debian:", ":12", ["debian:12"], 12,
                                   {"name": "debian"}, False])
def test_an_image_that_is_no_image_name(value: Any) -> None:
    text = _refused(scc_bundle_image=value)
    assert f"scc_bundle_image is {value!r}, not a Docker image name. Fix: set it to the name of a local image" in text
    assert "scc-testbed:bookworm" in text


@pytest.mark.parametrize("value", ["debian:12", "scc-testbed:bookworm", "registry.example:5000/team/debian:12-slim",
                                   "debian@sha256:" + "ab" * 32, " debian:12 "])
def test_image_names_docker_takes(value: Any) -> None:
    plan = p.plan_cluster(ROOT, {"n1": {"cpfs_client_backend": "nfs", "scc_bundle_image": value}})
    assert plan.image == value.strip()


@pytest.mark.parametrize("value", [None, ""])
def test_an_unset_image_is_the_test_beds(value: Any) -> None:
    assert p.plan_cluster(ROOT, {"n1": {"cpfs_client_backend": "nfs", "scc_bundle_image": value}}).image == \
        p.DEFAULT_IMAGE


def test_a_relative_bundle_dir_given_with_e_is_refused(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`sccnlp deploy -e scc_bundle_dir=...` gets the same check as --bundle, before any playbook runs."""
    from sccnlp import runner

    def no_playbook(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a playbook ran for a bad scc_bundle_dir")

    monkeypatch.setattr(runner, "run_playbook", no_playbook)
    assert cli.main(["deploy", "-i", "inv.yml", "-e", "scc_bundle_dir=scc-bundle"]) == 2
    err = capsys.readouterr().err
    assert "-e scc_bundle_dir=scc-bundle: give the bundle's absolute path as the nodes see it" in err
    assert "/mnt/cpfs/scc-bundle" in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("value", ["scc-bundle", "./scc-bundle", 5, None])
def test_the_role_refuses_a_relative_bundle_dir(value: Any, tmp_path: Path) -> None:
    """bundle_source's own preflight (the role used on its own, without the inventory check): one message naming
    scc_bundle_dir and the fix, before it reads anything."""
    shim = tmp_path / "collections" / "ansible_collections" / "scc"
    shim.mkdir(parents=True)
    (shim / "nlp_training").symlink_to(ROOT)
    book = tmp_path / "play.yml"
    book.write_text(yaml.safe_dump([{
        "name": "Preflight", "hosts": "localhost", "gather_facts": False, "vars": {"scc_bundle_dir": value},
        "tasks": [{"name": "Bundle preflight", "ansible.builtin.include_role": {
            "name": "scc.nlp_training.bundle_source", "tasks_from": "preflight"}}]}]))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "HOME": str(tmp_path)}
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", "localhost,", "-c",
                           "local", str(book)], env=env, capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out
    assert f"localhost: bundle_source_dir (scc_bundle_dir) is '{value}', not an absolute path. Fix: set " \
           "scc_bundle_dir to the offline bundle's directory" in " ".join(out.split())
    assert "Read the bundle manifest" not in out
