"""The supported ansible-core range, stated once: meta/runtime.yml's requires_ansible gives the lowest version,
pyproject.toml's controller extra the same lowest and the bound above the highest, the README names both, and the
sanity stage runs ansible-test on exactly the lowest and the highest (requirements/sanity-<X.Y>.txt), each with its
own ignore file (tests/sanity/ignore-<X.Y>.txt, one per supported version, none for others)."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[3]


def _minor(version: Version) -> tuple[int, int]:
    return version.major, version.minor


def _controller_range() -> SpecifierSet:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [dep for dep in project["optional-dependencies"]["controller"] if dep.startswith("ansible-core")]
    assert len(pins) == 1, f"pyproject.toml's controller extra names ansible-core {len(pins)} times"
    return SpecifierSet(pins[0].removeprefix("ansible-core"))


def _bounds(spec: SpecifierSet) -> tuple[tuple[int, int], tuple[int, int]]:
    """(lowest, highest) minor version a `>=A.B,<C.D` range allows."""
    low = [Version(s.version) for s in spec if s.operator == ">="]
    high = [Version(s.version) for s in spec if s.operator == "<"]
    assert len(low) == 1 and len(high) == 1, f"{spec}: want exactly one >= and one < bound"
    assert high[0].micro == 0 and high[0].minor > 0, f"{spec}: the upper bound must be a minor release X.Y.0"
    return _minor(low[0]), (high[0].major, high[0].minor - 1)


def _sanity_versions() -> list[tuple[int, int]]:
    found = []
    for path in (ROOT / "requirements").glob("sanity-*.txt"):
        major, minor = path.stem.removeprefix("sanity-").split(".")
        pins = re.findall(r"^ansible-core==(\S+)$", path.read_text(), re.M)
        assert len(pins) == 1, f"{path.name} pins ansible-core {len(pins)} times"
        assert _minor(Version(pins[0])) == (int(major), int(minor)), f"{path.name} pins ansible-core {pins[0]}"
        assert re.search(r"^# python: 3\.\d+$", path.read_text(), re.M), f"{path.name} has no '# python: 3.X' line"
        found.append((int(major), int(minor)))
    return sorted(found)


def test_runtime_and_pyproject_state_the_same_lowest_version() -> None:
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    requires = SpecifierSet(runtime["requires_ansible"])
    low = _bounds(_controller_range())[0]
    stated = [Version(s.version) for s in requires if s.operator == ">="]
    assert [_minor(v) for v in stated] == [low], f"meta/runtime.yml {requires} against pyproject.toml's lowest {low}"
    assert not [s for s in requires if s.operator in ("<", "<=")], "meta/runtime.yml: no upper bound (Galaxy's rule)"


def test_sanity_runs_on_the_lowest_and_the_highest() -> None:
    low, high = _bounds(_controller_range())
    assert _sanity_versions() == [low, high], (f"sanity runs on {_sanity_versions()}, the range is {low} to {high}")
    script = (ROOT / "scripts" / "sanity.sh").read_text()
    assert f'SANITY_VERSIONS:-{low[0]}.{low[1]} {high[0]}.{high[1]}' in script


def test_one_ignore_file_per_supported_version() -> None:
    low, high = _bounds(_controller_range())
    wanted = {f"ignore-{low[0]}.{minor}.txt" for minor in range(low[1], high[1] + 1)}
    have = {p.name for p in (ROOT / "tests" / "sanity").glob("ignore-*.txt")}
    assert have == wanted, f"tests/sanity has {sorted(have)}, the range {low}..{high} wants {sorted(wanted)}"


def test_readme_names_the_range() -> None:
    low, high = _bounds(_controller_range())
    readme = (ROOT / "README.md").read_text()
    assert f"ansible-core {low[0]}.{low[1]} to {high[0]}.{high[1]}" in readme


def test_every_role_states_the_lowest_version() -> None:
    low = _bounds(_controller_range())[0]
    stated = {path.parts[-3]: yaml.safe_load(path.read_text())["galaxy_info"]["min_ansible_version"]
              for path in (ROOT / "roles").glob("*/meta/main.yml")}
    assert stated, "no role meta/main.yml found"
    wrong = {role: v for role, v in stated.items() if str(v) != f"{low[0]}.{low[1]}"}
    assert not wrong, f"min_ansible_version other than {low[0]}.{low[1]}: {wrong}"
