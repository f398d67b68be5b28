"""The bert role's preflight refuses fault-handling and framework settings that cannot work, with the setting and
the fix, through a real ansible-playbook run of `tasks/preflight.yml` on localhost (settings only, nothing
changes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: scc.nlp_training.bert
        tasks_from: preflight
"""


@pytest.mark.parametrize(("setting", "message"), [
    ({"bert_client_lease_timeout": 20, "bert_poll_interval": 15},
     "bert_client_lease_timeout 20 is below 3 x bert_poll_interval 15: a slow poll would stop the run; raise it or "
     "set 0"),
    ({"bert_heartbeat_timeout": 3}, "bert_heartbeat_timeout is 3: set 0 (no watchdog) or 10 s or more"),
    ({"bert_collective_timeout": 1}, "bert_collective_timeout is 1: set 10 s or more"),
    ({"bert_ckpt_minutes": -1}, "bert_ckpt_minutes is -1: set 0 (off) or more"),
    ({"bert_min_free_gib": -1}, "bert_min_free_gib is -1: set 0 (automatic) or the GiB a launch needs free"),
    ({"bert_framework": "tensorflow", "bert_comm_backend": "torch"},
     "bert_comm_backend torch is not a backend of bert_framework tensorflow (it takes auto, strategy, aiacc, "
     "horovod): set one of them; auto follows what the aiacc role installed"),
])
def test_bad_fault_settings_are_refused(tmp_path: Path, collections_path: str, setting: dict, message: str) -> None:
    (tmp_path / "play.yml").write_text(PLAY)
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": collections_path, "ANSIBLE_STDOUT_CALLBACK": "json",
           "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_LOCALHOST_WARNING": "0"}
    got = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
                          str(tmp_path / "play.yml"), "-e", json.dumps(setting)], capture_output=True, text=True,
                         env=env, timeout=300, check=False)
    assert got.returncode == 2, got.stdout[-2000:] + got.stderr[-2000:]
    msgs = [r.get("msg", "") for play in json.loads(got.stdout)["plays"] for task in play["tasks"]
            for r in task["hosts"].values() if r.get("failed")]
    assert msgs == [f"localhost: {message}"]


def test_good_defaults_pass(tmp_path: Path, collections_path: str) -> None:
    (tmp_path / "play.yml").write_text(PLAY)
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": collections_path, "ANSIBLE_LOCALHOST_WARNING": "0"}
    got = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
                          str(tmp_path / "play.yml")], capture_output=True, text=True, env=env, timeout=300,
                         check=False)
    assert got.returncode == 0 and "failed=0" in got.stdout, got.stdout[-2000:]
