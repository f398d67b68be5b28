"""Run the runtime roles with ansible-playbook against this machine (connection local) with every path they write
redirected into a temporary directory: preflight refusals and the aiacc role's failure paths, no Docker needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent


@dataclass
class Run:
    rc: int
    output: str


class RolePlay:
    """Writes an inventory and a one-role playbook into tmp and runs ansible-playbook."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        coll = tmp / "collections" / "ansible_collections" / "scc"
        coll.mkdir(parents=True)
        (coll / "nlp_training").symlink_to(ROOT)
        (tmp / "inventory.ini").write_text(
            "[scc_cluster]\n"
            f"node-1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")

    def run(self, role: str, extravars: dict[str, Any], tasks_from: str = "preflight", check: bool = True) -> Run:
        play = self.tmp / f"play-{role}-{tasks_from}.yml"
        play.write_text(
            "- name: One role\n"
            "  hosts: scc_cluster\n"
            "  gather_facts: false\n"
            "  tasks:\n"
            "    - name: Run the role\n"
            "      ansible.builtin.include_role:\n"
            f"        name: scc.nlp_training.{role}\n"
            f"        tasks_from: {tasks_from}\n")
        variables = {
            "python36_venv_path": str(self.tmp / "venv"),
            "python36_fact_path": str(self.tmp / "facts.d" / "scc_python36.fact"),
            "pytorch_fact_path": str(self.tmp / "facts.d" / "scc_pytorch.fact"),
            "tensorflow_fact_path": str(self.tmp / "facts.d" / "scc_tensorflow.fact"),
            "aiacc_fact_path": str(self.tmp / "facts.d" / "scc_aiacc.fact"),
            "aiacc_env_file": str(self.tmp / "etc" / "scc.env"),
            "aiacc_mpirun_env_list": str(self.tmp / "etc" / "mpirun-env.list"),
            "aiacc_profile_hook": str(self.tmp / "etc" / "scc-env.sh"),
            "aiacc_download_dir": str(self.tmp / "cache"),
            **extravars,
        }
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(self.tmp / "collections"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CALLBACK_RESULT_FORMAT="json",
                   ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
        cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(self.tmp / "inventory.ini"), str(play),
               "-e", json.dumps(variables)]
        if check:
            cmd.append("--check")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=self.tmp, timeout=600, check=False)
        return Run(proc.returncode, proc.stdout + proc.stderr)


@pytest.fixture()
def role_play(tmp_path: Path) -> RolePlay:
    return RolePlay(tmp_path)
