"""The bert role's settings (defaults vs argument specs)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "bert"


def test_defaults_and_both_entry_points_list_the_same_settings() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    assert set(specs) == {"main", "preflight"}
    assert set(specs["main"]["options"]) == set(defaults) == set(specs["preflight"]["options"])
    for name, value in defaults.items():
        spec = specs["main"]["options"][name]
        if not (isinstance(value, str) and "{{" in value):
            assert spec["default"] == value, name
        if "choices" in spec and not (isinstance(value, str) and "{{" in value):
            assert value in spec["choices"], name
