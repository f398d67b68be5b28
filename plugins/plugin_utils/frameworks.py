# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The checks of the framework roles (pytorch, tensorflow): their settings against the compatibility table, the
PyTorch to adopt, and what the training interpreter reported (the probes print one JSON line). Pure functions; the
filters in plugins/filter/frameworks.py are thin wrappers; the roles fail on a non-empty problem list."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

_VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?==[A-Za-z0-9.+!_-]+$")
_EXTRAS_AND_PIN = re.compile(r"(\[.*\])?==.*$")


def series(version: str) -> str:
    """'2.13.0' -> '2.13'."""
    return ".".join(str(version).split(".")[:2])


def requirement_name(requirement: str) -> str:
    """'transformers[torch]==4.57.1' -> 'transformers' (lower case, as the probe reports modules)."""
    return _EXTRAS_AND_PIN.sub("", str(requirement)).lower()


def pytorch_settings_problems(node: str, version: str, requirements: Sequence[str],
                              compat: Mapping[str, Any]) -> list[str]:
    """pytorch_version must be an exact release of a series in the compatibility table, every requirement pinned."""
    if not _VERSION.match(str(version)):
        return ["%s: pytorch_version '%s' is not an exact release; pin it as X.Y.Z (e.g. '2.13.0')" % (node, version)]
    if series(version) not in compat:
        return ["%s: pytorch_version %s is not in the compatibility table (known series %s); choose one of them or "
                "add the series to roles/pytorch/vars/main.yml" % (node, version, ", ".join(compat))]
    unpinned = [r for r in requirements if not _REQUIREMENT.match(str(r))]
    if unpinned:
        return ["%s: pytorch_requirements must pin every package as name==version; not pinned: %s"
                % (node, ", ".join(unpinned))]
    return []


def pytorch_adopt_problems(node: str, python: str, exists: bool, probe: Mapping[str, Any],
                           adopt_version: str) -> list[str]:
    """The adopt method needs an interpreter that imports torch, at pytorch_adopt_version when one is set.
    `probe`: the registered `python -c 'import torch; print(torch.__version__)'` (rc, stdout, stderr_lines)."""
    head = "%s: pytorch_method is adopt, but " % node
    if not exists:
        return [head + "%s does not exist; set pytorch_python to the interpreter that has torch (e.g. "
                "/opt/torch/.venv/bin/python3)" % python]
    if probe.get("rc") != 0:
        said = list(probe.get("stderr_lines") or ["?"])
        return [head + "`%s -c 'import torch'` failed (%s); point pytorch_python at an interpreter that has torch, "
                "or use pytorch_method: install" % (python, said[-1] if said else "?")]
    found = str(probe.get("stdout") or "").strip()
    if adopt_version and found != adopt_version:
        return [head + "it has torch %s, not pytorch_adopt_version %s; install that version there or clear "
                "pytorch_adopt_version" % (found, adopt_version)]
    return []


def pytorch_problems(node: str, info: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """What the torch probe reported against the plan. `settings`: python, method, version, requirements, gpus,
    verify_collective. Import, pinned versions (install method), GPUs seen, the collective backend."""
    gpus = int(settings.get("gpus") or 0)
    if "import_error" in info:
        python, error = settings.get("python"), info["import_error"]
        return ["%s: `%s -c 'import torch'` failed (%s); run the role with pytorch_method: install, or point "
                "pytorch_python at the interpreter that has torch" % (node, python, error)]
    out = []
    requirements = list(settings.get("requirements") or [])
    modules = dict(info.get("modules") or {})
    if settings.get("method") == "install":
        wrong = [r for r in requirements if modules.get(requirement_name(r), "") != str(r).split("==", 1)[-1]]
        local = str(info.get("version") or "").split("+", 1)[0]
        if local != str(settings.get("version")) or wrong:
            out.append("%s: expected torch %s and %s, found torch %s%s; run the role again (tag pytorch_install) and "
                       "check the pip index settings"
                       % (node, settings.get("version"), ", ".join(requirements), info.get("version"),
                          "".join(", %s %s" % (k, v) for k, v in modules.items())))
    if bool(info.get("cuda_available")) != (gpus > 0) or info.get("device_count") != gpus:
        out.append("%s: torch %s (CUDA build '%s') reports cuda available %s with %s device(s), but gpu_count is %d; "
                   "%s" % (node, info.get("version"), info.get("cuda_build"), info.get("cuda_available"),
                           info.get("device_count"), gpus,
                           "install the CUDA build (pytorch_variant: cuda) and check the driver (nvidia-smi)"
                           if gpus > 0 else "fix gpu_count in the inventory"))
    backend_ok = bool(info.get("nccl_version")) if gpus > 0 else bool(info.get("gloo"))
    allowed = ("ok",) if settings.get("verify_collective") else ("ok", "skipped")
    if not backend_ok or info.get("allreduce") not in allowed:
        out.append("%s: torch.distributed backend %s: %s, one-process all_reduce %s; install a torch build with %s "
                   "(the official wheels have it)"
                   % (node, info.get("allreduce_backend"),
                      "NCCL version " + (info.get("nccl_version") or "missing") if gpus > 0
                      else "gloo available %s" % info.get("gloo"),
                      info.get("allreduce"), "NCCL" if gpus > 0 else "gloo"))
    return out


def tensorflow_problems(node: str, probe: Mapping[str, Any], venv: str, version: str, gpus: int) -> list[str]:
    """`import tensorflow` in the venv works, at the pinned version, sees gpu_count GPUs and adds up (sum 12).
    `probe`: the registered probe (rc, stdout_lines with one JSON line last, stderr_lines)."""
    if probe.get("rc") != 0:
        said = list(probe.get("stderr_lines") or ["?"])
        return ["%s: `import tensorflow` in %s failed (%s); run the role again (tag tensorflow_install)"
                % (node, venv, said[-1] if said else "?")]
    lines = list(probe.get("stdout_lines") or ["{}"])
    info = json.loads(lines[-1])
    if info.get("version") == version and info.get("gpus") == int(gpus) and info.get("sum") == 12.0:
        return []
    return ["%s: TensorFlow %s (pinned %s) sees %s GPU(s), gpu_count is %s; %s"
            % (node, info.get("version"), version, info.get("gpus"), gpus,
               "check the driver (nvidia-smi) and that the build is tensorflow[and-cuda]" if int(gpus) > 0
               else "fix gpu_count")]
