"""The compatibility rules, table-driven over whole plans (sccnlp.compat over sccnlp/data/compat_matrix.yml)."""

from __future__ import annotations

from typing import Any

import pytest

from sccnlp import compat
from sccnlp.errors import SccError


def plan(**over: Any) -> dict[str, Any]:
    """A good plan: 8x H200, driver 580 open, CUDA 13.0, NCCL 2.28, cuDNN 9.19, Ubuntu 24.04, all adopt."""
    base: dict[str, Any] = {
        "node": "node-1", "gpu_count": 8, "gpu_arch": "hopper", "gpu_model": "NVIDIA H200", "require_gpu": True,
        "distribution": "Ubuntu", "distribution_version": "24.04",
        "gpu_driver": {"method": "adopt", "branch": "580", "version": "", "flavour": "open"},
        "cuda": {"method": "adopt", "version": "13.0"},
        "nccl": {"method": "adopt", "version": "2.28"},
        "cudnn": {"method": "adopt", "version": "9.19"},
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return base


V100_12 = {"gpu_arch": "volta", "gpu_model": "Tesla V100-SXM2-16GB",
           "gpu_driver": {"branch": "535", "flavour": "proprietary"}, "cuda": {"version": "12.2"},
           "nccl": {"version": "2.21.5"}, "cudnn": {"version": "8.9.7"}}

# V100 on Debian 12's own NVIDIA packages (non-free): driver 535.261.03 and CUDA 11.8 (the gpu_stack scenario).
V100_DEBIAN = {**V100_12, "distribution": "Debian", "distribution_version": "12",
               "gpu_driver": {"method": "package", "source": "distribution", "branch": "535", "version": "535.261.03",
                              "flavour": "proprietary"},
               "cuda": {"method": "package", "source": "distribution", "version": "11.8"}}

ACCEPTED = [
    ("h200 cuda 13 adopt", {}),
    ("v100 debian 12 non-free driver 535 cuda 11.8", V100_DEBIAN),
    ("v100 cuda 12.2 proprietary 535", V100_12),
    ("v100 on R580 with cuda 12.8", {**V100_12, "gpu_driver": {"branch": "580", "flavour": "proprietary"},
                                     "cuda": {"version": "12.8"}, "cudnn": {"version": "9.10.2"}}),
    ("a100 package on debian 12", {"gpu_arch": "ampere", "gpu_model": "NVIDIA A100-SXM4-80GB",
                                   "distribution": "Debian", "distribution_version": "12",
                                   "gpu_driver": {"method": "package", "branch": "570", "flavour": "open"},
                                   "cuda": {"method": "package", "version": "12.8"},
                                   "nccl": {"method": "package", "version": "2.26.5"},
                                   "cudnn": {"method": "package", "version": "9.8.0"}}),
    ("pip everywhere on a GPU-less node", {"gpu_count": 0, "gpu_arch": "none", "gpu_model": "", "require_gpu": False,
                                           "cuda": {"method": "pip", "version": "12.9"},
                                           "nccl": {"method": "pip", "version": "2.28.9"},
                                           "cudnn": {"method": "pip", "version": "9.19.1"}}),
    ("arch from detected pci id", {"gpu_arch": "", "gpu_model": "", "detected": {"source": "nvidia-smi", "count": 8,
                                   "arch": "hopper", "model": "NVIDIA H200", "pci_device_id": "2335",
                                                                                 "driver": "580.95.05"}}),
]

REFUSED = [
    ("v100 debian 12 non-free cuda 13", {**V100_DEBIAN, "cuda": {**V100_DEBIAN["cuda"], "version": "13.0"},
                                         "nccl": {"version": "2.28"},
                                         "cudnn": {"version": "9.19"}},
     "node-1: cuda 13.0 does not support gpu_arch volta (V100): CUDA 13 dropped sm_70"),
    ("debian 12 non-free asked for cuda 12.4", {**V100_DEBIAN, "cuda": {**V100_DEBIAN["cuda"], "version": "12.4"}},
     "node-1: cuda from the Debian 12 archive (contrib non-free) is 11.8, the plan asks for 12.4; "
     "set cuda_version 11.8"),
    ("debian 12 non-free asked for driver 580", {**V100_DEBIAN, "cuda": {**V100_DEBIAN["cuda"], "version": "11.8"},
                                                 "gpu_driver": {**V100_DEBIAN["gpu_driver"], "branch": "580",
                                                                "version": "580.95.05"}},
     "node-1: gpu_driver from the Debian 12 archive (contrib non-free) is 535.261.03, the plan asks for branch 580 "
     "version 580.95.05; set gpu_driver_branch 535 and gpu_driver_version 535.261.03"),
    ("v100 cuda 13", {**V100_12, "node": "node-2", "cuda": {"version": "13.0"}, "gpu_driver": {"branch": "580"},
                      "nccl": {"version": "2.28"}, "cudnn": {"version": "9.19"}},
     "node-2: cuda 13.0 does not support gpu_arch volta (V100): CUDA 13 dropped sm_70; use cuda_version 12.x"),
    ("v100 open module", {**V100_12, "gpu_driver": {"flavour": "open"}},
     "node-1: gpu_driver flavour open does not support gpu_arch volta (V100)"),
    ("v100 driver 590", {**V100_12, "gpu_driver": {"branch": "590"}},
     "node-1: gpu_driver branch 590 does not support gpu_arch volta (V100): R580 is the last branch for it"),
    ("blackwell proprietary", {"gpu_arch": "blackwell", "gpu_model": "NVIDIA B200",
                               "gpu_driver": {"flavour": "proprietary"}},
     "node-1: gpu_driver flavour proprietary does not support gpu_arch blackwell (B200)"),
    ("blackwell on cuda 12.4", {"gpu_arch": "blackwell", "gpu_model": "NVIDIA B200", "cuda": {"version": "12.4"},
                                "gpu_driver": {"branch": "570"},
                                "nccl": {"version": "2.26.5"}, "cudnn": {"version": "9.8.0"}},
     "node-1: cuda 12.4 does not support gpu_arch blackwell (B200): it needs CUDA 12.8 or newer"),
    ("cuda 13 on driver 570", {"gpu_driver": {"branch": "570"}},
     "node-1: cuda 13.0 needs driver >= 580.65.06, gpu_driver_branch is 570"),
    ("cuda 12 on driver 470 version", {"gpu_driver": {"branch": "", "version": "470.82.01", "method": "runfile"},
                                       "cuda": {"version": "12.2"}, "cudnn": {"version": "9.1.0"}},
     "node-1: cuda 12.2 needs driver >= 525.60.13, gpu_driver is 470.82.01"),
    ("cudnn 8 with cuda 13", {"cudnn": {"version": "8.9.7"}},
     "node-1: cudnn 8.9.7 is not built for cuda 13.0 (builds exist for CUDA 11, 12)"),
    ("cudnn 9.10 with cuda 13", {"cudnn": {"version": "9.10.2"}},
     "node-1: cudnn 9.10.2 is not built for cuda 13.0: the first cudnn for CUDA 13 is 9.13.0"),
    ("nccl 2.26 with cuda 13", {"nccl": {"version": "2.26.5"}},
     "node-1: nccl 2.26.5 is not built for cuda 13.0: the first nccl for CUDA 13 is 2.27.7"),
    ("no gpu but required", {"gpu_count": 0, "gpu_arch": "none", "gpu_model": ""},
     "node-1: no NVIDIA GPU (gpu_count 0, none found on the node) but gpu_stack_require_gpu is true"),
    ("unknown arch", {"gpu_arch": "rubin"}, "node-1: gpu_arch 'rubin' is not in the compatibility matrix"),
    ("inventory arch disagrees with hardware", {"gpu_arch": "volta", "cuda": {"version": "12.8"},
                                                "detected": {"source": "nvidia-smi", "count": 8, "arch": "hopper",
                                                             "model": "NVIDIA H200", "pci_device_id": "2335"}},
     "node-1: gpu_arch volta does not match the GPUs found on the node (hopper, NVIDIA H200)"),
    ("package method unpinned", {"cuda": {"method": "package", "version": ""}},
     "node-1: cuda method package installs, so it needs a pinned version; set cuda_version"),
    ("package method on an unknown OS", {"distribution": "Gentoo", "distribution_version": "2.15",
                                         "nccl": {"method": "package"}},
     "node-1: nccl method package is not supported on Gentoo 2.15"),
    ("pip driver", {"gpu_driver": {"method": "pip"}},
     "node-1: gpu_driver method pip is not one of adopt, package, runfile"),
    ("unknown cuda major", {"cuda": {"version": "14.0"}}, "node-1: cuda 14.0 is not in the compatibility matrix"),
]


@pytest.mark.parametrize(("name", "over"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_accepted_plans(name: str, over: dict[str, Any]) -> None:
    assert compat.check_plan(plan(**over))["problems"] == []


@pytest.mark.parametrize(("name", "over", "message"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_plans_name_node_component_rule_and_fix(name: str, over: dict[str, Any], message: str) -> None:
    problems = compat.check_plan(plan(**over))["problems"]
    assert any(p.startswith(message) for p in problems), problems


def test_gpu_less_node_is_skipped_with_a_clear_note() -> None:
    result = compat.check_plan(plan(gpu_count=0, gpu_arch="none", gpu_model="", require_gpu=False))
    assert result["problems"] == [] and result["skip"] is True
    assert result["notes"] == ["node-1: no NVIDIA GPU, GPU stack skipped"]


def test_kernel_drift_names_the_odd_node() -> None:
    problems = compat.check_cluster([], kernels={"n1": "6.8.0-45-generic", "n2": "6.8.0-45-generic",
                                                 "n3": "6.8.0-49-generic"})
    assert problems == ["n3: kernel 6.8.0-49-generic differs from the other nodes' 6.8.0-45-generic; all nodes must "
                        "run one kernel before the driver is built (install and boot 6.8.0-45-generic on it, or hold "
                        "the others)"]
    assert compat.check_cluster([], kernels={"n1": "6.1.0-26-amd64", "n2": "6.1.0-26-amd64"}) == []


def test_assert_plan_raises_one_sccerror_listing_every_node() -> None:
    bad = plan(node="node-2", **{**V100_12, "cuda": {"version": "13.0"},
                                 "gpu_driver": {"branch": "580", "flavour": "proprietary"},
                                 "nccl": {"version": "2.28"}, "cudnn": {"version": "9.19"}})
    with pytest.raises(SccError) as err:
        compat.assert_plan([plan(), bad])
    assert str(err.value).splitlines()[1].startswith("node-2: cuda 13.0 does not support gpu_arch volta")


@pytest.mark.parametrize(("device", "model", "arch"), [
    ("0x1DB110DE", "Tesla V100-SXM2-16GB", "volta"), ("1db5", "Tesla V100-SXM2-32GB", "volta"),
    ("10de:1df6", "Tesla V100S-PCIE-32GB", "volta"), ("0x1EB810DE", "Tesla T4", "turing"),
    ("0x20B010DE", "NVIDIA A100-SXM4-40GB", "ampere"), ("20b2", "NVIDIA A100-SXM4-80GB", "ampere"),
    ("20f1", "NVIDIA A100-PCIE-40GB", "ampere"), ("2236", "NVIDIA A10", "ampere"), ("26b9", "NVIDIA L40S", "ada"),
    ("26ba", "NVIDIA L20", "ada"), ("0x233010DE", "NVIDIA H100 80GB HBM3", "hopper"),
    ("0x233510DE", "NVIDIA H200", "hopper"), ("2329", "NVIDIA H20", "hopper"), ("2901", "NVIDIA B200", "blackwell"),
])
def test_pci_ids_map_to_model_and_arch(matrix: dict[str, Any], device: str, model: str, arch: str) -> None:
    rules = compat.rules()
    assert rules.gpu_from_pci(matrix, device) == {"model": model, "arch": arch}


def test_arch_fallbacks_chip_then_model() -> None:
    assert compat.arch_for(chip="GV100GL") == "volta"
    assert compat.arch_for(pci_device_id="ffff", chip="GH100") == "hopper"
    assert compat.arch_for(model="Tesla V100-SXM2-16GB") == "volta"
    assert compat.arch_for(model="NVIDIA A10") == "ampere"
    assert compat.arch_for(model="something else") == ""


def test_matrix_is_self_consistent(matrix: dict[str, Any]) -> None:
    arches = set(matrix["architectures"])
    assert {e["arch"] for e in matrix["pci_devices"].values()} <= arches
    assert set(matrix["chips"].values()) <= arches
    for entry in matrix["cuda"]["majors"].values():
        assert set(entry["architectures"]) <= arches
        assert set(entry.get("dropped", {})) <= arches - set(entry["architectures"])
    for info in matrix["architectures"].values():
        assert info["recommended_flavour"] in info["kernel_module_flavours"]
    # every release's bundled driver meets its major's minimum
    rules = compat.rules()
    for release, driver in matrix["cuda"]["releases"].items():
        floor = matrix["cuda"]["majors"][release.split(".")[0]]["min_driver"]
        assert rules.version_at_least(driver, floor), release


def test_instance_types_agree_with_the_matrix(matrix: dict[str, Any]) -> None:
    """Every instance type the inventory plugin knows resolves, by model name, to the arch it declares."""
    import yaml

    from sccnlp.paths import data_dir

    types = yaml.safe_load((data_dir() / "instance_types.yml").read_text())["instance_types"]
    for key, entry in types.items():
        if entry.get("gpu_count") and entry.get("gpu_model"):
            assert compat.arch_for(model=entry["gpu_model"]) == entry["gpu_arch"], key


@pytest.mark.parametrize(("pin", "actual", "ok"), [
    ("2.28", "2.28.9", True), ("2.28.9", "2.28.9", True), ("2.28", "2.27.7", False), ("9", "9.19.1", True),
    ("580", "580.95.05", True), ("12.8", "12.80", False), ("", "1.0", False),
])
def test_version_matches(pin: str, actual: str, ok: bool) -> None:
    assert compat.rules().version_matches(pin, actual) is ok


def test_bad_matrix_file_is_one_clear_error(tmp_path) -> None:
    bad = tmp_path / "m.yml"
    bad.write_text("schema: 2\n")
    with pytest.raises(SccError, match="not a schema-1 compatibility matrix"):
        compat.load_matrix(bad)
