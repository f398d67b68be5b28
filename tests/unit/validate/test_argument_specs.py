"""Each role's defaults and meta/argument_specs.yml name the same options; main and preflight share them."""

from __future__ import annotations

import pytest
import yaml

from .conftest import ROOT


@pytest.mark.parametrize("role", ["ib_check", "validate", "nccl_tests"])
def test_defaults_match_argument_specs(role):
    defaults = yaml.safe_load((ROOT / "roles" / role / "defaults/main.yml").read_text())
    specs = yaml.safe_load((ROOT / "roles" / role / "meta/argument_specs.yml").read_text())["argument_specs"]
    assert {"main", "preflight"} <= set(specs)
    options = specs["main"]["options"]
    assert set(defaults) == set(options), set(defaults) ^ set(options)
    assert specs["preflight"]["options"] == options
    for name, value in defaults.items():
        assert name.startswith(role + "_")
        spec_default = options[name].get("default")
        if not (isinstance(value, str) and "{{" in value):
            assert spec_default == value, name
