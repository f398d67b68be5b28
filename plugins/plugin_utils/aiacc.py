# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The decisions of the aiacc role: which communication backend a node gets, its environment knobs, and the checks
of its settings, of Horovod's build and of the backend in the training interpreter. Pure functions (unit-tested in
tests/unit/runtime/); the filters in plugins/filter/aiacc.py are thin wrappers.
  aiacc_source         which AIACC-Training source is configured ('', 'url', 'wheel_dir', 'conda') or an error
  aiacc_select         backend selection from the request, the source and the import probe
  aiacc_knob_error     a gradient-compression choice the possible backends cannot honour
  aiacc_plan           the preflight: source, the selection before anything is installed, the settings' problems
  horovod_support_error  a Horovod build this request may need for a framework release Horovod does not support
  aiacc_env            the environment variables (name, value) rendered into the scc env file
  horovod_check_build  parse `horovodrun --check-build` output
  horovod_build_problems, backend_problems  the verify of the install and of the backend
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Optional

BACKENDS = ("auto", "aiacc", "horovod", "native")
FALLBACKS = ("native", "horovod")
FRAMEWORK_MODULES = {"pytorch": "perseus.torch.horovod", "tensorflow": "perseus.tensorflow.horovod"}
# Gradient compression each backend can apply (PERSEUS_ALLREDUCE_DTYPE, hvd.Compression, DDP comm hooks).
COMPRESSIONS = {
    "aiacc": ("none", "fp16", "mixed"),
    "horovod": ("none", "fp16"),
    "native": ("none", "fp16", "bf16"),
}
PERSEUS_DTYPE = {"fp16": 0, "none": 1, "mixed": 2}
TRAINER_BACKEND = {"aiacc": "aiacc", "horovod": "horovod", "native": "torch"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The framework series each Horovod release supports: the oldest it builds with and the newest its CI tested
# (v0.28.1, 2023-06-12, its last release: docker-compose.test.yml runs TensorFlow 1.15.5 and 2.10.1 to 2.12.0, PyTorch
# 1.5.0 to 2.0.0), and why a newer release is refused.
HOROVOD_SUPPORT = {"0.28.1": {"tensorflow": ("1.15", "2.12"), "pytorch": ("1.5", "2.0")}}
HOROVOD_BEYOND = {
    # PyTorch 2.1+ headers stop with `#error C++17 or later compatible compiler is required` and Horovod compiles its
    # PyTorch extension as C++14 (horovod/torch/CMakeLists.txt): the build cannot pass.
    "pytorch": "PyTorch 2.1 and later need C++17 and Horovod compiles its PyTorch part as C++14: the build fails",
    # A CPU build against TensorFlow 2.18.1 compiled and passed `horovodrun --check-build` on 2026-12-06 (22 min on
    # a 2-core machine), but neither an NCCL build nor a pip lock set of Horovod with TensorFlow is verified.
    "tensorflow": "no Horovod build for it is verified here (no GPU build, no pip lock set of Horovod with "
                  "TensorFlow)",
}
FRAMEWORK_NAMES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow"}


def aiacc_source(wheel_url: str, wheel_dir: str, conda_archive: str) -> str:
    """The one configured source, '' when none; 'error: ...' when several are set."""
    given = [name for name, value in (("url", wheel_url), ("wheel_dir", wheel_dir), ("conda", conda_archive)) if value]
    if len(given) > 1:
        return ("error: set only one AIACC-Training source, not " + " and ".join(
            {"url": "aiacc_wheel_url", "wheel_dir": "aiacc_wheel_dir", "conda": "aiacc_conda_archive"}[g]
            for g in given))
    return given[0] if given else ""


def _no_source(fallback: str) -> str:
    return ("aiacc_backend is 'aiacc' but no AIACC-Training source is configured: set aiacc_wheel_url and "
            "aiacc_wheel_sha256 (a wheel obtained from Alibaba Cloud), aiacc_wheel_dir (a directory of wheels on the "
            "node) or aiacc_conda_archive (a conda-pack archive); AIACC is never installed by name from the public "
            f"index. Or set aiacc_backend: auto to fall back to aiacc_fallback ({fallback})")


def aiacc_select(requested: str, fallback: str, source: str, framework: str,
                 probe: Optional[dict[str, Any]] = None) -> dict[str, str]:
    """Choose the backend. probe is None before the import was tried, else {'ok': bool, 'error': str}.

    Returns {'backend', 'reason', 'error'}; a non-empty error means the play must stop with it.
    """
    module = FRAMEWORK_MODULES.get(framework, "perseus")
    if requested not in BACKENDS:
        return {"backend": "", "reason": "",
                "error": f"aiacc_backend {requested!r} is not one of {', '.join(BACKENDS)}"}
    if fallback not in FALLBACKS:
        return {"backend": "", "reason": "",
                "error": f"aiacc_fallback {fallback!r} is not one of {', '.join(FALLBACKS)}"}
    if source.startswith("error:"):
        return {"backend": "", "reason": "", "error": source[len("error: "):]}
    if requested in ("horovod", "native"):
        return {"backend": requested, "reason": f"aiacc_backend is {requested}", "error": ""}
    if not source:
        if requested == "aiacc":
            return {"backend": "", "reason": "", "error": _no_source(fallback)}
        return {"backend": fallback, "reason": f"no AIACC-Training source configured; fallback {fallback}",
                "error": ""}
    if probe is None:
        return {"backend": "pending", "reason": f"AIACC-Training from {source}, import not tried yet", "error": ""}
    if probe.get("ok"):
        return {"backend": "aiacc", "reason": f"`import {module}` works (source {source})", "error": ""}
    error = str(probe.get("error") or "unknown error").strip()
    if requested == "aiacc":
        return {"backend": "", "reason": "",
                "error": (f"aiacc_backend is 'aiacc' but `import {module}` failed after installing from {source}: "
                          f"{error}; install an AIACC-Training build for {framework}, this Python and this CUDA, or "
                          f"set aiacc_backend: auto to fall back to aiacc_fallback ({fallback})")}
    return {"backend": fallback, "reason": f"`import {module}` failed ({error}); fallback {fallback}", "error": ""}


def aiacc_knob_error(requested: str, fallback: str, compression: str) -> str:
    """'' when every backend this request may end in supports the compression, else the message."""
    possible = [requested] if requested in COMPRESSIONS else ["aiacc", fallback]
    for backend in possible:
        allowed = COMPRESSIONS.get(backend, ())
        if compression not in allowed:
            return (f"aiacc_gradient_compression {compression!r} is not supported by the {backend} backend "
                    f"(it supports {', '.join(allowed)}); choose one of those"
                    + ("" if requested in COMPRESSIONS else f" or set aiacc_backend to avoid {backend}"))
    return ""


def _series(version: str) -> tuple[int, ...]:
    """(major, minor) of a release such as '2.13.0+cpu'; () when it is not one."""
    match = re.match(r"^(\d+)\.(\d+)", str(version).strip())
    return (int(match.group(1)), int(match.group(2))) if match else ()


def horovod_support_error(requested: str, fallback: str, framework: str, framework_version: str,
                          horovod_version: str) -> str:
    """'' unless this request may build Horovod (aiacc_backend horovod, or auto with aiacc_fallback horovod) for a
    framework release outside what that Horovod supports; then the message, before anything is installed.
    An empty framework_version (an adopted framework of unknown release) is left to the build's own gate."""
    if requested == "horovod":
        setting = "aiacc_backend is horovod"
    elif requested == "auto" and fallback == "horovod":
        setting = "aiacc_fallback is horovod (taken when AIACC-Training is absent or does not import)"
    else:
        return ""
    table = HOROVOD_SUPPORT.get(str(horovod_version))
    if table is None:
        return (f"aiacc_horovod_version {horovod_version!r} is not one whose framework support this role knows "
                f"({', '.join(HOROVOD_SUPPORT)}): set aiacc_horovod_version: {next(iter(HOROVOD_SUPPORT))}")
    if framework not in table or not str(framework_version).strip():
        return ""
    supported = " and ".join(f"{FRAMEWORK_NAMES[fw]} {lo} to {hi}" for fw, (lo, hi) in sorted(table.items()))
    low, high = (_series(x) for x in table[framework])
    series = _series(framework_version)
    if series and low <= series <= high:
        return ""
    name, setting_name = FRAMEWORK_NAMES[framework], f"{framework}_version"
    why = HOROVOD_BEYOND[framework] if series > high else f"older than Horovod {horovod_version} builds with"
    return (f"{setting}, which builds Horovod {horovod_version} (its last release, 2023) for {name}; it supports "
            f"{supported}, and this node's {name} is {framework_version} ({setting_name}): {why}. "
            f"Fix: set aiacc_fallback: native (the framework's own engine: torch.distributed or "
            f"tf.distribute.MultiWorkerMirroredStrategy) and aiacc_backend: auto, give an AIACC-Training source, or "
            f"pin {name} {low[0]}.{low[1]} to {high[0]}.{high[1]} with a pip lock that pins it "
            f"(python36_pip_lock_file)")


def _flag(value: Any) -> str:
    return "1" if value in (True, 1, "1", "true", "True", "yes") else "0"


def aiacc_env(backend: str, knobs: dict[str, Any]) -> list[list[str]]:
    """Environment variables for the chosen backend, in a stable order: [[name, value], ...]."""
    compression = str(knobs.get("compression", "none"))
    fusion = int(knobs.get("fusion_threshold_bytes", 134217728))
    env: list[list[str]] = [
        ["SCC_COMM_BACKEND", backend],
        ["SCC_TRAINER_BACKEND", TRAINER_BACKEND.get(backend, "torch")],
        ["SCC_GRAD_COMPRESSION", compression],
    ]
    if backend == "aiacc":
        env += [
            ["PERSEUS_ALLREDUCE_DTYPE", str(PERSEUS_DTYPE.get(compression, 1))],
            ["PERSEUS_ALLREDUCE_NANCHECK", _flag(knobs.get("nan_check"))],
            ["PERSEUS_ALLREDUCE_MODE", "1" if _flag(knobs.get("hierarchical_allreduce")) == "1" else "0"],
            ["PERSEUS_ALLREDUCE_STREAMS", str(int(knobs.get("streams", 6)))],
            ["PERSEUS_ALLREDUCE_FUSION", str(fusion)],
            ["PERSEUS_ALLREDUCE_DISABLE_STREAM_TUNING", _flag(knobs.get("disable_stream_tuning"))],
        ]
    elif backend == "horovod":
        env += [
            ["HOROVOD_FUSION_THRESHOLD", str(fusion)],
            ["HOROVOD_CYCLE_TIME", str(knobs.get("cycle_time_ms", 1))],
            ["HOROVOD_HIERARCHICAL_ALLREDUCE", _flag(knobs.get("hierarchical_allreduce"))],
        ]
    elif backend == "native":
        env += [["SCC_DDP_BUCKET_CAP_MB", str(max(1, fusion // 1048576))]]
    for name, value in sorted((knobs.get("extra") or {}).items()):
        if not _ENV_NAME.match(str(name)):
            raise ValueError(f"aiacc_extra_env: {name!r} is not a valid environment variable name")
        env.append([str(name), str(value)])
    return env


def horovod_check_build(text: str) -> dict[str, Any]:
    """Parse `horovodrun --check-build`: version and the [X]/[ ] lists of each section."""
    out: dict[str, Any] = {"version": "", "frameworks": {}, "controllers": {}, "operations": {}}
    sections = {"available frameworks": "frameworks", "available controllers": "controllers",
                "available tensor operations": "operations"}
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        version = re.match(r"^Horovod v?([0-9][^:\s]*):?$", stripped)
        if version:
            out["version"] = version.group(1)
            continue
        key = stripped.rstrip(":").lower()
        if key in sections:
            current = sections[key]
            continue
        item = re.match(r"^\[([ Xx])\]\s+(\S.*)$", stripped)
        if item and current:
            out[current][item.group(2).strip()] = item.group(1).lower() == "x"
    return out


_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


def aiacc_plan(node: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The preflight of the role. `settings`: the aiacc_* variables without the prefix (backend, fallback,
    framework, framework_version, horovod_version, wheel_url, wheel_dir, conda_archive, wheel_sha256, conda_sha256,
    package_version, gradient_compression, streams, fusion_threshold_bytes, cycle_time_ms, extra_env). Returns
    source, pre (the selection before the import is tried) and problems (one per rule broken, each naming the node
    and the fix). A missing horovod_version is not checked (horovod_support_error needs a release to look up)."""
    def text(key: str) -> str:
        value = settings.get(key)
        return "" if value is None else str(value)

    source = aiacc_source(text("wheel_url"), text("wheel_dir"), text("conda_archive"))
    pre = aiacc_select(text("backend"), text("fallback"), source, text("framework"))
    problems = []
    if pre["error"]:
        problems.append(f"{node}: {pre['error']}")
    if "horovod_version" in settings:
        horovod = horovod_support_error(text("backend"), text("fallback"), text("framework"),
                                        text("framework_version").strip(), text("horovod_version"))
        if horovod:
            problems.append(f"{node}: {horovod}")
    if source == "url" and not _SHA256.match(text("wheel_sha256")):
        problems.append(f"{node}: aiacc_wheel_url needs aiacc_wheel_sha256 (64 hex digits; `sha256sum FILE` gives "
                        "it), so the file is checked before it is installed")
    if source == "wheel_dir" and not (_SHA256.match(text("wheel_sha256")) and text("package_version")):
        problems.append(f"{node}: aiacc_wheel_dir needs aiacc_package_version and aiacc_wheel_sha256 (the wheel is "
                        "installed with --require-hashes) (64 hex digits; `sha256sum FILE` gives it), so the file "
                        "is checked before it is installed")
    if source == "conda" and not _SHA256.match(text("conda_sha256")):
        problems.append(f"{node}: aiacc_conda_archive needs aiacc_conda_sha256 (64 hex digits; `sha256sum FILE` "
                        "gives it), so the file is checked before it is installed")
    knob = aiacc_knob_error(text("backend"), text("fallback"), text("gradient_compression"))
    if knob:
        problems.append(f"{node}: {knob}")
    if _number(settings.get("streams"), int) < 1:
        problems.append(f"{node}: aiacc_streams must be at least 1 (got {text('streams')})")
    if _number(settings.get("fusion_threshold_bytes"), int) < 0:
        problems.append(f"{node}: aiacc_fusion_threshold_bytes must be >= 0 bytes")
    if _number(settings.get("cycle_time_ms"), float) <= 0:
        problems.append(f"{node}: aiacc_cycle_time_ms must be > 0 (milliseconds)")
    bad = [str(k) for k in (settings.get("extra_env") or {}) if not _ENV_NAME.match(str(k))]
    if bad:
        problems.append(f"{node}: aiacc_extra_env has names that are not environment variable names: "
                        + ", ".join(bad))
    return {"source": source, "pre": pre, "problems": problems}


def _number(value: Any, kind: Any) -> Any:
    try:
        return kind(value)
    except (TypeError, ValueError):
        return -1


def horovod_build_problems(text: str, node: str, framework: str, gpus: int) -> list[str]:
    """`horovodrun --check-build` must list the framework and the node's collectives (NCCL with GPUs, else gloo or
    MPI)."""
    build = horovod_check_build(text)
    name = FRAMEWORK_NAMES.get(framework, framework)
    ops = build["operations"]
    has_framework = bool(build["frameworks"].get(name))
    has_collective = bool(ops.get("NCCL")) if gpus > 0 else bool(ops.get("Gloo") or ops.get("MPI"))
    if has_framework and has_collective:
        return []
    missing = name if not has_framework else ("NCCL" if gpus > 0 else "gloo/MPI")
    return [f"{node}: Horovod {build['version']} was built without {missing} (`horovodrun --check-build`); uninstall "
            "it (pip uninstall horovod) and run the role again with the framework importable"
            + (" and NCCL headers installed (gpu_stack role)" if gpus > 0 else "")]


def backend_problems(node: str, backend: str, rc: Any, stdout_lines: list[str], stderr_lines: list[str],
                     python: str, gpus: int) -> tuple[dict[str, Any], list[str]]:
    """The probe of the chosen backend in the training interpreter: it must run, and the native backend needs NCCL
    (GPU nodes) or gloo/MPI in torch.distributed. Returns (what the probe printed, problems)."""
    if rc != 0:
        said = [line for line in stderr_lines if line]
        return {}, [f"{node}: backend {backend}: the check with {python} failed ({said[-1] if said else 'no output'}); "
                    "install the framework first (roles pytorch/tensorflow) and run the role again"]
    info = json.loads(stdout_lines[-1]) if stdout_lines else {}
    if backend == "native" and not (info.get("nccl") if gpus > 0 else (info.get("gloo") or info.get("mpi"))):
        return info, [f"{node}: backend {backend}: {info.get('framework')} has no "
                      f"{'NCCL' if gpus > 0 else 'gloo/MPI'} in torch.distributed; install an official framework "
                      "build"]
    return info, []
