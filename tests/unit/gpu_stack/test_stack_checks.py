"""The GPU stack roles' checks (plugins/plugin_utils/gpu_stack.py) on recorded inputs: settings, the library, CUDA
and the driver found by gpu_facts (parsed from recorded nvidia-smi output), with the messages the roles print."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.scc.nlp_training.plugins.modules import gpu_facts
from ansible_collections.scc.nlp_training.plugins.plugin_utils import gpu_stack

SHA = "sha256:" + "a" * 64
NCCL = {"method": "pip", "version": "2.28.9", "gpu_count": 0, "gpu_only": True, "tarball_url": "",
        "tarball_checksum": "", "package_source": "nvidia"}


def _only(problems: list[str]) -> str:
    assert len(problems) == 1, problems
    return problems[0]


def test_pip_applies_without_a_gpu_and_adopt_does_not() -> None:
    assert gpu_stack.component_plan("n1", "nccl", NCCL) == {"settings": NCCL, "active": True, "skip": "",
                                                            "problems": []}
    plan = gpu_stack.component_plan("n1", "nccl", {**NCCL, "method": "adopt", "version": "2.28"})
    assert not plan["active"] and plan["skip"] == "n1: no NVIDIA GPU, nccl skipped (nccl_method adopt)"
    assert gpu_stack.component_plan("n1", "nccl", {**NCCL, "method": "adopt", "version": "2.28",
                                                   "gpu_only": "false"})["active"]


def test_library_settings_need_an_exact_pin_and_the_archive() -> None:
    assert _only(gpu_stack.library_settings_problems("n1", "nccl", {**NCCL, "version": "2.28"})) == (
        "n1: nccl settings are incomplete: method pip (adopt, package, tarball or pip) needs nccl_version pinned "
        "exactly (X.Y.Z, got '2.28'); set them in the inventory")
    tarball = _only(gpu_stack.library_settings_problems("n1", "cudnn", {**NCCL, "method": "tarball"}))
    assert tarball.endswith("(X.Y.Z, got '2.28.9') and cudnn_tarball_url plus cudnn_tarball_checksum "
                            "'sha256:<64 hex>'; set them in the inventory")
    assert gpu_stack.library_settings_problems("n1", "nccl", {**NCCL, "method": "tarball", "tarball_url": "u",
                                                              "tarball_checksum": SHA}) == []
    assert "(adopt, package, tarball or pip)" in _only(gpu_stack.library_settings_problems(
        "n1", "nccl", {**NCCL, "method": "latest"}))


def test_cuda_settings() -> None:
    cuda = {"method": "runfile", "version": "12.8", "runfile_url": "", "runfile_checksum": ""}
    assert _only(gpu_stack.library_settings_problems("n1", "cuda", cuda)) == (
        "n1: CUDA settings are incomplete: cuda_method runfile (adopt, package, runfile or pip) with cuda_version "
        "'12.8' (pin it exactly: X.Y.Z), cuda_runfile_url and cuda_runfile_checksum 'sha256:<64 hex>'; set them "
        "in the inventory")
    assert gpu_stack.library_settings_problems("n1", "cuda", {"method": "package", "version": "13.0",
                                                              "package_source": "nvidia"}) == []
    assert _only(gpu_stack.library_settings_problems("n1", "cuda", {"method": "package", "version": "13.0",
                                                                    "package_source": "ppa"})) == (
        "n1: cuda_package_source is 'ppa' (nvidia or distribution); set it in the inventory")


@pytest.mark.parametrize(("settings", "says"), [
    ({"version": "581.10.2"},
     "gpu_driver_version 581.10.2 is not on gpu_driver_branch 580 (set gpu_driver_branch 581 or a 580.x version)"),
    ({"method": "package", "version": "latest"},
     "gpu_driver_version is 'latest', not a driver version (e.g. 580.95.05)"),
    ({"method": "package"},
     "gpu_driver_version is empty but gpu_driver_method package installs: set the exact version (e.g. 580.95.05)"),
    ({"branch": "58"}, "gpu_driver_branch is '58' (3 digits, e.g. 580)"),
    ({"method": "runfile", "version": "580.95.05"},
     "gpu_driver_method runfile needs gpu_driver_runfile_url and gpu_driver_runfile_checksum 'sha256:<64 hex>'"),
])
def test_driver_settings_name_the_setting(settings: dict[str, str], says: str) -> None:
    base = {"method": "adopt", "branch": "580", "version": "", "flavour": "auto", "persistence": "enabled"}
    problems = gpu_stack.driver_settings_problems("n1", {**base, **settings})
    assert _only(problems) == f"n1: {says}; fix it in the inventory"


def test_library_found_elsewhere_or_not_at_all() -> None:
    missing = {"found": False, "candidates": [{"path": "/opt/x/libnccl.so.2", "error": "wrong ELF class"}]}
    assert _only(gpu_stack.library_problems("n1", "nccl", missing, "pip", "2.28.9", "/opt/scc/venv",
                                            "libnccl.so.2", ["/opt/scc/venv"])) == (
        "n1: nccl 2.28.9 (nccl_method pip) is not what the node has: no loadable libnccl.so.2 was found in "
        "/opt/scc/venv or the system library paths (/opt/x/libnccl.so.2: wrong ELF class); install it or point "
        "nccl_library_dirs / nccl_adopt_venvs at it")
    other = {"found": True, "path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "version": "2.21.5"}
    assert "reports 2.21.5; set nccl_version 2.21.5 to adopt it, or install 2.28.9" in _only(
        gpu_stack.library_problems("n1", "nccl", other, "package", "2.28.9", "/v", "libnccl.so.2", []))
    # The pip method needs the venv's copy, not the system's.
    assert gpu_stack.library_problems("n1", "nccl", {**other, "version": "2.28.9"}, "pip", "2.28.9", "/v",
                                      "libnccl.so.2", [])
    assert gpu_stack.library_problems("n1", "cudnn", {"found": True, "path": "/v/lib/libcudnn.so.9",
                                                      "version": "9.19.1"}, "pip", "9.19.1.2", "/v",
                                      "libcudnn.so.9", []) == []


def test_cuda_found_and_driver_support() -> None:
    settings = {"version": "13.0", "method": "package", "home": "/usr/local/cuda", "venv": "/v",
                "library_dirs": [], "adopt_venvs": ["/v"]}
    assert gpu_stack.cuda_problems("n1", settings, {"version": "13.0.88"}, {"version": "", "path": ""}, "13.0") == []
    assert _only(gpu_stack.cuda_problems("n1", settings, {"version": ""}, {"version": "", "path": ""}, "")) == (
        "n1: CUDA 13.0 (cuda_method package) is not what the node has: no nvcc/version.json under /usr/local/cuda "
        "and no loadable libcudart in /v or the system library paths; install CUDA or set cuda_home / "
        "cuda_adopt_venvs")
    assert "found CUDA 12.9.79 (nvcc); set cuda_version 12.9 to adopt it, or install 13.0" in _only(
        gpu_stack.cuda_problems("n1", settings, {"version": "12.9.79"}, {}, ""))
    assert _only(gpu_stack.cuda_problems("n1", settings, {"version": "13.0.88"}, {}, "12.2")) == (
        "n1: the driver supports CUDA 12.2 but cuda_version is 13.0; upgrade the driver (gpu_driver_branch) or use "
        "an older cuda_version")


def _found(fixture_text: Any, matrix: dict[str, Any]) -> dict[str, Any]:
    gpus = gpu_facts.annotate(gpu_facts.parse_query_csv(fixture_text("query_gpu", "8xh100_535.161.07.csv")), matrix)
    return dict(gpu_facts.summarise(gpus, "nvidia-smi", "535.161.07", "12.2"), driver_flavour="open")


def test_driver_on_recorded_nvidia_smi(fixture_text: Any, matrix: dict[str, Any]) -> None:
    found = _found(fixture_text, matrix)
    modes = {g["persistence_mode"] for g in found["gpus"]}
    plan = {"count": 8, "version": "", "branch": "535", "flavour": "auto",
            "persistence": "enabled" if modes == {"Enabled"} else "any"}
    assert gpu_stack.driver_problems("n1", found, plan) == []
    assert _only(gpu_stack.driver_problems("n1", found, {**plan, "count": 7})) == (
        "n1: nvidia-smi sees 8 GPU(s), the inventory's gpu_count is 7: a GPU is missing (check nvidia-smi -L and "
        "dmesg for Xid errors) or gpu_count is wrong")
    assert _only(gpu_stack.driver_problems("n1", found, {**plan, "branch": "580"})) == (
        "n1: the driver is 535.161.07, the plan wants branch 580; set gpu_driver_branch 535 to adopt it, or install "
        "the pinned driver")
    assert "the loaded NVIDIA kernel module is open, the plan wants proprietary" in _only(
        gpu_stack.driver_problems("n1", found, {**plan, "flavour": "proprietary"}))
    absent = gpu_facts.summarise([], "lspci", error="NVIDIA-SMI has failed")
    assert _only(gpu_stack.driver_problems("n1", dict(absent, driver_flavour=None), {**plan, "count": 0})) == (
        "n1: nvidia-smi does not work (NVIDIA-SMI has failed; 0 GPU(s) seen by lspci): the driver is absent or not "
        "loaded; install it (gpu_driver_method package or runfile) or reboot after an install")
