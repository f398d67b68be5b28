#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0 (see galaxy.yml)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_facts
short_description: NVIDIA GPU, driver, CUDA toolkit and GPU library facts of a node
description:
  - Reads C(nvidia-smi --query-gpu=... --format=csv) (count, name, driver version, memory, ECC mode current and
    pending, aggregate uncorrected ECC errors, persistence mode, PCI bus ID, PCI device ID) and the CUDA version the
    driver supports from plain C(nvidia-smi).
  - Without a working driver it falls back to C(lspci -nn) (vendor 10de, class 0300/0302) so a node without driver
    still reports its GPUs and their architecture.
  - Maps each GPU to its architecture through the compatibility matrix (C(sccnlp/data/compat_matrix.yml)).
  - Optionally finds the CUDA toolkit (C(nvcc), C(version.json)) and loads the CUDA runtime, NCCL and cuDNN
    libraries with ctypes (C(cudaRuntimeGetVersion), C(ncclGetVersion), C(cudnnGetVersion); none needs a GPU) from
    the given directories, Python virtual environments (NVIDIA wheels), the CUDA home and the system library paths.
  - Read-only; supports check mode.
version_added: "0.1.0"
author: scc.nlp_training contributors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
options:
  matrix:
    description: The loaded compatibility matrix; without it C(arch) is empty.
    type: dict
  nvidia_smi:
    description: The nvidia-smi command.
    type: str
    default: nvidia-smi
  lspci:
    description: The lspci command.
    type: str
    default: lspci
  libraries:
    description: GPU libraries to find and load.
    type: list
    elements: str
    choices: [cudart, nccl, cudnn]
    default: []
  library_dirs:
    description: Directories searched first for the libraries.
    type: list
    elements: path
    default: []
  venvs:
    description: Python virtual environments whose C(site-packages/nvidia/*/lib) hold NVIDIA wheel libraries.
    type: list
    elements: path
    default: []
  cuda_home:
    description: CUDA toolkit root (C(bin/nvcc), C(lib64), C(version.json)).
    type: path
    default: /usr/local/cuda
  system_paths:
    description: Also search the dynamic linker cache and the standard library directories.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Read the GPU facts
  scc.nlp_training.gpu_facts:
    matrix: "{{ lookup('ansible.builtin.file', 'compat_matrix.yml') | from_yaml }}"
    libraries: [nccl, cudnn]
    venvs: [/opt/scc/venv]
"""

RETURN = r"""
ansible_facts:
  description: Facts added under C(scc_gpu).
  returned: always
  type: dict
  contains:
    scc_gpu:
      description: >-
        C(count), C(gpus) (C(index), C(name), C(pci_bus_id), C(pci_device_id), C(memory_total_mib),
        C(ecc_mode_current), C(ecc_mode_pending), C(ecc_uncorrected_aggregate), C(persistence_mode), C(arch),
        C(model)), C(driver), C(driver_flavour) (open, proprietary or empty), C(cuda_driver_version), C(arch)
        (the common architecture, C(mixed) or empty), C(model), C(source) (nvidia-smi, lspci or none),
        C(error), C(toolkit) (C(version), C(nvcc), C(home)) and C(libraries) (per library C(found), C(version),
        C(path), C(candidates)).
      type: dict
"""

import glob
import json
import os
import re
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.scc.nlp_training.plugins.module_utils import scc_compat

QUERY_FIELDS = (
    "index", "name", "driver_version", "memory.total", "ecc.mode.current", "ecc.mode.pending",
    "ecc.errors.uncorrected.aggregate.total", "persistence_mode", "pci.bus_id", "pci.device_id",
)
MINIMAL_FIELDS = ("index", "name", "driver_version", "memory.total", "pci.bus_id")
_NA = ("[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]", "")
_LSPCI_RE = re.compile(
    r"^(?P<bus>[0-9a-fA-F:.]+)\s+(?P<cls_name>[^\[]+?)\s*\[(?P<cls>03(?:00|02))\]:\s*NVIDIA Corporation\s+"
    r"(?P<desc>.*?)\s*\[10de:(?P<dev>[0-9a-fA-F]{4})\]")
_CUDA_RE = re.compile(r"CUDA (?:UMD )?Version:\s*([0-9][0-9.]*)")
_NVCC_RE = re.compile(r"release ([0-9.]+), V([0-9.]+)")
SONAMES = {
    "nccl": ("libnccl.so.2",),
    "cudnn": ("libcudnn.so.9", "libcudnn.so.8"),
    "cudart": ("libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"),
}
SYSTEM_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/local/lib", "/usr/lib")
# Runs in a separate interpreter per candidate so a broken library cannot take the module down.
_PROBE = r"""
import ctypes, json, sys
kind, path = sys.argv[1], sys.argv[2]
lib = ctypes.CDLL(path)
if kind == "cudnn":
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    print(json.dumps({"code": int(lib.cudnnGetVersion()), "rc": 0}))
else:
    value = ctypes.c_int(0)
    fn = lib.ncclGetVersion if kind == "nccl" else lib.cudaRuntimeGetVersion
    rc = fn(ctypes.byref(value))
    print(json.dumps({"code": int(value.value), "rc": int(rc)}))
"""


# ---------------------------------------------------------------------------------------------------------------
# Parsers (pure; tested on recorded outputs)


def _clean(value):
    value = (value or "").strip()
    return None if value in _NA else value


def _strip_unit(header):
    return re.sub(r"\s*\[[^\]]*\]$", "", header.strip())


def _int(value):
    value = _clean(value)
    if value is None:
        return None
    match = re.match(r"^(\d+)", value)
    return int(match.group(1)) if match else None


def parse_query_csv(text):
    """`nvidia-smi --query-gpu=... --format=csv` (with header) -> list of per-GPU dicts. Header-driven, so any
    field subset and order parses; values 'N/A'/'[N/A]' become None."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return []
    headers = [_strip_unit(h) for h in lines[0].split(",")]
    gpus = []
    for position, line in enumerate(lines[1:]):
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(headers):
            continue
        row = dict(zip(headers, cells))
        index = _int(row.get("index"))
        device_id = _clean(row.get("pci.device_id"))
        gpus.append({
            "index": position if index is None else index,
            "name": _clean(row.get("name")),
            "driver_version": _clean(row.get("driver_version")),
            "memory_total_mib": _int(row.get("memory.total")),
            "ecc_mode_current": _clean(row.get("ecc.mode.current")),
            "ecc_mode_pending": _clean(row.get("ecc.mode.pending")),
            "ecc_uncorrected_aggregate": _int(row.get("ecc.errors.uncorrected.aggregate.total")),
            "persistence_mode": _clean(row.get("persistence_mode")),
            "pci_bus_id": _clean(row.get("pci.bus_id")),
            "pci_device_id": scc_compat.normalise_pci_id(device_id) if device_id else None,
        })
    return gpus


def parse_cuda_version(text):
    """The 'CUDA Version: 13.0' of plain nvidia-smi output, or None."""
    match = _CUDA_RE.search(text or "")
    return match.group(1) if match else None


def parse_lspci(text):
    """`lspci -nn` -> NVIDIA display/3D controllers (class 0300/0302) as {pci_bus_id, pci_device_id, chip, name}."""
    gpus = []
    for line in (text or "").splitlines():
        match = _LSPCI_RE.match(line.strip())
        if not match:
            continue
        desc = match.group("desc")
        bracket = re.search(r"\[([^\]]+)\]\s*$", desc)
        gpus.append({
            "index": len(gpus),
            "pci_bus_id": match.group("bus"),
            "pci_device_id": match.group("dev").lower(),
            "chip": desc.split()[0] if desc.split() else "",
            "name": bracket.group(1) if bracket else desc,
        })
    return gpus


def parse_nvcc(text):
    match = _NVCC_RE.search(text or "")
    return match.group(2) if match else None


def decode_version(kind, code):
    """Integer version codes -> 'X.Y.Z': ncclGetVersion 22809 -> 2.28.9, cudnnGetVersion 91901 -> 9.19.1
    (8907 -> 8.9.7), cudaRuntimeGetVersion 12090 -> 12.9."""
    code = int(code)
    if kind == "cudart":
        return "%d.%d" % (code // 1000, (code % 1000) // 10)
    if code >= 10000:
        return "%d.%d.%d" % (code // 10000, (code % 10000) // 100, code % 100)
    return "%d.%d.%d" % (code // 1000, (code % 1000) // 100, code % 100)


def driver_flavour(proc_version_text):
    """/proc/driver/nvidia/version -> 'open' | 'proprietary' | ''."""
    if not proc_version_text:
        return ""
    return "open" if "Open Kernel Module" in proc_version_text else "proprietary"


def annotate(gpus, matrix):
    for gpu in gpus:
        entry = scc_compat.gpu_from_pci(matrix, gpu.get("pci_device_id") or "") if matrix else None
        gpu["model"] = (entry or {}).get("model") or gpu.get("name")
        gpu["arch"] = scc_compat.resolve_arch(matrix, gpu.get("pci_device_id") or "", gpu.get("name") or "",
                                              gpu.get("chip") or "") if matrix else ""
    return gpus


def summarise(gpus, source, driver=None, cuda_driver_version=None, error=None):
    arches = sorted(set(g.get("arch") or "" for g in gpus))
    models = sorted(set(g.get("model") or g.get("name") or "" for g in gpus))
    return {
        "count": len(gpus),
        "gpus": gpus,
        "driver": driver,
        "cuda_driver_version": cuda_driver_version,
        "arch": arches[0] if len(arches) == 1 else ("mixed" if arches else ""),
        "model": models[0] if len(models) == 1 else ", ".join(models),
        "source": source,
        "error": error,
    }


# ---------------------------------------------------------------------------------------------------------------
# Probes


def _run(module, argv):
    try:
        return module.run_command(argv)
    except (OSError, ValueError) as exc:  # pragma: no cover - run_command reports a missing binary as rc 2
        return 127, "", str(exc)


def gather_gpus(module, matrix):
    smi = module.get_bin_path(module.params["nvidia_smi"]) if "/" not in module.params["nvidia_smi"] \
        else module.params["nvidia_smi"]
    error = None
    if smi and os.path.exists(smi):
        for fields in (QUERY_FIELDS, MINIMAL_FIELDS):
            rc, out, err = _run(module, [smi, "--query-gpu=" + ",".join(fields), "--format=csv"])
            if rc == 0:
                gpus = annotate(parse_query_csv(out), matrix)
                rc2, plain, _err2 = _run(module, [smi])
                cuda = parse_cuda_version(plain) if rc2 == 0 else None
                driver = next((g["driver_version"] for g in gpus if g.get("driver_version")), None)
                return summarise(gpus, "nvidia-smi", driver, cuda), out
            error = (err or out).strip().splitlines()[-1] if (err or out).strip() else "nvidia-smi rc %d" % rc
            if "valid field" not in (err + out):
                break
    else:
        error = "nvidia-smi not found"
    lspci = module.get_bin_path(module.params["lspci"])
    if lspci:
        rc, out, _err = _run(module, [lspci, "-nn"])
        if rc == 0:
            gpus = annotate(parse_lspci(out), matrix)
            if gpus:
                return summarise(gpus, "lspci", error=error), out
    return summarise([], "none", error=error), ""


def gather_toolkit(module):
    home = module.params["cuda_home"]
    result = {"home": home, "version": None, "nvcc": None}
    nvcc = os.path.join(home, "bin", "nvcc")
    if os.path.exists(nvcc):
        rc, out, _err = _run(module, [nvcc, "--version"])
        if rc == 0:
            result["nvcc"] = parse_nvcc(out)
            result["version"] = result["nvcc"]
    version_json = os.path.join(home, "version.json")
    if not result["version"] and os.path.exists(version_json):
        try:
            with open(version_json) as handle:
                result["version"] = json.load(handle).get("cuda", {}).get("version")
        except (OSError, ValueError):
            pass
    return result


def _ldconfig_paths(module, soname):
    ldconfig = module.get_bin_path("ldconfig") or ("/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None)
    if not ldconfig:
        return []
    rc, out, _err = _run(module, [ldconfig, "-p"])
    if rc != 0:
        return []
    paths = []
    for line in out.splitlines():
        line = line.strip()
        if line.startswith(soname + " ") and "=>" in line:
            paths.append(line.split("=>", 1)[1].strip())
    return paths


def candidates_for(module, kind):
    found = []

    def add(path, origin):
        real = os.path.realpath(path)
        if os.path.isfile(real) and all(os.path.realpath(c["path"]) != real for c in found):
            found.append({"path": path, "origin": origin})

    sonames = SONAMES[kind]
    for directory in module.params["library_dirs"]:
        for soname in sonames:
            add(os.path.join(directory, soname), "library_dirs")
    for venv in module.params["venvs"]:
        for soname in sonames:
            pattern = os.path.join(venv, "lib", "python3*", "site-packages", "nvidia", "**", soname)
            for path in sorted(glob.glob(pattern, recursive=True)):
                add(path, "venv")
    home = module.params["cuda_home"]
    for sub in ("lib64", os.path.join("targets", "x86_64-linux", "lib"), os.path.join("targets", "sbsa-linux", "lib")):
        for soname in sonames:
            add(os.path.join(home, sub, soname), "cuda_home")
    if module.params["system_paths"]:
        for soname in sonames:
            for path in _ldconfig_paths(module, soname):
                add(path, "system")
            for directory in SYSTEM_DIRS:
                add(os.path.join(directory, soname), "system")
    return found


def version_from_file_name(path):
    """'/usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89' (the real file behind a soname) -> '11.8.89', else None."""
    match = re.search(r"\.so\.(\d+\.\d+(?:\.\d+)*)$", os.path.basename(os.path.realpath(path)))
    return match.group(1) if match else None


def probe_library(module, kind, path):
    rc, out, err = _run(module, [sys.executable, "-c", _PROBE, kind, path])
    if rc != 0:
        return None, (err or out).strip().splitlines()[-1:] or ["rc %d" % rc]
    try:
        data = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, ["unreadable probe output: %s" % out.strip()[:200]]
    if data.get("rc") != 0 or not data.get("code"):
        # CUDA 11's cudaRuntimeGetVersion needs a driver (error 35 without one); the versioned file name still says
        # which runtime is installed.
        fallback = version_from_file_name(path) if kind == "cudart" else None
        if fallback:
            return fallback, []
        return None, ["%s version call returned %s" % (kind, data.get("rc"))]
    return decode_version(kind, data["code"]), []


def gather_libraries(module):
    libraries = {}
    for kind in module.params["libraries"]:
        candidates = []
        for candidate in candidates_for(module, kind):
            version, errors = probe_library(module, kind, candidate["path"])
            candidate["version"] = version
            if errors:
                candidate["error"] = errors[0]
            candidates.append(candidate)
        usable = [c for c in candidates if c.get("version")]
        chosen = usable[0] if usable else {}
        libraries[kind] = {
            "found": bool(usable),
            "version": chosen.get("version"),
            "path": chosen.get("path"),
            "origin": chosen.get("origin"),
            "candidates": candidates,
        }
    return libraries


def main():
    module = AnsibleModule(
        argument_spec=dict(
            matrix=dict(type="dict"),
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            lspci=dict(type="str", default="lspci"),
            libraries=dict(type="list", elements="str", choices=["cudart", "nccl", "cudnn"], default=[]),
            library_dirs=dict(type="list", elements="path", default=[]),
            venvs=dict(type="list", elements="path", default=[]),
            cuda_home=dict(type="path", default="/usr/local/cuda"),
            system_paths=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    matrix = module.params["matrix"] or {}
    facts, _raw = gather_gpus(module, matrix)
    try:
        with open("/proc/driver/nvidia/version") as handle:
            facts["driver_flavour"] = driver_flavour(handle.read())
    except OSError:
        facts["driver_flavour"] = ""
    facts["toolkit"] = gather_toolkit(module)
    facts["libraries"] = gather_libraries(module)
    module.exit_json(changed=False, ansible_facts={"scc_gpu": facts})


if __name__ == "__main__":
    main()
