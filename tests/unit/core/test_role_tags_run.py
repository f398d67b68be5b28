"""The per-phase tags of the GPU roles select the tasks inside their dynamic includes in a real run, not only in
`--list-tasks` (which cannot look inside an include): a check-mode run on localhost by the `pip` method, where every
phase applies without a GPU, with `--tags <role>_verify` runs the detect and verify files and nothing of the install
files, and `--tags <role>_install` the reverse (the files of each phase: _nvidia_common_phase_files)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sccnlp.runner import _collections_path

ROOT = Path(__file__).resolve().parents[2].parent
ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
RAN = re.compile(r"^TASK \[scc\.nlp_training\.(?P<role>\w+) : (?P<name>.*?)\] \*", re.M)
# Pins by the pip method (exact versions of the NVIDIA wheels; only their form is checked in check mode).
PIP = {"cuda": "12.8.90", "nccl": "2.28.9", "cudnn": "9.19.0.56"}


# The file each phase of a stack role runs (the phases entry point of the shared role dispatches by this table).
PHASE_FILES = yaml.safe_load((ROOT / "roles" / "_nvidia_common" / "vars" / "main.yml").read_text())[
    "_nvidia_common_phase_files"]


def _names(role: str, *files: str) -> set[tuple[str, str]]:
    """(role, task name) of the tasks in the role's task files, following static imports (of the role's own files
    and of the shared role's)."""
    names: set[tuple[str, str]] = set()
    for file in files:
        for task in yaml.safe_load((ROOT / "roles" / role / "tasks" / file).read_text()) or []:
            imported = task.get("ansible.builtin.import_role")
            own = task.get("ansible.builtin.import_tasks")
            if imported:
                shared = imported["name"].split(".")[-1]
                names |= _names(shared, imported["tasks_from"] + ".yml")
            elif own:
                names |= _names(role, own if isinstance(own, str) else own["file"])
            else:
                names.add((role, task["name"]))
    return names


def _phase(role: str, phase: str) -> set[tuple[str, str]]:
    """The tasks the phase runs for the role (install_pip, detect, verify)."""
    owner, file = PHASE_FILES[role][phase]
    return _names(owner, file + ".yml")


def _run(tmp_path: Path, role: str, tags: str) -> set[tuple[str, str]]:
    book = tmp_path / "book.yml"
    book.write_text(yaml.safe_dump([{"name": "One GPU role", "hosts": "all", "gather_facts": True,
                                     "gather_subset": ["min"], "roles": [{"role": f"scc.nlp_training.{role}"}]}]))
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(f"node1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0")
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(book), "--check", "--tags", tags,
                           "-e", f"{role}_method=pip", "-e", f"{role}_version={PIP[role]}",
                           "-e", f"{role}_venv={tmp_path / 'venv'}"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    ran = {(m["role"], m["name"]) for m in RAN.finditer(proc.stdout)}
    assert ran, proc.stdout[-3000:] + proc.stderr[-2000:]
    return ran


def _own(role: str, phase: str) -> set[tuple[str, str]]:
    """Tasks of this phase and of no other phase (the shared role's checks appear in several)."""
    others = {"verify", "detect", "install_pip"} - {phase}
    return _phase(role, phase) - set().union(*(_phase(role, other) for other in others))


@pytest.mark.parametrize("role", sorted(PIP))
def test_verify_tag_runs_the_verify_file_and_no_install(tmp_path: Path, role: str) -> None:
    ran = _run(tmp_path, role, f"{role}_verify")
    assert ran & _own(role, "verify"), f"--tags {role}_verify ran none of the verify phase: {sorted(ran)}"
    assert ran & _own(role, "detect"), f"--tags {role}_verify ran none of the detect phase: {sorted(ran)}"
    assert not ran & _own(role, "install_pip"), f"--tags {role}_verify ran install tasks: {sorted(ran)}"


@pytest.mark.parametrize("role", sorted(PIP))
def test_install_tag_runs_the_install_file_and_no_verify(tmp_path: Path, role: str) -> None:
    ran = _run(tmp_path, role, f"{role}_install")
    assert ran & _own(role, "install_pip"), f"--tags {role}_install ran none of the pip install: {sorted(ran)}"
    assert not ran & _own(role, "verify"), f"--tags {role}_install ran verify tasks: {sorted(ran)}"
