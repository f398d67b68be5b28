"""No copied YAML: no block of six or more lines appears twice in the roles' tasks, handlers and vars or in the
playbooks, compared after renaming the role (nccl's `nccl_version` and cudnn's `cudnn_version` are the same line).
Blank lines and comments do not count. A role's tasks/main.yml is left out: it holds nothing but the phase dispatch
convention (tests/unit/core/test_phase_dispatch.py), the same stanzas in every role by design. A mechanic two roles
need lives once, in an internal role called with tasks_from and parameters."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
WINDOW = 6


def _files() -> list[Path]:
    found = [*ROOT.glob("roles/*/tasks/*.yml"), *ROOT.glob("roles/*/handlers/*.yml"), *ROOT.glob("roles/*/vars/*.yml"),
             *ROOT.glob("playbooks/*.yml")]
    return sorted(p for p in found if not (p.name == "main.yml" and p.parent.name == "tasks"))


def _lines(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line number, text) of the meaningful lines, the role's name replaced by ROLE."""
    parts = path.relative_to(root).parts
    role = parts[1] if parts[0] == "roles" else ""
    out = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        text = raw.rstrip()
        if not text.strip() or text.strip().startswith("#") or text.strip() == "---":
            continue
        if role:
            text = re.sub(rf"(?<![A-Za-z0-9])(_*){re.escape(role)}(?![A-Za-z0-9])", r"\1ROLE", text)
        out.append((number, text))
    return out


def copies(files: list[Path], root: Path = ROOT, window: int = WINDOW) -> dict[tuple[str, ...], list[str]]:
    """Every window of `window` lines that occurs more than once -> where (file:line)."""
    seen: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for path in files:
        lines = _lines(path, root)
        for start in range(len(lines) - window + 1):
            block = tuple(text for _number, text in lines[start:start + window])
            seen[block].append(f"{path.relative_to(root)}:{lines[start][0]}")
    return {block: where for block, where in seen.items() if len(where) > 1}


def test_the_comparison_finds_a_copy(tmp_path: Path) -> None:
    block = "".join(f"- name: Step {i}\n  ansible.builtin.debug:\n    msg: '{i}'\n" for i in range(2))
    for role in ("alpha", "beta"):
        (tmp_path / "roles" / role / "tasks").mkdir(parents=True)
        (tmp_path / "roles" / role / "tasks" / "install.yml").write_text(block.replace("Step", f"{role}_step"))
    found = copies(sorted(tmp_path.glob("roles/*/tasks/*.yml")), tmp_path)
    assert list(found.values()) == [["roles/alpha/tasks/install.yml:1", "roles/beta/tasks/install.yml:1"]]


def test_no_block_of_six_lines_is_copied() -> None:
    files = _files()
    assert len(files) > 100, "the scan sees the tree"
    found = copies(files)
    shown = [", ".join(where) + ":\n    " + "\n    ".join(block) for block, where in list(found.items())[:5]]
    assert not found, f"{len(found)} copied blocks of {WINDOW} lines (the role renamed), e.g.\n" + "\n".join(shown)
