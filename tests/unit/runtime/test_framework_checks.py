"""The framework roles' checks (plugins/plugin_utils/frameworks.py) on recorded probe answers, with the messages
the roles print (tests/integration/runtime/test_runtime_preflight.py runs the same refusals through the roles)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ansible_collections.scc.nlp_training.plugins.plugin_utils import frameworks

COMPAT = {"2.12": {"python": ["3.10"]}, "2.13": {"python": ["3.10", "3.11"]}}
# The torch probe's answer on a test-bed node (CPU build, gloo), recorded from roles/pytorch/files/torch_probe.py.
CPU = {"python": "/opt/scc/venv/bin/python", "python_version": "3.11.2", "version": "2.13.0+cpu", "cuda_build": "",
       "cuda_available": False, "device_count": 0, "devices": [], "cudnn": "", "nccl_version": "", "gloo": True,
       "allreduce": "ok", "allreduce_backend": "gloo", "modules": {"transformers": "4.57.1", "numpy": "2.3.4"}}
SETTINGS = {"python": "/opt/scc/venv/bin/python", "method": "install", "version": "2.13.0",
            "requirements": ["transformers==4.57.1", "numpy==2.3.4"], "gpus": 0, "verify_collective": True}


@pytest.mark.parametrize(("version", "requirements", "says"), [
    ("2.13", [], "n1: pytorch_version '2.13' is not an exact release; pin it as X.Y.Z (e.g. '2.13.0')"),
    ("1.13.1", [], "n1: pytorch_version 1.13.1 is not in the compatibility table (known series 2.12, 2.13); choose "
                   "one of them or add the series to roles/pytorch/vars/main.yml"),
    ("2.13.0", ["transformers", "numpy==2.3.4", "torch>=2"],
     "n1: pytorch_requirements must pin every package as name==version; not pinned: transformers, torch>=2"),
])
def test_settings(version: str, requirements: list[str], says: str) -> None:
    assert frameworks.pytorch_settings_problems("n1", version, requirements, COMPAT) == [says]
    assert frameworks.pytorch_settings_problems("n1", "2.13.0", ["transformers[torch]==4.57.1"], COMPAT) == []


def test_adopt() -> None:
    assert frameworks.pytorch_adopt_problems("n1", "/nonexistent/bin/python3", False, {}, "")[0].startswith(
        "n1: pytorch_method is adopt, but /nonexistent/bin/python3 does not exist; set pytorch_python")
    failed = {"rc": 1, "stdout": "", "stderr_lines": ["Traceback ...", "ModuleNotFoundError: No module named 'torch'"]}
    assert frameworks.pytorch_adopt_problems("n1", "/usr/bin/python3", True, failed, "") == [
        "n1: pytorch_method is adopt, but `/usr/bin/python3 -c 'import torch'` failed (ModuleNotFoundError: No module "
        "named 'torch'); point pytorch_python at an interpreter that has torch, or use pytorch_method: install"]
    found = {"rc": 0, "stdout": "2.12.1\n", "stderr_lines": []}
    assert frameworks.pytorch_adopt_problems("n1", "/p", True, found, "") == []
    assert "it has torch 2.12.1, not pytorch_adopt_version 2.13.0" in frameworks.pytorch_adopt_problems(
        "n1", "/p", True, found, "2.13.0")[0]


def test_probe_of_a_good_cpu_node() -> None:
    assert frameworks.pytorch_problems("n1", CPU, SETTINGS) == []


def test_probe_wrong_versions_gpus_and_backend() -> None:
    wrong = frameworks.pytorch_problems("n1", {**CPU, "modules": {"transformers": "4.56.0", "numpy": "2.3.4"}},
                                        SETTINGS)
    assert wrong == ["n1: expected torch 2.13.0 and transformers==4.57.1, numpy==2.3.4, found torch 2.13.0+cpu, "
                     "transformers 4.56.0, numpy 2.3.4; run the role again (tag pytorch_install) and check the pip "
                     "index settings"]
    gpus = frameworks.pytorch_problems("n1", CPU, {**SETTINGS, "gpus": 8})
    assert gpus[0] == ("n1: torch 2.13.0+cpu (CUDA build '') reports cuda available False with 0 device(s), but "
                       "gpu_count is 8; install the CUDA build (pytorch_variant: cuda) and check the driver "
                       "(nvidia-smi)")
    assert gpus[1].startswith("n1: torch.distributed backend gloo: NCCL version missing, one-process all_reduce ok")
    assert frameworks.pytorch_problems("n1", {"import_error": "ImportError: libcudart.so.12"}, SETTINGS) == [
        "n1: `/opt/scc/venv/bin/python -c 'import torch'` failed (ImportError: libcudart.so.12); run the role with "
        "pytorch_method: install, or point pytorch_python at the interpreter that has torch"]
    skipped = {**CPU, "allreduce": "skipped"}
    assert frameworks.pytorch_problems("n1", skipped, {**SETTINGS, "verify_collective": False}) == []


def _tf(**info: Any) -> dict[str, Any]:
    return {"rc": 0, "stdout_lines": ["warning", json.dumps({"version": "2.18.1", "gpus": 0, "sum": 12.0, **info})],
            "stderr_lines": []}


def test_tensorflow() -> None:
    assert frameworks.tensorflow_problems("n1", _tf(), "/opt/scc/venv", "2.18.1", 0) == []
    assert frameworks.tensorflow_problems("n1", _tf(gpus=0), "/opt/scc/venv", "2.18.1", 2) == [
        "n1: TensorFlow 2.18.1 (pinned 2.18.1) sees 0 GPU(s), gpu_count is 2; check the driver (nvidia-smi) and that "
        "the build is tensorflow[and-cuda]"]
    failed = {"rc": 1, "stdout_lines": [], "stderr_lines": ["ModuleNotFoundError: No module named 'tensorflow'"]}
    assert frameworks.tensorflow_problems("n1", failed, "/opt/scc/venv", "2.18.1", 0) == [
        "n1: `import tensorflow` in /opt/scc/venv failed (ModuleNotFoundError: No module named 'tensorflow'); run "
        "the role again (tag tensorflow_install)"]
