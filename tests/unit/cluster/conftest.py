"""Run the collection's playbooks on throw-away inventories, without containers.

The nodes in these inventories are never reached: they use the docker connection to a container that does not
exist, so a check that wrongly passed would end in 'unreachable', never in a change on this machine or traffic
to an address.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
NOWHERE = {"ansible_connection": "community.docker.docker", "ansible_docker_host": "clu-unit-absent"}


@dataclass
class PlaybookRun:
    rc: int
    output: str

    def recap(self) -> dict[str, dict[str, int]]:
        rows = re.findall(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", self.output, re.M)
        return {host: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)} for host, counts in rows}


@pytest.fixture
def collections_path(tmp_path: Path) -> Path:
    shim = tmp_path / "collections"
    (shim / "ansible_collections/scc").mkdir(parents=True)
    (shim / "ansible_collections/scc/nlp_training").symlink_to(REPO_ROOT)
    return shim


@pytest.fixture
def run_playbook(tmp_path: Path, collections_path: Path):
    def _run(playbook: str, hosts: dict[str, dict] | None, group: str = "scc_cluster", *extra: str) -> PlaybookRun:
        inventory: dict = {"all": {"children": {}}}
        if hosts is not None:
            inventory["all"]["children"][group] = {"hosts": {h: {**NOWHERE, **v} for h, v in hosts.items()}}
        else:
            inventory["all"]["children"]["other"] = {"hosts": {"elsewhere": dict(NOWHERE)}}
        path = tmp_path / "inventory.yml"
        path.write_text(yaml.safe_dump(inventory))
        env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections_path), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
               "HOME": str(tmp_path)}
        proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(path), f"playbooks/{playbook}", *extra],
                              cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
        return PlaybookRun(proc.returncode, proc.stdout + proc.stderr)

    return _run
