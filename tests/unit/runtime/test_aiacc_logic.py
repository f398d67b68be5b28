"""The aiacc role's decision logic (plugins/plugin_utils/aiacc.py): backend selection, knobs, --check-build parser."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest


def test_source_is_the_one_configured(aiacc: ModuleType) -> None:
    assert aiacc.aiacc_source("", "", "") == ""
    assert aiacc.aiacc_source("https://mirror/p.whl", "", "") == "url"
    assert aiacc.aiacc_source("", "/opt/wheels", "") == "wheel_dir"
    assert aiacc.aiacc_source("", "", "file:///x.tar.gz") == "conda"
    both = aiacc.aiacc_source("https://mirror/p.whl", "/opt/wheels", "")
    assert both == "error: set only one AIACC-Training source, not aiacc_wheel_url and aiacc_wheel_dir"


def test_required_aiacc_without_source_says_how_to_configure_it(aiacc: ModuleType) -> None:
    sel = aiacc.aiacc_select("aiacc", "native", "", "pytorch")
    assert sel["backend"] == ""
    assert "no AIACC-Training source is configured" in sel["error"]
    for fix in ("aiacc_wheel_url", "aiacc_wheel_sha256", "aiacc_wheel_dir", "aiacc_conda_archive",
                "aiacc_backend: auto", "(native)"):
        assert fix in sel["error"]


def test_auto_without_source_falls_back(aiacc: ModuleType) -> None:
    assert aiacc.aiacc_select("auto", "native", "", "pytorch") == {
        "backend": "native", "reason": "no AIACC-Training source configured; fallback native", "error": ""}
    assert aiacc.aiacc_select("auto", "horovod", "", "tensorflow")["backend"] == "horovod"


def test_source_but_import_not_tried_is_pending(aiacc: ModuleType) -> None:
    assert aiacc.aiacc_select("auto", "native", "wheel_dir", "pytorch")["backend"] == "pending"
    assert aiacc.aiacc_select("aiacc", "native", "url", "pytorch")["error"] == ""


def test_import_works(aiacc: ModuleType) -> None:
    sel = aiacc.aiacc_select("auto", "native", "url", "tensorflow", {"ok": True, "error": ""})
    assert sel["backend"] == "aiacc"
    assert "perseus.tensorflow.horovod" in sel["reason"]


ERR = "ModuleNotFoundError: No module named 'perseus.torch._perseus_ops'"


def test_required_aiacc_import_failure_names_the_error(aiacc: ModuleType) -> None:
    sel = aiacc.aiacc_select("aiacc", "native", "wheel_dir", "pytorch", {"ok": False, "error": ERR})
    assert sel["backend"] == ""
    assert sel["error"].startswith("aiacc_backend is 'aiacc' but `import perseus.torch.horovod` failed after "
                                   "installing from wheel_dir: " + ERR)
    assert "aiacc_backend: auto" in sel["error"]


def test_auto_import_failure_falls_back_with_the_error(aiacc: ModuleType) -> None:
    sel = aiacc.aiacc_select("auto", "horovod", "wheel_dir", "pytorch", {"ok": False, "error": ERR})
    assert sel == {"backend": "horovod",
                   "reason": f"`import perseus.torch.horovod` failed ({ERR}); fallback horovod", "error": ""}


@pytest.mark.parametrize("requested", ["horovod", "native"])
def test_explicit_backend_ignores_aiacc(aiacc: ModuleType, requested: str) -> None:
    assert aiacc.aiacc_select(requested, "native", "url", "pytorch", None)["backend"] == requested


def test_bad_request_values(aiacc: ModuleType) -> None:
    assert "not one of auto, aiacc, horovod, native" in aiacc.aiacc_select("mpi", "native", "", "pytorch")["error"]
    assert "aiacc_fallback 'aiacc'" in aiacc.aiacc_select("auto", "aiacc", "", "pytorch")["error"]
    two = aiacc.aiacc_source("u", "d", "")
    assert aiacc.aiacc_select("auto", "native", two, "pytorch")["error"].startswith("set only one")


@pytest.mark.parametrize(("requested", "fallback", "compression", "bad"), [
    ("auto", "native", "none", ""),
    ("auto", "native", "fp16", ""),
    ("auto", "native", "bf16", "aiacc"),      # auto may end in aiacc, which has no bf16
    ("native", "native", "bf16", ""),
    ("auto", "horovod", "mixed", "horovod"),
    ("horovod", "native", "mixed", "horovod"),
    ("aiacc", "native", "mixed", ""),
])
def test_compression_is_checked_against_possible_backends(aiacc: ModuleType, requested: str, fallback: str,
                                                          compression: str, bad: str) -> None:
    error = aiacc.aiacc_knob_error(requested, fallback, compression)
    if bad:
        assert f"not supported by the {bad} backend" in error
    else:
        assert error == ""


KNOBS = {"compression": "fp16", "nan_check": True, "hierarchical_allreduce": True, "streams": 4,
         "disable_stream_tuning": True, "fusion_threshold_bytes": 67108864, "cycle_time_ms": 3.5,
         "extra": {"PERSEUS_ALLREDUCE_EXTRA": "x y"}}


def test_aiacc_env_renders_every_perseus_knob(aiacc: ModuleType) -> None:
    env = dict(aiacc.aiacc_env("aiacc", KNOBS))
    assert env == {
        "SCC_COMM_BACKEND": "aiacc", "SCC_TRAINER_BACKEND": "aiacc", "SCC_GRAD_COMPRESSION": "fp16",
        "PERSEUS_ALLREDUCE_DTYPE": "0", "PERSEUS_ALLREDUCE_NANCHECK": "1", "PERSEUS_ALLREDUCE_MODE": "1",
        "PERSEUS_ALLREDUCE_STREAMS": "4", "PERSEUS_ALLREDUCE_FUSION": "67108864",
        "PERSEUS_ALLREDUCE_DISABLE_STREAM_TUNING": "1", "PERSEUS_ALLREDUCE_EXTRA": "x y"}


@pytest.mark.parametrize(("compression", "dtype"), [("fp16", "0"), ("none", "1"), ("mixed", "2")])
def test_perseus_dtype_mapping(aiacc: ModuleType, compression: str, dtype: str) -> None:
    env = dict(aiacc.aiacc_env("aiacc", {"compression": compression}))
    assert env["PERSEUS_ALLREDUCE_DTYPE"] == dtype
    assert env["PERSEUS_ALLREDUCE_NANCHECK"] == "0"


def test_horovod_env(aiacc: ModuleType) -> None:
    env = aiacc.aiacc_env("horovod", {**KNOBS, "extra": {}})
    assert env == [["SCC_COMM_BACKEND", "horovod"], ["SCC_TRAINER_BACKEND", "horovod"],
                   ["SCC_GRAD_COMPRESSION", "fp16"], ["HOROVOD_FUSION_THRESHOLD", "67108864"],
                   ["HOROVOD_CYCLE_TIME", "3.5"], ["HOROVOD_HIERARCHICAL_ALLREDUCE", "1"]]


def test_native_env_has_the_ddp_bucket_in_mib(aiacc: ModuleType) -> None:
    env = dict(aiacc.aiacc_env("native", {"compression": "bf16", "fusion_threshold_bytes": 134217728}))
    assert env == {"SCC_COMM_BACKEND": "native", "SCC_TRAINER_BACKEND": "torch", "SCC_GRAD_COMPRESSION": "bf16",
                   "SCC_DDP_BUCKET_CAP_MB": "128"}
    assert not any(k.startswith(("PERSEUS_", "HOROVOD_")) for k in env)


def test_bad_extra_env_name_is_refused(aiacc: ModuleType) -> None:
    with pytest.raises(ValueError, match="'BAD-NAME' is not a valid environment variable name"):
        aiacc.aiacc_env("native", {"extra": {"BAD-NAME": "1"}})


def test_check_build_parser_pytorch_nccl(aiacc: ModuleType, data_dir: Path) -> None:
    out = aiacc.horovod_check_build((data_dir / "horovodrun_check_build_0.28.1_pytorch_nccl.txt").read_text())
    assert out == {
        "version": "0.28.1",
        "frameworks": {"TensorFlow": False, "PyTorch": True, "MXNet": False},
        "controllers": {"MPI": True, "Gloo": True},
        "operations": {"NCCL": True, "DDL": False, "CCL": False, "MPI": True, "Gloo": True},
    }


def test_check_build_parser_tf(aiacc: ModuleType, data_dir: Path) -> None:
    out = aiacc.horovod_check_build((data_dir / "horovodrun_check_build_0.22.1_tf_torch.txt").read_text())
    assert out["version"] == "0.22.1"
    assert out["frameworks"]["TensorFlow"] and out["frameworks"]["PyTorch"]


def test_check_build_parser_garbage(aiacc: ModuleType) -> None:
    assert aiacc.horovod_check_build("horovodrun: command not found") == {
        "version": "", "frameworks": {}, "controllers": {}, "operations": {}}


PLAN = {"backend": "auto", "fallback": "native", "framework": "pytorch", "framework_version": "2.13.0",
        "horovod_version": "0.28.1", "wheel_url": "", "wheel_dir": "", "conda_archive": "", "wheel_sha256": "",
        "conda_sha256": "", "package_version": "", "gradient_compression": "none", "streams": 6,
        "fusion_threshold_bytes": 134217728, "cycle_time_ms": 1, "extra_env": {}}


def test_plan_with_defaults_has_no_problem(aiacc: ModuleType) -> None:
    assert aiacc.aiacc_plan("n1", PLAN) == {
        "source": "", "problems": [],
        "pre": {"backend": "native", "reason": "no AIACC-Training source configured; fallback native", "error": ""}}


@pytest.mark.parametrize(("change", "says"), [
    ({"backend": "aiacc"},
     "n1: aiacc_backend is 'aiacc' but no AIACC-Training source is configured: set aiacc_wheel_url"),
    ({"wheel_url": "https://mirror.example/p.whl"}, "n1: aiacc_wheel_url needs aiacc_wheel_sha256 (64 hex digits"),
    ({"wheel_dir": "/opt/wheels", "wheel_sha256": "a" * 64},
     "n1: aiacc_wheel_dir needs aiacc_package_version and aiacc_wheel_sha256 (the wheel is installed with"),
    ({"conda_archive": "/x.tar.gz"}, "n1: aiacc_conda_archive needs aiacc_conda_sha256"),
    ({"wheel_url": "https://m/p.whl", "wheel_dir": "/opt/wheels"},
     "n1: set only one AIACC-Training source, not aiacc_wheel_url and aiacc_wheel_dir"),
    ({"gradient_compression": "bf16"}, "n1: aiacc_gradient_compression 'bf16' is not supported by the aiacc backend"),
    ({"backend": "horovod"}, "n1: aiacc_backend is horovod, which builds Horovod 0.28.1 (its last release, 2023) "
     "for PyTorch; it supports PyTorch 1.5 to 2.0 and TensorFlow 1.15 to 2.12, and this node's PyTorch is 2.13.0"),
    ({"fallback": "horovod", "framework": "tensorflow", "framework_version": "2.18.1"},
     "n1: aiacc_fallback is horovod (taken when AIACC-Training is absent or does not import), which builds Horovod"),
    ({"backend": "horovod", "horovod_version": "0.29.0"},
     "n1: aiacc_horovod_version '0.29.0' is not one whose framework support this role knows (0.28.1)"),
    ({"streams": 0}, "n1: aiacc_streams must be at least 1 (got 0)"),
    ({"fusion_threshold_bytes": -1}, "n1: aiacc_fusion_threshold_bytes must be >= 0 bytes"),
    ({"cycle_time_ms": "0"}, "n1: aiacc_cycle_time_ms must be > 0 (milliseconds)"),
    ({"extra_env": {"BAD-NAME": "1", "OK": "2"}},
     "n1: aiacc_extra_env has names that are not environment variable names: BAD-NAME"),
])
def test_plan_names_the_setting_and_the_fix(aiacc: ModuleType, change: dict, says: str) -> None:
    problems = aiacc.aiacc_plan("n1", {**PLAN, **change})["problems"]
    assert len(problems) == 1 and problems[0].startswith(says), problems


def test_plan_leaves_horovod_within_its_support_or_of_unknown_release(aiacc: ModuleType) -> None:
    for change in ({"backend": "horovod", "framework_version": "2.0.1"},
                   {"backend": "horovod", "framework_version": " "},  # adopted framework: the build's own gate
                   {"fallback": "horovod", "framework": "tensorflow", "framework_version": "2.12.0"}):
        assert aiacc.aiacc_plan("n1", {**PLAN, **change})["problems"] == [], change


def test_horovod_build_problems_on_recorded_check_build(aiacc: ModuleType, data_dir: Path) -> None:
    torch_nccl = (data_dir / "horovodrun_check_build_0.28.1_pytorch_nccl.txt").read_text()
    assert aiacc.horovod_build_problems(torch_nccl, "n1", "pytorch", 8) == []
    assert aiacc.horovod_build_problems(torch_nccl, "n1", "tensorflow", 0) == [
        "n1: Horovod 0.28.1 was built without TensorFlow (`horovodrun --check-build`); uninstall it (pip uninstall "
        "horovod) and run the role again with the framework importable"]
    tf_torch = (data_dir / "horovodrun_check_build_0.22.1_tf_torch.txt").read_text()
    nccl = aiacc.horovod_check_build(tf_torch)["operations"].get("NCCL")
    assert bool(aiacc.horovod_build_problems(tf_torch, "n1", "tensorflow", 1)) == (not nccl)


def test_backend_probe(aiacc: ModuleType) -> None:
    line = '{"framework": "torch 2.13.0+cpu", "nccl": false, "gloo": true, "mpi": false}'
    assert aiacc.backend_problems("n1", "native", 0, [line], [], "/v/bin/python", 0) == (
        {"framework": "torch 2.13.0+cpu", "nccl": False, "gloo": True, "mpi": False}, [])
    problems = aiacc.backend_problems("n1", "native", 0, [line], [], "/v/bin/python", 8)[1]
    assert problems == ["n1: backend native: torch 2.13.0+cpu has no NCCL in torch.distributed; install an official "
                        "framework build"]
    assert aiacc.backend_problems("n1", "horovod", 1, [], ["", "ModuleNotFoundError: No module named 'horovod'"],
                                  "/v/bin/python", 0)[1] == [
        "n1: backend horovod: the check with /v/bin/python failed (ModuleNotFoundError: No module named 'horovod'); "
        "install the framework first (roles pytorch/tensorflow) and run the role again"]


@pytest.mark.parametrize(("requested", "fallback", "framework", "version"), [
    ("horovod", "native", "pytorch", "2.13.0"),
    ("auto", "horovod", "tensorflow", "2.18.1"),
    ("horovod", "native", "pytorch", "2.1.0+cpu"),
    ("horovod", "native", "tensorflow", "2.13.0"),
])
def test_horovod_for_a_framework_it_does_not_support_is_refused(
        aiacc: ModuleType, requested: str, fallback: str, framework: str, version: str) -> None:
    msg = aiacc.horovod_support_error(requested, fallback, framework, version, "0.28.1")
    name, setting = {"pytorch": ("PyTorch", "pytorch_version"), "tensorflow": ("TensorFlow", "tensorflow_version")}[
        framework]
    assert f"which builds Horovod 0.28.1 (its last release, 2023) for {name}; it supports PyTorch 1.5 to 2.0 and " \
        f"TensorFlow 1.15 to 2.12, and this node's {name} is {version} ({setting})" in msg
    assert "Fix: set aiacc_fallback: native" in msg and "give an AIACC-Training source" in msg
    assert {"pytorch": "PyTorch 2.1 and later need C++17 and Horovod compiles its PyTorch part as C++14: the build "
                       "fails",
            "tensorflow": "no Horovod build for it is verified here"}[framework] in msg
    assert msg.startswith("aiacc_backend is horovod" if requested == "horovod" else "aiacc_fallback is horovod")


def test_horovod_within_its_support_or_not_possible_passes(aiacc: ModuleType) -> None:
    assert aiacc.horovod_support_error("horovod", "native", "pytorch", "2.0.1", "0.28.1") == ""
    assert aiacc.horovod_support_error("horovod", "native", "tensorflow", "2.12.0", "0.28.1") == ""
    assert aiacc.horovod_support_error("horovod", "native", "tensorflow", "1.15.5", "0.28.1") == ""
    assert aiacc.horovod_support_error("horovod", "native", "pytorch", "", "0.28.1") == ""  # adopted: the build gate
    for requested, fallback in (("auto", "native"), ("native", "horovod"), ("aiacc", "horovod")):
        assert aiacc.horovod_support_error(requested, fallback, "pytorch", "2.13.0", "0.28.1") == ""
    assert "PyTorch is 1.4.0 (pytorch_version): older than Horovod 0.28.1 builds with" in \
        aiacc.horovod_support_error("horovod", "native", "pytorch", "1.4.0", "0.28.1")
    assert "aiacc_horovod_version '0.29.0' is not one whose framework support this role knows (0.28.1)" in \
        aiacc.horovod_support_error("horovod", "native", "pytorch", "2.13.0", "0.29.0")
