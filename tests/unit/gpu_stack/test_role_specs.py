"""The GPU stack roles: the compat_check plan uses the same defaults as the roles, so the preflight judges exactly
what the roles would do (specs against defaults: tests/unit/core/test_role_specs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
STACK = ("gpu_driver", "cuda", "nccl", "cudnn", "compat_check")


@pytest.mark.parametrize(("role", "keys"), [
    ("gpu_driver", ("method", "branch", "version", "flavour")),
    ("cuda", ("method", "version")), ("nccl", ("method", "version")), ("cudnn", ("method", "version")),
])
def test_compat_check_uses_the_roles_defaults(role: str, keys: tuple[str, ...]) -> None:
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())
    plan_text = (ROLES / "compat_check" / "vars" / "main.yml").read_text()
    for key in keys:
        var = f"{role}_{key}"
        assert f"{{{{ {var} | default('{defaults[var]}') }}}}" in plan_text, var


def test_every_stack_task_file_is_tagged_through_main() -> None:
    for role in STACK[:-1]:
        main = (ROLES / role / "tasks" / "main.yml").read_text()
        for tag in (role, f"{role}_install", f"{role}_configure", f"{role}_verify"):
            assert tag in main, (role, tag)
