"""The validate role's preflight (ansible-playbook, connection local, check mode): a floor that is not a number is
refused with the node, the setting and the fix before any check runs (it would otherwise make its check a skip and
the report a PASS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def _preflight(tmp_path: Path, extravars: dict) -> tuple[int, str]:
    coll = tmp_path / "collections" / "ansible_collections" / "scc"
    coll.mkdir(parents=True)
    (coll / "nlp_training").symlink_to(ROOT)
    (tmp_path / "inventory.ini").write_text(
        f"[scc_cluster]\nnode-1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    (tmp_path / "play.yml").write_text(
        "- name: Validate preflight\n  hosts: scc_cluster\n  gather_facts: false\n  tasks:\n"
        "    - name: Run it\n      ansible.builtin.include_role:\n        name: scc.nlp_training.validate\n"
        "        tasks_from: preflight\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "--check", "-i", str(tmp_path / "inventory.ini"),
                           str(tmp_path / "play.yml"), "-e", json.dumps(extravars)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


@pytest.mark.parametrize(("override", "named"), [
    ({"cluster": {"shared_storage_write_mbps": "fast"}}, 'cluster.shared_storage_write_mbps="fast"'),
    ({"gpu": {"H200": {"copy_tbps": "3.9 TB/s"}}}, 'gpu.H200.copy_tbps="3.9 TB/s"'),
    ({"gpu": {"H200": {"nccl_all_reduce_busbw_gbps": {"8": "high"}}}}, 'gpu.H200.nccl_all_reduce_busbw_gbps.8="high"'),
    ({"cluster": {"shared_storage_probe_mib": True}}, 'cluster.shared_storage_probe_mib="True"'),
])
def test_a_floor_that_is_not_a_number_is_refused(tmp_path: Path, override: dict, named: str) -> None:
    rc, out = _preflight(tmp_path, {"validate_floors_override": override})
    assert rc == 2, out[-2000:]
    assert ("node-1: floors that are not numbers (sccnlp/data/floors.yml merged with validate_floors_override): "
            f"{named}.") in out
    assert "Fix: give each a number in validate_floors_override" in out


def test_numeric_floors_pass(tmp_path: Path) -> None:
    rc, out = _preflight(tmp_path, {"validate_floors_override": {"cluster": {"shared_storage_write_mbps": 50.5}}})
    assert rc == 0, out[-2000:]
