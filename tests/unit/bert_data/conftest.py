"""Fixtures: a real English corpus converted from installed Debian documentation (debian-reference-en); an entry
point of the bert role run by ansible-playbook on localhost."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sccnlp.node.bert import corpus as bcorpus

PACKAGE = "debian-reference-en"
PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: scc.nlp_training.bert
        tasks_from: {tasks_from}
"""


BertTasks = Callable[[str, dict[str, Any]], tuple[subprocess.CompletedProcess[str], list[str]]]


@pytest.fixture()
def bert_tasks(tmp_path: Path, collections_path: str) -> BertTasks:
    """run(tasks_from, settings): that entry point of the bert role on localhost (this Python as the node's) with
    `settings` as extra vars; the run and the messages of its failed tasks (JSON callback)."""
    return lambda tasks_from, settings: _run_bert_tasks(tmp_path, collections_path, tasks_from, settings)


def _run_bert_tasks(tmp_path: Path, collections_path: str, tasks_from: str,
                    settings: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    (tmp_path / "play.yml").write_text(PLAY.format(tasks_from=tasks_from))
    (tmp_path / "inventory.ini").write_text(f"localhost ansible_python_interpreter={sys.executable}\n")
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": collections_path, "ANSIBLE_STDOUT_CALLBACK": "json",
           "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_LOCALHOST_WARNING": "0"}
    got = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                          str(tmp_path / "play.yml"), "-e", json.dumps(settings)], capture_output=True, text=True,
                         env=env, timeout=300, check=False)
    msgs = [r.get("msg", "") for play in json.loads(got.stdout)["plays"] for task in play["tasks"]
            for r in task["hosts"].values() if r.get("failed")]
    return got, msgs


def _docs_root(tmp: Path) -> Path:
    """`/` when the package is installed; otherwise the package unpacked from the Debian archive into `tmp`."""
    if Path("/usr/share/debian-reference").is_dir():
        return Path("/")
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        pytest.fail(f"these tests need the Debian package {PACKAGE}: apt-get install {PACKAGE}")
    tmp.mkdir(parents=True, exist_ok=True)
    got = subprocess.run(["apt-get", "download", PACKAGE], cwd=tmp, capture_output=True, text=True, check=False)
    debs = list(tmp.glob(f"{PACKAGE}_*.deb"))
    if got.returncode != 0 or not debs:
        pytest.fail(f"these tests need the Debian package {PACKAGE} (apt-get install {PACKAGE}): "
                    f"apt-get download failed: {got.stderr.strip()}")
    subprocess.run(["dpkg", "-x", str(debs[0]), str(tmp / "root")], check=True)
    return tmp / "root"


@pytest.fixture(scope="session")
def docs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _docs_root(tmp_path_factory.mktemp("debs"))


@pytest.fixture(scope="session")
def real_corpus(docs_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "debian-reference.txt"
    bcorpus.write_corpus(bcorpus.iter_debian_documents([PACKAGE], docs_root), out)
    return out
