"""Per-phase tags select the role's tasks: `ansible-playbook <phase playbook> --tags <role>_install --list-tasks`
lists tasks of that role (beyond the `always` ones), and nothing of another role but its `always` tasks. Every
dynamic include in a role's tasks/main.yml hands its tags on with `apply:` (the tasks inside carry only those)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sccnlp.runner import _collections_path

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOKS = ROOT / "playbooks"
ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
# Internal roles have no phases of their own; they run under the tags of the role that imports them.
INTERNAL = {"_nvidia_common", "_node_programs", "_shared_storage"}
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir()
               if p.is_dir() and not p.name.startswith(".") and p.name not in INTERNAL)
LISTED = re.compile(r"^\s+scc\.nlp_training\.(?P<role>\w+) : (?P<name>.*?)\tTAGS: \[(?P<tags>[^\]]*)\]$", re.M)


def _phase_playbook(role: str) -> Path:
    """The phase playbook that runs the role's main entry point."""
    for book in sorted(PLAYBOOKS.glob("*.yml")):
        text = book.read_text()
        if re.search(rf"role: scc\.nlp_training\.{role}\b|name: scc\.nlp_training\.{role}\n(?!\s+tasks_from)", text):
            return book
    pytest.fail(f"no playbook under playbooks/ runs roles/{role}")


def _list_tasks(book: Path, tags: str) -> list[tuple[str, str, set[str]]]:
    inventory = ROOT / "tests" / "unit" / "core" / "tags_inventory.ini"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(book), "--list-tasks", "--tags", tags],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return [(m["role"], m["name"], {t.strip() for t in m["tags"].split(",")}) for m in LISTED.finditer(proc.stdout)]


def _main_tasks(role: str) -> list[dict]:
    return yaml.safe_load((ROOT / "roles" / role / "tasks" / "main.yml").read_text()) or []


def _phase_tags(role: str) -> set[str]:
    tags: set[str] = set()
    for task in _main_tasks(role):
        tags |= {t for t in task.get("tags", []) if t.startswith(f"{role}_")}
    return tags


@pytest.mark.parametrize("role", [r for r in ROLES if f"{r}_install" in _phase_tags(r)])
def test_install_tag_lists_the_roles_install_tasks(role: str) -> None:
    listed = _list_tasks(_phase_playbook(role), f"{role}_install")
    # The role's own tasks, or the shared role's run under its tags (nccl's preflight is _nvidia_common's settings).
    own = [name for r, name, tags in listed
           if r in (role, *INTERNAL) and "always" not in tags and f"{role}_install" in tags]
    assert own, f"--tags {role}_install lists no task of roles/{role} ({_phase_playbook(role).name})"
    # Tasks of the shared role run under the importing role's tags; other roles contribute only `always` tasks.
    foreign = [(r, name) for r, name, tags in listed
               if r not in (role, *INTERNAL) and "always" not in tags]
    assert not foreign, f"--tags {role}_install also selects {foreign[:5]}"


@pytest.mark.parametrize("role", ROLES)
def test_dynamic_includes_apply_their_tags(role: str) -> None:
    for task in _main_tasks(role):
        for key in ("ansible.builtin.include_tasks", "ansible.builtin.include_role", "include_tasks", "include_role"):
            if key not in task:
                continue
            args = task[key] if isinstance(task[key], dict) else {}
            applied = (args.get("apply") or {}).get("tags", [])
            assert applied, (
                f"roles/{role}/tasks/main.yml: '{task.get('name')}' is a dynamic include without `apply: tags`: "
                "--tags selects the include but none of its tasks; use import_tasks or give it apply")
