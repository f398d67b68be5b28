"""The bert role's storage check (tasks/storage.yml) through a real ansible-playbook run on localhost: the node
measures the run directory's free space (the directory may not exist yet), the filter refuses a launch below what
the next checkpoints need, naming node, path, setting and fix; enough room passes."""

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
        tasks_from: storage
"""


def run(tmp_path: Path, collections_path: str, **settings: object) -> tuple[int, list[str]]:
    (tmp_path / "play.yml").write_text(PLAY)
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": collections_path, "ANSIBLE_STDOUT_CALLBACK": "json",
           "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_LOCALHOST_WARNING": "0"}
    extra = {"bert_venv": str(Path(sys.executable).parent.parent), "bert_runs_root": str(tmp_path / "runs" / "new"),
             "bert_model": "tiny", **settings}
    (tmp_path / "inventory.ini").write_text(f"localhost ansible_python_interpreter={sys.executable}\n")
    got = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                          str(tmp_path / "play.yml"), "-e", json.dumps(extra)], capture_output=True, text=True,
                         env=env, timeout=300, check=False)
    msgs = [r.get("msg", "") for play in json.loads(got.stdout)["plays"] for task in play["tasks"]
            for r in task["hosts"].values() if r.get("failed")]
    return got.returncode, msgs


def test_enough_room_passes(tmp_path: Path, collections_path: str) -> None:
    assert run(tmp_path, collections_path, bert_min_free_gib=0.001) == (0, [])


def test_too_little_room_is_refused_before_launch(tmp_path: Path, collections_path: str) -> None:
    rc, msgs = run(tmp_path, collections_path, bert_min_free_gib=10 ** 7)
    assert rc == 2
    [msg] = msgs
    assert msg.startswith(f"localhost: {tmp_path}/runs/new/bert-tiny-phase1 has ")
    assert "below the 10000000.00 GiB the next checkpoints need (bert_min_free_gib 1e+07)" in msg
    assert "Fix: free space on that storage" in msg


@pytest.mark.parametrize("model", ["tiny", "large"])
def test_automatic_threshold_names_the_model(tmp_path: Path, collections_path: str, model: str) -> None:
    rc, msgs = run(tmp_path, collections_path, bert_model=model)
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize / 2 ** 30
    need = 1.0 if model == "tiny" else 7.0
    if free > need + 1:
        assert (rc, msgs) == (0, [])
    elif free < need - 1:
        assert rc == 2 and f"2 checkpoints of bert-{model}" in msgs[0]
