"""A cluster without shared storage (a single GPU node): `validate_storage_check: false` reports the shared-storage
checks as skipped with the reason, never as passed. The validate role's verify phase runs for real on this host
(connection local, no GPU, no MPI, no venv check), and its fragment, written by sccnlp.node.gates.evaluate, is read
back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def _verify(tmp_path: Path, extravars: dict) -> tuple[subprocess.CompletedProcess[str], dict]:
    coll = tmp_path / "collections" / "ansible_collections" / "scc"
    coll.mkdir(parents=True)
    (coll / "nlp_training").symlink_to(ROOT)
    work = tmp_path / "work"
    (work / "pylib").mkdir(parents=True)
    (work / "pylib" / "sccnlp").symlink_to(ROOT / "sccnlp")  # what the install phase puts there: the node wheel
    (tmp_path / "inventory.ini").write_text(
        f"[scc_cluster]\nnode-1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    # The facts as playbooks/knobs.yml reads them once per run (the phase plays gather none of their own).
    (tmp_path / "play.yml").write_text(
        "- name: Validate\n  hosts: scc_cluster\n  gather_facts: false\n  tasks:\n"
        "    - name: Read the facts\n      ansible.builtin.setup:\n        gather_subset: [min, network]\n"
        "    - name: Run the checks\n      ansible.builtin.include_role:\n        name: scc.nlp_training.validate\n"
        "        tasks_from: verify\n")
    settings = {"validate_work_dir": str(work), "validate_report_dir": str(tmp_path / "report"), "gpu_count": 0,
                "validate_mpi_check": False, "validate_venv_check": False,
                "validate_nccl_conf_path": str(tmp_path / "nccl.conf"), **extravars}
    (tmp_path / "nccl.conf").write_text("NCCL_IB_DISABLE=1\nNCCL_SOCKET_IFNAME=lo\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                           str(tmp_path / "play.yml"), "-e", json.dumps(settings)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    fragment = tmp_path / "report" / "fragments" / "node-1.json"
    return proc, json.loads(fragment.read_text()) if fragment.exists() else {}


def _checks(fragment: dict) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for node in fragment.get("nodes", {}).values():
        found.update({check["name"]: check for check in node.get("checks", [])})
    found.update({check["name"]: check for check in fragment.get("cluster", {}).get("checks", [])})
    return found


def test_storage_checks_off_are_skipped_with_the_reason(tmp_path: Path) -> None:
    proc, fragment = _verify(tmp_path, {"validate_storage_check": False, "validate_shared_dir": "/nonexistent/shared"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    checks = _checks(fragment)
    for name in ("shared_storage_mounted", "shared_storage_visible"):
        assert name in checks, f"{name} missing from the report: {sorted(checks)}"
        assert checks[name]["status"] == "skip", checks[name]
        assert "validate_storage_check is false" in json.dumps(checks[name]), checks[name]


def test_storage_checks_on_fail_where_nothing_is_mounted(tmp_path: Path) -> None:
    """The same run with the checks on: the unmounted shared directory fails, naming the node and the fix."""
    shared = tmp_path / "shared"
    shared.mkdir()
    proc, fragment = _verify(tmp_path, {"validate_storage_check": True, "validate_shared_dir": str(shared)})
    assert proc.returncode != 0
    check = _checks(fragment)["shared_storage_mounted"]
    assert check["status"] == "fail", check
    assert f"node-1: {shared} is not a mount point" in check["detail"], check
