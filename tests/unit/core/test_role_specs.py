"""Repository-wide consistency of the roles: argument specs in sync with defaults (both entry points, names, values
and choices; the one such test of the collection), every role documented with a preflight, and none of the forbidden
patterns anywhere in roles/, playbooks/, plugins/, molecule/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLES = sorted(p for p in (ROOT / "roles").iterdir() if p.is_dir() and not p.name.startswith("."))
ROLES_WITH_DEFAULTS = [r for r in ROLES if (r / "defaults" / "main.yml").is_file()]
SCANNED = ("roles", "playbooks", "plugins", "molecule")
SKIP_DIRS = {"__pycache__", ".cache", ".pytest_cache", ".ruff_cache"}
FORBIDDEN = {
    "StrictHostKeyChecking no": re.compile(r"StrictHostKeyChecking\s*[= ]\s*[\"']?no\b", re.IGNORECASE),
    "ignore_errors: true": re.compile(r"\bignore_errors\s*:\s*[\"']?(true|yes|on)\b", re.IGNORECASE),
    "state: latest": re.compile(r"\bstate\s*:\s*[\"']?latest\b"),
}


def _load(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        pytest.fail(f"{path.relative_to(ROOT)} is not valid YAML: {' '.join(str(exc).split())}")


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def _templated(value: Any) -> bool:
    """A default that follows a collection-wide knob or another variable (`{{ ... }}`, also inside a list): its
    spec states the result in words, not the template."""
    return "{{" in str(value)


@pytest.mark.parametrize("role", ROLES_WITH_DEFAULTS, ids=_ids(ROLES_WITH_DEFAULTS))
def test_argument_spec_matches_defaults(role: Path) -> None:
    """The one spec-vs-defaults test of every role: `main` and `preflight` have the same options, exactly the
    variables of defaults/main.yml, each with the default's value and a default that is one of its choices."""
    spec_file = role / "meta" / "argument_specs.yml"
    assert spec_file.is_file(), f"roles/{role.name}: meta/argument_specs.yml is missing (it documents defaults)"
    specs = (_load(spec_file) or {}).get("argument_specs") or {}
    missing = [e for e in ("main", "preflight") if e not in specs]
    assert not missing, (f"roles/{role.name}/meta/argument_specs.yml: entry point(s) {missing} missing; "
                         "have `main` and `preflight` with the same options (`options: &options` / `*options`)")
    defaults = _load(role / "defaults" / "main.yml") or {}
    options = {e: (specs[e] or {}).get("options") or {} for e in ("main", "preflight")}
    main = set(options["main"])
    problems = []
    if main - set(defaults):
        problems.append(f"in argument_specs `main` but not in defaults/main.yml: {sorted(main - set(defaults))}")
    if set(defaults) - main:
        problems.append(f"in defaults/main.yml but not in argument_specs `main`: {sorted(set(defaults) - main)}")
    if options["preflight"] != options["main"]:
        problems.append("entry point `preflight` does not have the options of `main` (`options: &options` / "
                        f"`*options`): only in main {sorted(main - set(options['preflight']))}, only in preflight "
                        f"{sorted(set(options['preflight']) - main)}, or the same names described differently")
    for name, value in defaults.items():
        option = options["main"].get(name)
        if option is None or _templated(value):
            continue
        if option.get("default") != value:
            problems.append(f"{name}: default {value!r} in defaults/main.yml, {option.get('default')!r} in the spec")
        if "choices" in option and value not in option["choices"]:
            problems.append(f"{name}: default {value!r} is not one of its choices {option['choices']}")
    assert not problems, f"roles/{role.name}: " + "; ".join(problems)


def test_the_spec_test_sees_a_wrong_default(tmp_path: Path) -> None:
    role = tmp_path / "demo"
    (role / "meta").mkdir(parents=True)
    (role / "defaults").mkdir()
    (role / "defaults" / "main.yml").write_text("demo_mode: fast\ndemo_dir: \"{{ scc_shared_dir }}/x\"\n")
    (role / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options: &options\n"
        "      demo_mode: {type: str, default: slow, choices: [slow]}\n"
        "      demo_dir: {type: str, description: under the shared storage}\n"
        "  preflight:\n    options: *options\n")
    with pytest.raises(AssertionError) as failed:
        test_argument_spec_matches_defaults(role)
    assert str(failed.value).splitlines()[0] == (
        "roles/demo: demo_mode: default 'fast' in defaults/main.yml, 'slow' in the spec; demo_mode: default 'fast' is "
        "not one of its choices ['slow']")


@pytest.mark.parametrize("role", ROLES_WITH_DEFAULTS, ids=_ids(ROLES_WITH_DEFAULTS))
def test_public_variables_carry_the_role_prefix(role: Path) -> None:
    defaults = (_load(role / "defaults" / "main.yml") or {}).keys()
    wrong = sorted(k for k in defaults if not k.startswith(f"{role.name}_"))
    assert not wrong, f"roles/{role.name}/defaults/main.yml: public variables must start with {role.name}_: {wrong}"


@pytest.mark.parametrize("role", ROLES, ids=_ids(ROLES))
def test_role_has_readme_and_preflight(role: Path) -> None:
    missing = [f for f in ("README.md", "tasks/main.yml", "tasks/preflight.yml") if not (role / f).is_file()]
    assert not missing, f"roles/{role.name}: missing {missing}"


