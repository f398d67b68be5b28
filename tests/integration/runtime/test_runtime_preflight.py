"""Every bad input of the runtime roles is refused by their preflight with one message naming the node, the
setting and the fix, before anything changes (the playbooks run in check mode and the temp dir stays empty)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

CASES = [
    ("python36", {"python36_version": "3.6"},
     "node-1: python36_version 3.6 is not available on Debian 12 (provides 3.11); set python36_version: '3.11' or "
     "use an image that has 3.6"),
    ("python36", {"python36_requirements": ["numpy", "PyYAML==6.0.2", "torch>=2"]},
     "node-1: python36_requirements must pin every package as name==version; not pinned: numpy, torch>=2"),
    ("python36", {"python36_pip_ca_bundle_src": "/nonexistent/ca.pem"},
     "node-1: python36_pip_ca_bundle_src /nonexistent/ca.pem is not a file on the controller"),
    ("python36", {"python36_pip_no_index": True},
     "node-1: python36_pip_no_index is true but python36_pip_find_links is empty"),
    ("python36", {"python36_interpreter": "/nonexistent/python3"},
     "node-1: python36_interpreter /nonexistent/python3 does not run"),
    ("pytorch", {"gpu_count": 2, "pytorch_variant": "cpu"},
     "node-1: pytorch_variant is cpu but the node has 2 GPU(s) (gpu_count); set pytorch_variant: auto"),
    ("pytorch", {"pytorch_version": "2.13"},
     "node-1: pytorch_version '2.13' is not an exact release; pin it as X.Y.Z"),
    ("pytorch", {"pytorch_version": "1.13.1"},
     "node-1: pytorch_version 1.13.1 is not in the compatibility table"),
    ("pytorch", {"pytorch_python_version": "3.9"},
     "node-1: PyTorch 2.13.0 has no build for Python 3.9 (it supports 3.10, 3.11, 3.12, 3.13, 3.14)"),
    ("pytorch", {"pytorch_requirements": ["transformers"]},
     "node-1: pytorch_requirements must pin every package as name==version; not pinned: transformers"),
    ("pytorch", {"pytorch_method": "adopt", "pytorch_python": "/nonexistent/bin/python3"},
     "node-1: pytorch_method is adopt, but /nonexistent/bin/python3 does not exist; set pytorch_python"),
    ("pytorch", {"pytorch_method": "adopt", "pytorch_python": "/usr/bin/python3"},
     "node-1: pytorch_method is adopt, but `/usr/bin/python3 -c 'import torch'` failed (ModuleNotFoundError: No "
     "module named 'torch')"),
    ("tensorflow", {"tensorflow_enabled": True, "tensorflow_version": "2.15.0"},
     "node-1: tensorflow_version '2.15.0' is not an exact release of a known series"),
    ("tensorflow", {"tensorflow_enabled": True, "tensorflow_python_version": "3.13"},
     "node-1: TensorFlow 2.18.1 has no build for Python 3.13"),
    ("tensorflow", {"tensorflow_enabled": True, "gpu_count": 1, "tensorflow_variant": "cpu"},
     "node-1: tensorflow_variant is cpu but the node has 1 GPU(s)"),
    ("aiacc", {"aiacc_backend": "aiacc"},
     "node-1: aiacc_backend is 'aiacc' but no AIACC-Training source is configured: set aiacc_wheel_url"),
    ("aiacc", {"aiacc_wheel_url": "https://mirror.example/perseus_torch-1.5.0-cp311-none-any.whl"},
     "node-1: aiacc_wheel_url needs aiacc_wheel_sha256 (64 hex digits"),
    ("aiacc", {"aiacc_wheel_url": "https://mirror.example/p.whl", "aiacc_wheel_dir": "/opt/wheels"},
     "node-1: set only one AIACC-Training source, not aiacc_wheel_url and aiacc_wheel_dir"),
    ("aiacc", {"aiacc_gradient_compression": "bf16"},
     "node-1: aiacc_gradient_compression 'bf16' is not supported by the aiacc backend"),
    ("aiacc", {"aiacc_extra_env": {"BAD-NAME": "1"}},
     "node-1: aiacc_extra_env has names that are not environment variable names: BAD-NAME"),
    # Horovod 0.28.1 (2023) and the pinned frameworks: refused before anything is built, naming what it supports.
    ("aiacc", {"aiacc_backend": "horovod"},
     "node-1: aiacc_backend is horovod, which builds Horovod 0.28.1 (its last release, 2023) for PyTorch; it "
     "supports PyTorch 1.5 to 2.0 and TensorFlow 1.15 to 2.12, and this node's PyTorch is 2.13.0 (pytorch_version)"),
    ("aiacc", {"aiacc_fallback": "horovod", "aiacc_framework": "tensorflow"},
     "node-1: aiacc_fallback is horovod (taken when AIACC-Training is absent or does not import), which builds "
     "Horovod 0.28.1 (its last release, 2023) for TensorFlow; it supports PyTorch 1.5 to 2.0 and TensorFlow 1.15 to "
     "2.12, and this node's TensorFlow is 2.18.1 (tensorflow_version)"),
]


@pytest.mark.parametrize(("role", "extravars", "message"), CASES,
                         ids=[f"{c[0]}-{'-'.join(c[1])}" for c in CASES])
def test_preflight_refuses(role_play: Any, tmp_path: Path, role: str, extravars: dict, message: str) -> None:
    run = role_play.run(role, extravars)
    assert run.rc == 2, run.output
    flat = " ".join(run.output.split())
    assert message in flat, run.output
    assert "Traceback" not in run.output
    assert not (tmp_path / "venv").exists() and not (tmp_path / "etc").exists()


def test_argument_spec_refuses_unknown_backend(role_play: Any) -> None:
    run = role_play.run("aiacc", {"aiacc_backend": "mpi"})
    assert run.rc == 2
    assert "value of aiacc_backend must be one of: auto, aiacc, horovod, native, got: mpi" in run.output


@pytest.mark.parametrize("role", ["python36", "pytorch", "tensorflow", "aiacc"])
def test_preflight_passes_with_defaults(role_play: Any, role: str) -> None:
    run = role_play.run(role, {"tensorflow_enabled": True, "python36_interpreter": sys.executable})
    assert run.rc == 0, run.output
    assert "changed=0" in run.output
