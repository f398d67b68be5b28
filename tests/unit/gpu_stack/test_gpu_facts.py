"""gpu_facts: parsers on recorded real outputs, and the module end to end with recorded outputs behind stand-in
nvidia-smi / lspci commands (this machine has no GPU)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.scc.nlp_training.plugins.modules import gpu_facts

from sccnlp.compat import matrix_path
from sccnlp.runner import _collections_path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ANSIBLE = Path(sys.executable).parent / "ansible" if (Path(sys.executable).parent / "ansible").exists() \
    else Path(shutil.which("ansible") or "ansible")


def test_8xh100_query_csv(fixture_text, matrix: dict[str, Any]) -> None:
    gpus = gpu_facts.annotate(gpu_facts.parse_query_csv(fixture_text("query_gpu", "8xh100_535.161.07.csv")), matrix)
    assert [g["index"] for g in gpus] == list(range(8))
    assert {g["name"] for g in gpus} == {"NVIDIA H100 80GB HBM3"}
    assert gpus[0]["driver_version"] == "535.161.07" and gpus[0]["pci_bus_id"] == "00000000:0A:00.0"
    assert gpus[0]["memory_total_mib"] == 81559 and gpus[0]["ecc_uncorrected_aggregate"] == 0
    assert gpus[0]["pci_device_id"] is None and gpus[0]["arch"] == "hopper"  # from the name: no device id queried
    facts = gpu_facts.summarise(gpus, "nvidia-smi", "535.161.07", "12.2")
    assert facts["count"] == 8 and facts["arch"] == "hopper" and facts["model"] == "NVIDIA H100 80GB HBM3"


def test_4xt4_without_index_column(fixture_text, matrix: dict[str, Any]) -> None:
    gpus = gpu_facts.annotate(gpu_facts.parse_query_csv(fixture_text("query_gpu", "4xt4_510.108.03.csv")), matrix)
    assert [(g["index"], g["pci_bus_id"]) for g in gpus][-1] == (3, "00000004:00:00.0")
    assert {g["arch"] for g in gpus} == {"turing"} and gpus[0]["memory_total_mib"] == 16384


@pytest.mark.parametrize(("name", "model", "driver", "memory", "arch"), [
    ("a100_575.57.08.csv", "NVIDIA A100-SXM4-40GB", "575.57.08", 40960, "ampere"),
    ("p100_580.178.04.csv", "Tesla P100-PCIE-16GB", "580.178.04", 16384, "pascal"),
    ("gb10_580.95.05_na.csv", "NVIDIA GB10", "580.95.05", None, "blackwell"),
])
def test_single_gpu_outputs(fixture_text, matrix, name, model, driver, memory, arch) -> None:
    (gpu,) = gpu_facts.annotate(gpu_facts.parse_query_csv(fixture_text("query_gpu", name)), matrix)
    assert (gpu["name"], gpu["driver_version"], gpu["memory_total_mib"], gpu["arch"]) == (model, driver, memory, arch)


def test_persistence_and_ecc_columns(fixture_text) -> None:
    (gpu,) = gpu_facts.parse_query_csv(fixture_text("query_gpu", "rtx6000ada_persistence_ecc.csv"))
    assert gpu["persistence_mode"] == "Enabled" and gpu["ecc_mode_current"] == "Enabled"
    assert gpu["ecc_mode_pending"] is None


def test_lspci_keeps_only_nvidia_display_and_3d_controllers(fixture_text, matrix) -> None:
    gpus = gpu_facts.annotate(gpu_facts.parse_lspci(fixture_text("lspci", "gt710_v100_audio.txt")), matrix)
    assert [(g["pci_bus_id"], g["pci_device_id"], g["chip"]) for g in gpus] == [
        ("04:00.0", "128b", "GK208B"), ("09:00.0", "1db4", "GV100GL")]
    assert [g["arch"] for g in gpus] == ["kepler", "volta"]  # 128b is not in the table: chip code name decides
    v100s = gpu_facts.annotate(gpu_facts.parse_lspci(fixture_text("lspci", "v100s_x2.txt")), matrix)
    assert [(g["model"], g["arch"]) for g in v100s] == [("Tesla V100S-PCIE-32GB", "volta")] * 2
    (h100,) = gpu_facts.annotate(gpu_facts.parse_lspci(fixture_text("lspci", "h100_pcie.txt")), matrix)
    assert (h100["pci_device_id"], h100["name"], h100["arch"]) == ("2331", "H100 PCIe", "hopper")


@pytest.mark.parametrize(("kind", "code", "version"), [
    ("nccl", 22809, "2.28.9"), ("nccl", 2708, "2.7.8"), ("cudnn", 91901, "9.19.1"), ("cudnn", 8907, "8.9.7"),
    ("cudart", 12090, "12.9"), ("cudart", 13000, "13.0"),
])
def test_version_codes(kind: str, code: int, version: str) -> None:
    assert gpu_facts.decode_version(kind, code) == version


def test_runtime_version_from_the_real_file_name(tmp_path: Path) -> None:
    real = tmp_path / "libcudart.so.11.8.89"
    real.write_bytes(b"")
    (tmp_path / "libcudart.so.11.0").symlink_to(real.name)
    assert gpu_facts.version_from_file_name(str(tmp_path / "libcudart.so.11.0")) == "11.8.89"
    assert gpu_facts.version_from_file_name(str(tmp_path / "libcudart.so.11.8.89")) == "11.8.89"
    assert gpu_facts.version_from_file_name("/nonexistent/libnccl.so.2") is None


def test_cuda_version_and_flavour_lines() -> None:
    header = "| NVIDIA-SMI 550.127.05             Driver Version: 550.127.05     CUDA Version: 12.4     |"
    assert gpu_facts.parse_cuda_version(header) == "12.4"
    assert gpu_facts.parse_nvcc("Cuda compilation tools, release 12.4, V12.4.131") == "12.4.131"
    assert gpu_facts.driver_flavour("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05") == "open"
    assert gpu_facts.driver_flavour("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01") == "proprietary"


# ---------------------------------------------------------------------------------------------------------------
# The module end to end (ansible ad hoc on localhost), with stand-in commands that print recorded outputs.


def _stand_in(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _run_module(tmp_path: Path, args: dict[str, Any]) -> dict[str, Any]:
    matrix = json.dumps(__import__("yaml").safe_load(matrix_path().read_text()))
    args = {**args, "matrix": json.loads(matrix)}
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": _collections_path(), "ANSIBLE_STDOUT_CALLBACK": "json",
           "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_LOCALHOST_WARNING": "0"}
    proc = subprocess.run([str(ANSIBLE), "localhost", "-c", "local", "-m", "scc.nlp_training.gpu_facts", "-a",
                           json.dumps(args), "--check"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert result["changed"] is False
    return result["ansible_facts"]["scc_gpu"]


def test_module_reads_nvidia_smi(tmp_path: Path) -> None:
    csv = FIXTURES / "query_gpu" / "8xh100_535.161.07.csv"
    smi = _stand_in(tmp_path / "nvidia-smi", f"""case "$1" in
  --query-gpu=*) cat {csv} ;;
  *) echo '| NVIDIA-SMI 535.161.07   Driver Version: 535.161.07   CUDA Version: 12.2     |' ;;