def _scanned_files() -> list[Path]:
    files = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and not SKIP_DIRS & set(path.relative_to(ROOT).parts):
                files.append(path)
    return files


def test_the_scan_sees_the_tree() -> None:
    files = {p.relative_to(ROOT).as_posix() for p in _scanned_files()}
    assert "playbooks/site.yml" in files
    assert any(f.startswith("roles/") and f.endswith("tasks/main.yml") for f in files)


@pytest.mark.parametrize("pattern", sorted(FORBIDDEN))
def test_no_forbidden_pattern(pattern: str) -> None:
    """Comment lines are not settings (a comment may warn against the pattern); everything else counts."""
    regex = FORBIDDEN[pattern]
    hits = []
    for path in _scanned_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            if regex.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, f"`{pattern}` is not allowed (house rules):\n" + "\n".join(hits)


def test_forbidden_patterns_are_recognised() -> None:
    """The scanner's regexes catch the spellings seen in the field, and leave the right ones alone."""
    bad = ["ansible_ssh_common_args: -o StrictHostKeyChecking=no", "ssh -o 'StrictHostKeyChecking no' x",
           "  ignore_errors: true", "  ignore_errors: yes", "    state: latest", "    state: 'latest'"]
    good = ["-o StrictHostKeyChecking=yes", "ignore_errors: false", "state: present", "state_latest: 1"]
    for line in bad:
        assert any(r.search(line) for r in FORBIDDEN.values()), line
    for line in good:
        assert not any(r.search(line) for r in FORBIDDEN.values()), line


@pytest.mark.parametrize("role", ROLES, ids=_ids(ROLES))
def test_every_role_has_an_argument_spec_with_main(role: Path) -> None:
    """Internal roles too (ansible-doc -t role shows them; their parameters are validated at include time)."""
    spec_file = role / "meta" / "argument_specs.yml"
    assert spec_file.is_file(), f"roles/{role.name}: meta/argument_specs.yml is missing"
    specs = (_load(spec_file) or {}).get("argument_specs") or {}
    assert "main" in specs, f"roles/{role.name}/meta/argument_specs.yml: no `main` entry point"
    for name, entry in specs.items():
        assert (entry or {}).get("short_description"), f"roles/{role.name}: entry point `{name}`: no short_description"


def _role_calls() -> list[tuple[str, str, str, dict[str, Any]]]:
    """(file, role, tasks_from, vars) of every import_role/include_role of one of this collection's roles."""
    calls = []

    def walk(tasks: Any, where: str) -> None:
        for task in tasks if isinstance(tasks, list) else []:
            if not isinstance(task, dict):
                continue
            for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks"):
                walk(task.get(key), where)
            for action in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
                args = task.get(action)
                if isinstance(args, dict) and str(args.get("name", "")).startswith("scc.nlp_training."):
                    calls.append((where, args["name"].removeprefix("scc.nlp_training."), args.get("tasks_from", "main"),
                                  task.get("vars") or {}))

    for path in sorted([*(ROOT / "roles").glob("*/tasks/**/*.yml"), *(ROOT / "playbooks").glob("*.yml")]):
        walk(_load(path), path.relative_to(ROOT).as_posix())
    return calls


def test_every_entry_point_called_has_a_spec_and_gets_what_it_requires() -> None:
    """Each `tasks_from` used names an entry point of the role's spec exactly (ansible-core looks the spec up by the
    literal value: `install.yml` would skip the validation of `install`); a templated role name (the preflight loop)
    is left out. Parameters passed as task vars are options of that entry point, and its required options are passed."""
    problems = []
    calls = _role_calls()
    assert any(call[1] == "_nvidia_common" for call in calls), "the scan found no call of _nvidia_common"
    for where, role, entry, passed in calls:
        if "{{" in role:
            continue
        specs = (_load(ROOT / "roles" / role / "meta" / "argument_specs.yml") or {})["argument_specs"]
        if entry not in specs:
            problems.append(f"{where}: {role} tasks_from `{entry}` is no entry point of its spec ({sorted(specs)})")
            continue
        options = specs[entry].get("options") or {}
        params = {k for k in passed if k.startswith(f"_{role}_") or k.startswith(f"{role}_")}
        if params - set(options):
            problems.append(f"{where}: {role}/{entry} gets {sorted(params - set(options))}, not in its spec")
        required = {k for k, v in options.items() if v.get("required")}
        if (role.startswith("_") or role == "pip_lock") and required - params:
            problems.append(f"{where}: {role}/{entry} needs {sorted(required - params)}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("role", ROLES, ids=_ids(ROLES))
def test_no_two_options_of_an_entry_point_share_a_description(role: Path) -> None:
    """A description copied onto the options after it (a comment block of defaults/main.yml pasted on every
    variable it heads) documents all but one of them wrongly; each option says what it is."""
    specs = (_load(role / "meta" / "argument_specs.yml") or {}).get("argument_specs") or {}
    copies = []
    for entry, spec in specs.items():
        seen: dict[str, list[str]] = {}
        for name, option in ((spec or {}).get("options") or {}).items():
            text = option.get("description")
            seen.setdefault(" ".join(text) if isinstance(text, list) else str(text), []).append(name)
        copies += [f"{entry}: {', '.join(names)}" for names in seen.values() if len(names) > 1]
    assert not copies, f"roles/{role.name}/meta/argument_specs.yml: options sharing one description: {copies}"
