"""The runtime roles: internal variables prefixed, and requirements/node/*.txt say the same pins as the role
defaults (specs against defaults: tests/unit/core/test_role_specs.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLES = ("python36", "pytorch", "tensorflow", "aiacc")


def load_yaml(relative: str) -> Any:
    return yaml.safe_load((ROOT / relative).read_text())


@pytest.mark.parametrize("role", ROLES)
def test_internal_vars_are_prefixed(role: str) -> None:
    for name in load_yaml(f"roles/{role}/vars/main.yml"):
        assert name.startswith(f"_{role}_"), name


def _pins(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def test_requirement_files_match_role_defaults() -> None:
    req = ROOT / "requirements" / "node"
    python36 = load_yaml("roles/python36/defaults/main.yml")
    pytorch = load_yaml("roles/pytorch/defaults/main.yml")
    tensorflow = load_yaml("roles/tensorflow/defaults/main.yml")
    aiacc = load_yaml("roles/aiacc/defaults/main.yml")
    assert _pins(req / "train.txt") == python36["python36_requirements"] + pytorch["pytorch_requirements"]
    cpu_label = pytorch["pytorch_cpu_local_version"]
    assert _pins(req / "torch-cpu.txt") == [f"torch=={pytorch['pytorch_version']}+{cpu_label}"]
    assert _pins(req / "torch-gpu.txt") == [f"torch=={pytorch['pytorch_version']}"]
    assert _pins(req / "tensorflow-cpu.txt") == [f"tensorflow-cpu=={tensorflow['tensorflow_version']}"]
    assert _pins(req / "tensorflow-gpu.txt") == [f"tensorflow[and-cuda]=={tensorflow['tensorflow_version']}"]
    assert _pins(req / "horovod.txt") == [f"horovod=={aiacc['aiacc_horovod_version']}"]
    # the framework release a Horovod build is checked against follows the framework roles' pins
    assert aiacc["aiacc_framework_version"].strip() == (
        f"{{{{ (pytorch_version | default('{pytorch['pytorch_version']}')) if aiacc_framework == 'pytorch' else "
        f"(tensorflow_version | default('{tensorflow['tensorflow_version']}')) }}}}")
    for path in req.glob("*.txt"):
        for pin in _pins(path):
            assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[a-z-]+\])?==[0-9][0-9A-Za-z.+]*", pin), (path, pin)


def test_numpy_pin_satisfies_the_tensorflow_range() -> None:
    """TensorFlow and the trainer share one venv: the numpy pin must lie in TF's numpy range."""
    from packaging.specifiers import SpecifierSet

    tf_vars = load_yaml("roles/tensorflow/vars/main.yml")["_tensorflow_compat"]
    tf_series = ".".join(load_yaml("roles/tensorflow/defaults/main.yml")["tensorflow_version"].split(".")[:2])
    numpy = next(p for p in load_yaml("roles/pytorch/defaults/main.yml")["pytorch_requirements"]
                 if p.startswith("numpy=="))
    assert numpy.split("==")[1] in SpecifierSet(tf_vars[tf_series]["numpy"])


def test_python_versions_agree() -> None:
    """The distribution's default Python (Debian 12: 3.11) is supported by the pinned torch and TensorFlow."""
    table = load_yaml("roles/python36/vars/main.yml")["_python36_os_table"]
    torch = load_yaml("roles/pytorch/vars/main.yml")["_pytorch_compat"]
    tf = load_yaml("roles/tensorflow/vars/main.yml")["_tensorflow_compat"]
    debian = table["Debian-12"]["default"]
    assert debian in torch["2.13"]["python"] and debian in tf["2.18"]["python"]
    assert table["CentOS-7"]["default"] == "3.6"