esac
""")
    facts = _run_module(tmp_path, {"nvidia_smi": str(smi), "cuda_home": str(tmp_path / "nocuda")})
    assert (facts["source"], facts["count"], facts["driver"], facts["cuda_driver_version"], facts["arch"]) == (
        "nvidia-smi", 8, "535.161.07", "12.2", "hopper")
    assert facts["toolkit"]["version"] is None and facts["libraries"] == {}


def test_module_falls_back_to_lspci_when_the_driver_is_not_loaded(tmp_path: Path) -> None:
    smi = _stand_in(tmp_path / "nvidia-smi", "echo \"NVIDIA-SMI has failed because it couldn't communicate with "
                    "the NVIDIA driver.\"; exit 9\n")
    lspci = _stand_in(tmp_path / "lspci", f"cat {FIXTURES / 'lspci' / 'v100s_x2.txt'}\n")
    facts = _run_module(tmp_path, {"nvidia_smi": str(smi), "lspci": str(lspci)})
    assert (facts["source"], facts["count"], facts["arch"], facts["driver"]) == ("lspci", 2, "volta", None)
    assert "couldn't communicate" in facts["error"]


def test_module_reports_none_without_gpu(tmp_path: Path) -> None:
    lspci = _stand_in(tmp_path / "lspci", "echo '00:02.0 VGA compatible controller [0300]: Device [1234:1111]'\n")
    facts = _run_module(tmp_path, {"nvidia_smi": str(tmp_path / "absent"), "lspci": str(lspci),
                                   "libraries": ["nccl"], "system_paths": False})
    assert (facts["source"], facts["count"], facts["arch"]) == ("none", 0, "")
    assert facts["libraries"]["nccl"] == {"found": False, "version": None, "path": None, "origin": None,
                                          "candidates": []}
