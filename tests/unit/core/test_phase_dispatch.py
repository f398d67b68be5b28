"""Every role dispatches its phases one way (docs/DEVELOPING.md, "Phase dispatch"): tasks/main.yml holds nothing but
the preflight, imported statically under the role tag, `<role>_preflight` and every phase tag of the role, then one
dynamic include per phase whose `apply` hands on the same tags it carries (`<role>` and the phase tags of that file).
No `always` in a role: a gate that must run whatever the tags says so in the playbook. The NVIDIA stack roles include
their shared phases (`_nvidia_common`'s `phases`) the same way. Internal roles carry no tags: they run under their
caller's. That the tags then select the tasks in a real run: tests/unit/core/test_role_tags_run.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
# Called by other roles with tasks_from and parameters, never by a playbook as a role of its own.
INTERNAL = {"_node_programs", "_nvidia_common", "_shared_storage", "os_packages", "pip_lock"}
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if p.is_dir() and not p.name.startswith("."))
PHASED = [r for r in ROLES if r not in INTERNAL]


def _main(role: str) -> list[dict[str, Any]]:
    return yaml.safe_load((ROOT / "roles" / role / "tasks" / "main.yml").read_text()) or []


def _tags(task: dict[str, Any]) -> list[str]:
    tags = task.get("tags", [])
    return [tags] if isinstance(tags, str) else list(tags)


def test_the_roles_are_all_seen() -> None:
    assert {"cluster", "cuda", "validate", "node_reboot"} <= set(PHASED)
    assert set(ROLES) >= INTERNAL


@pytest.mark.parametrize("role", PHASED)
def test_main_imports_the_preflight_under_every_phase_tag(role: str) -> None:
    tasks = _main(role)
    first = tasks[0]
    assert first.get("ansible.builtin.import_tasks") == "preflight.yml", (
        f"roles/{role}/tasks/main.yml: the first task must be `ansible.builtin.import_tasks: preflight.yml`")
    phase_tags = {t for task in tasks[1:] for t in _tags(task) if t != role}
    tags = _tags(first)
    assert tags[:2] == [role, f"{role}_preflight"], f"roles/{role}: preflight tags {tags}"
    missing, idle = phase_tags - set(tags), set(tags) - phase_tags - {role, f"{role}_preflight"}
    assert not missing, f"roles/{role}: the preflight misses the phase tags {sorted(missing)}"
    assert not idle, f"roles/{role}: preflight tags that select no phase: {sorted(idle)}"


@pytest.mark.parametrize("role", PHASED)
def test_each_phase_is_an_include_under_its_own_tags(role: str) -> None:
    for task in _main(role)[1:]:
        name = task.get("name")
        tags = _tags(task)
        assert tags and tags[0] == role and all(t.startswith(f"{role}_") for t in tags[1:]), (
            f"roles/{role}: '{name}' carries {tags}: the role tag first, then <role>_<phase> tags")
        if "ansible.builtin.include_tasks" in task:
            args = task["ansible.builtin.include_tasks"]
            assert isinstance(args, dict) and (ROOT / "roles" / role / "tasks" / args["file"]).is_file(), (
                f"roles/{role}: '{name}' includes no file of the role")
        elif "ansible.builtin.include_role" in task:
            args = task["ansible.builtin.include_role"]
            assert (args.get("name"), args.get("tasks_from")) == ("scc.nlp_training._nvidia_common", "phases"), (
                f"roles/{role}: '{name}': the one include_role of the convention is _nvidia_common's phases")
            assert task.get("vars", {}).get("_nvidia_common_component") == role
        else:
            pytest.fail(f"roles/{role}/tasks/main.yml: '{name}' is no phase include (tasks go into a phase file)")
        applied = (args.get("apply") or {}).get("tags", [])
        wanted = [role] if "ansible.builtin.include_role" in task else tags
        assert applied == wanted, f"roles/{role}: '{name}' applies {applied}, carries {tags}"


@pytest.mark.parametrize("role", ROLES)
def test_no_role_tags_itself_always(role: str) -> None:
    for path in (ROOT / "roles" / role / "tasks").glob("*.yml"):
        for task in yaml.safe_load(path.read_text()) or []:
            assert "always" not in _tags(task), f"roles/{role}/tasks/{path.name}: '{task.get('name')}' is tagged always"


@pytest.mark.parametrize("role", sorted(INTERNAL))
def test_internal_roles_run_under_their_callers_tags(role: str) -> None:
    for task in _main(role):
        assert not _tags(task), f"roles/{role}/tasks/main.yml: '{task.get('name')}' has tags of its own"
