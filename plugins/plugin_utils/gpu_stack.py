# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The checks of the GPU stack roles (gpu_driver, cuda, nccl, cudnn and their shared role _nvidia_common).

Pure functions over the role settings and what the node reported (the gpu_facts module's scc_gpu facts). Each
returns the problems as messages naming the node, the setting or the finding, and the fix; the roles fail on a
non-empty list. The filters in plugins/filter/gpu_stack.py are thin wrappers."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.scc.nlp_training.plugins.module_utils.scc_compat import version_matches

_SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")
_NUMERIC = re.compile(r"^[0-9]+(\.[0-9]+)*$")
_DRIVER_VERSION = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)?$")
_BRANCH = re.compile(r"^[0-9]{3}$")
# The archive method of each library role.
ARCHIVES = {"cuda": "runfile", "nccl": "tarball", "cudnn": "tarball"}
COMPONENTS = ("gpu_driver", "cuda", "nccl", "cudnn")
PACKAGE_SOURCES = ("nvidia", "distribution")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def component_plan(node: str, component: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """Whether the stack role applies to this node (a GPU, or a method that needs none), why not, and the problems
    of its settings. `settings`: the role's variables without the role prefix (method, version, gpu_count, ...)."""
    method = _text(settings.get("method"))
    gpus = int(settings.get("count" if component == "gpu_driver" else "gpu_count") or 0)
    gpu_only = _flag(settings.get("gpu_only", True))
    if component == "gpu_driver":
        active = gpus > 0 or (method != "adopt" and not gpu_only)
        skip = "%s: no NVIDIA GPU, gpu_driver skipped" % node
        problems = driver_settings_problems(node, settings)
    else:
        active = method == "pip" or not gpu_only or gpus > 0
        skip = "%s: no NVIDIA GPU, %s skipped (%s_method %s)" % (node, component, component, method)
        problems = library_settings_problems(node, component, settings)
    return {"settings": dict(settings), "active": active, "skip": "" if active else skip, "problems": problems}


def _flag(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes", "on")


def library_settings_problems(node: str, component: str, settings: Mapping[str, Any]) -> list[str]:
    """The settings of cuda, nccl or cudnn (without the role prefix): the method, the version pin, the archive URL
    and checksum, the package source."""
    archive = ARCHIVES[component]
    url_key, checksum_key = "%s_%s_url" % (component, archive), "%s_%s_checksum" % (component, archive)
    method = _text(settings.get("method"))
    version = _text(settings.get("version"))
    methods = ("adopt", "package", archive, "pip")
    parts = version.split(".")
    wrong = method not in methods
    if component == "cuda":
        wrong = wrong or not _NUMERIC.match(version) or (method not in ("adopt", "package") and len(parts) < 3)
    else:
        wrong = wrong or not version or (method != "adopt" and len(parts) < 3)
    archive_given = (bool(_text(settings.get(archive + "_url")))
                     and bool(_SHA256.match(_text(settings.get(archive + "_checksum")))))
    wrong = wrong or (method == archive and not archive_given)
    source = _text(settings.get("package_source"))
    bad_source = method == "package" and source not in PACKAGE_SOURCES
    out = []
    if wrong:
        if component == "cuda":
            out.append("%s: CUDA settings are incomplete: cuda_method %s (adopt, package, runfile or pip) with "
                       "cuda_version '%s'%s%s; set them in the inventory"
                       % (node, method, version, " (pin it exactly: X.Y.Z)" if method in ("runfile", "pip") else "",
                          ", cuda_runfile_url and cuda_runfile_checksum 'sha256:<64 hex>'"
                          if method == "runfile" else ""))
        else:
            out.append("%s: %s settings are incomplete: method %s (adopt, package, tarball or pip) needs %s_version "
                       "pinned exactly (X.Y.Z, got '%s')%s; set them in the inventory"
                       % (node, component, method, component, version,
                          " and %s plus %s 'sha256:<64 hex>'" % (url_key, checksum_key)
                          if method == "tarball" else ""))
    if bad_source:
        out.append("%s: %s_package_source is '%s' (nvidia or distribution); set it in the inventory"
                   % (node, component, source))
    return out


def driver_settings_problems(node: str, settings: Mapping[str, Any]) -> list[str]:
    """The settings of gpu_driver (without the role prefix), one message naming every wrong setting, its value and
    what it takes."""
    method = _text(settings.get("method"))
    flavour = _text(settings.get("flavour"))
    persistence = _text(settings.get("persistence"))
    branch = _text(settings.get("branch"))
    version = _text(settings.get("version"))
    found = []
    if method not in ("adopt", "package", "runfile"):
        found.append("gpu_driver_method is '%s' (adopt, package or runfile)" % method)
    if flavour not in ("open", "proprietary", "auto"):
        found.append("gpu_driver_flavour is '%s' (open, proprietary or auto)" % flavour)
    if persistence not in ("enabled", "disabled", "any"):
        found.append("gpu_driver_persistence is '%s' (enabled, disabled or any)" % persistence)
    if not _BRANCH.match(branch):
        found.append("gpu_driver_branch is '%s' (3 digits, e.g. 580)" % branch)
    if version and not _DRIVER_VERSION.match(version):
        found.append("gpu_driver_version is '%s', not a driver version (e.g. %s.95.05)" % (version, branch))
    elif not version and method != "adopt":
        found.append("gpu_driver_version is empty but gpu_driver_method %s installs: set the exact version (e.g. "
                     "%s.95.05)" % (method, branch))
    elif version and not version.startswith(branch + "."):
        found.append("gpu_driver_version %s is not on gpu_driver_branch %s (set gpu_driver_branch %s or a %s.x "
                     "version)" % (version, branch, version.split(".", maxsplit=1)[0], branch))
    if method == "runfile" and not (_text(settings.get("runfile_url"))
                                    and _SHA256.match(_text(settings.get("runfile_checksum")))):
        found.append("gpu_driver_method runfile needs gpu_driver_runfile_url and gpu_driver_runfile_checksum "
                     "'sha256:<64 hex>'")
    return ["%s: %s; fix it in the inventory" % (node, "; ".join(found))] if found else []


def library_problems(node: str, component: str, lib: Mapping[str, Any], method: str, version: str, venv: str,
                     soname: str, search: Sequence[str]) -> list[str]:
    """The library found by gpu_facts (`lib`: found, path, version, candidates) must be the pinned one (its first
    three parts), and from the venv for the pip method."""
    found = bool(lib.get("found"))
    have = _text(lib.get("version"))
    path = _text(lib.get("path"))
    pin = ".".join(_text(version).split(".")[:3])
    if found and version_matches(pin, have) and (method != "pip" or path.startswith(venv + "/")):
        return []
    head = "%s: %s %s (%s_method %s) is not what the node has: " % (node, component, version, component, method)
    if not found:
        tried = "".join(" (%s: %s)" % (c.get("path"), c.get("error") or "?") for c in lib.get("candidates") or [])
        return [head + "no loadable %s was found in %s or the system library paths%s; install it or point "
                "%s_library_dirs / %s_adopt_venvs at it" % (soname, ", ".join(search), tried, component, component)]
    return [head + "the library at %s reports %s; set %s_version %s to adopt it, or install %s"
            % (path, have, component, have, version)]


def cuda_problems(node: str, settings: Mapping[str, Any], toolkit: Mapping[str, Any], runtime: Mapping[str, Any],
                  driver_cuda: str) -> list[str]:
    """CUDA found on the node (the toolkit's nvcc/version.json, else the runtime library) must match cuda_version's
    major.minor, come from the venv for the pip method, and be supported by the driver. `settings`: the cuda role's
    variables without the prefix (version, method, home, venv, library_dirs, adopt_venvs)."""
    version = _text(settings.get("version"))
    method = _text(settings.get("method"))
    home = _text(settings.get("home"))
    found = (_text(toolkit.get("version")) or _text(runtime.get("version"))).strip()
    major_minor = ".".join(version.split(".")[:2])
    path = _text(runtime.get("path"))
    out = []
    if not found or not version_matches(major_minor, found) or (method == "pip" and not path.startswith(
            _text(settings.get("venv")) + "/")):
        head = "%s: CUDA %s (cuda_method %s) is not what the node has: " % (node, version, method)
        if not found:
            dirs = list(settings.get("library_dirs") or []) + list(settings.get("adopt_venvs") or [])
            out.append(head + "no nvcc/version.json under %s and no loadable libcudart in %s or the system library "
                       "paths; install CUDA or set cuda_home / cuda_adopt_venvs" % (home, ", ".join(dirs)))
        else:
            out.append(head + "found CUDA %s (%s); set cuda_version %s to adopt it, or install %s"
                       % (found, "nvcc" if toolkit.get("version") else path, ".".join(found.split(".")[:2]),
                          version))
    driver = _text(driver_cuda)
    if driver and version and _major(driver) < _major(version):
        out.append("%s: the driver supports CUDA %s but cuda_version is %s; upgrade the driver (gpu_driver_branch) or "
                   "use an older cuda_version" % (node, driver, version))
    return out


def _major(version: str) -> int:
    head = version.split(".", maxsplit=1)[0]
    return int(head) if head.isdigit() else 0


def driver_problems(node: str, found: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """The driver gpu_facts found (`found`: source, count, driver, driver_flavour, gpus, error) against the plan:
    nvidia-smi works and sees gpu_count GPUs on the pinned driver, the module flavour and the persistence mode.
    `settings`: the gpu_driver role's variables without the prefix (count, version, branch, flavour, persistence)."""
    count = int(settings.get("count") or 0)
    version = _text(settings.get("version"))
    branch = _text(settings.get("branch"))
    driver = _text(found.get("driver"))
    out = []
    if found.get("source") != "nvidia-smi":
        out.append("%s: nvidia-smi does not work (%s; %s GPU(s) seen by %s): the driver is absent or not loaded; "
                   "install it (gpu_driver_method package or runfile) or reboot after an install"
                   % (node, found.get("error") or "no driver", found.get("count"), found.get("source")))
    elif found.get("count") != count:
        out.append("%s: nvidia-smi sees %s GPU(s), the inventory's gpu_count is %d: a GPU is missing (check "
                   "nvidia-smi -L and dmesg for Xid errors) or gpu_count is wrong" % (node, found.get("count"), count))
    elif not version_matches(version or branch, driver):
        out.append("%s: the driver is %s, the plan wants %s; set gpu_driver_branch %s to adopt it, or install the "
                   "pinned driver" % (node, driver, version or "branch " + branch, driver.split(".", maxsplit=1)[0]))
    flavour = _text(settings.get("flavour"))
    if flavour != "auto" and found.get("driver_flavour") != flavour:
        out.append("%s: the loaded NVIDIA kernel module is %s, the plan wants %s; set gpu_driver_flavour %s or "
                   "reinstall" % (node, found.get("driver_flavour"), flavour, found.get("driver_flavour")))
    persistence = _text(settings.get("persistence"))
    modes = [_text(g.get("persistence_mode")) for g in found.get("gpus") or []]
    if persistence != "any" and sorted(set(modes)) != [persistence.capitalize()]:
        out.append("%s: persistence mode is %s but gpu_driver_persistence is %s; enable nvidia-persistenced (or set "
                   "gpu_driver_persistence: any)" % (node, ", ".join(modes), persistence))
    return out
