# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0 (see galaxy.yml)
"""The GPU stack compatibility rules over the matrix in sccnlp/data/compat_matrix.yml. Pure functions, no Ansible,
no YAML: callers pass the loaded matrix (a dict). Used by the compat filters (controller), the gpu_facts module
(node) and sccnlp.compat (CLI, tests), so every one of them applies the same rules to the same data."""

from __future__ import absolute_import, division, print_function

import re

__metaclass__ = type

COMPONENTS = ("gpu_driver", "cuda", "nccl", "cudnn")
METHODS = {
    "gpu_driver": ("adopt", "package", "runfile"),
    "cuda": ("adopt", "package", "runfile", "pip"),
    "nccl": ("adopt", "package", "tarball", "pip"),
    "cudnn": ("adopt", "package", "tarball", "pip"),
}
_HEX_ID = re.compile(r"^(?:0x)?(?:10de:)?([0-9a-f]{4})(?:10de)?$")


# ---------------------------------------------------------------------------------------------------------------
# Versions


def version_tuple(text):
    """'580.65.06' -> (580, 65, 6); '12.x' -> (12,); '' or None -> ()."""
    parts = []
    for piece in str(text or "").strip().split("."):
        digits = re.match(r"^\d+", piece)
        if not digits:
            break
        parts.append(int(digits.group(0)))
    return tuple(parts)


def version_matches(pin, actual):
    """A pin matches a version with the same leading parts: '2.28' matches '2.28.9', '12' matches '12.9'."""
    want, have = version_tuple(pin), version_tuple(actual)
    return bool(want) and have[: len(want)] == want


def version_at_least(actual, floor):
    have, want = version_tuple(actual), version_tuple(floor)
    width = max(len(have), len(want))
    return have + (0,) * (width - len(have)) >= want + (0,) * (width - len(want))


def major(text):
    parts = version_tuple(text)
    return str(parts[0]) if parts else ""


# ---------------------------------------------------------------------------------------------------------------
# GPU identity


def normalise_pci_id(device_id):
    """'0x233510DE', '10de:2335', '2335' -> '2335'; anything else -> ''."""
    match = _HEX_ID.match(str(device_id or "").strip().lower())
    return match.group(1) if match else ""


def gpu_from_pci(matrix, device_id):
    """The matrix entry ({model, arch}) for a PCI device ID, or None."""
    entry = (matrix.get("pci_devices") or {}).get(normalise_pci_id(device_id))
    return dict(entry) if entry else None


def arch_from_chip(matrix, chip):
    """'GV100GL' -> 'volta' (two-letter chip family prefix), '' when unknown."""
    prefix = str(chip or "").strip().upper()[:2]
    return (matrix.get("chips") or {}).get(prefix, "")


def arch_from_model(matrix, name):
    """'Tesla V100-SXM2-16GB' -> 'volta' through the model_names needles, '' when unknown."""
    upper = str(name or "").upper()
    for rule in matrix.get("model_names") or []:
        if str(rule["needle"]).upper() in upper:
            return rule["arch"]
    return ""


def arch_info(matrix, arch):
    return (matrix.get("architectures") or {}).get(arch)


def resolve_arch(matrix, pci_device_id="", model="", chip=""):
    """Architecture from the strongest evidence: PCI ID, then chip code name, then model name."""
    entry = gpu_from_pci(matrix, pci_device_id) if pci_device_id else None
    if entry:
        return entry["arch"]
    return arch_from_chip(matrix, chip) or arch_from_model(matrix, model)


# ---------------------------------------------------------------------------------------------------------------
# The plan check


def _label(arch, model, matrix=None):
    if matrix is not None and arch_from_model(matrix, model) != arch:
        return arch
    short = str(model or "").replace("Tesla ", "").replace("NVIDIA ", "").split("-", maxsplit=1)[0]
    short = short.split(" ", maxsplit=1)[0]
    return "%s (%s)" % (arch, short) if short else arch


def _os_methods(matrix, distribution, version):
    table = matrix.get("operating_systems") or {}
    default = (table.get("default") or {}).get("methods", ["adopt", "pip"])
    versions = table.get(distribution)
    if not versions:
        return default, False
    ver = str(version or "")
    entry = versions.get(ver) or versions.get(major(ver))
    return (entry or {}).get("methods", default), bool(entry)


def check_plan(matrix, plan):
    """Check one node's plan. Returns {'problems': [...], 'notes': [...], 'arch': ..., 'skip': bool}.

    plan keys: node, gpu_count, gpu_arch, gpu_model, require_gpu, detected ({count, arch, model, pci_device_id,
    driver} from gpu_facts, optional), distribution, distribution_version, and per component (gpu_driver, cuda,
    nccl, cudnn) a dict {method, version}; gpu_driver also has branch and flavour. Every problem names the node,
    the component, the rule and the fix."""
    node = plan.get("node", "node")
    problems, notes = [], []
    detected = plan.get("detected") or {}
    declared_arch = str(plan.get("gpu_arch") or "").strip().lower()
    model = plan.get("gpu_model") or detected.get("model") or ""
    detected_arch = detected.get("arch") or ""
    count = int(plan.get("gpu_count") or 0)
    if detected.get("source") in ("nvidia-smi", "lspci"):
        count = max(count, int(detected.get("count") or 0))
    arch = declared_arch if declared_arch not in ("", "none") else detected_arch
    if not arch and model:
        arch = arch_from_model(matrix, model)

    if declared_arch not in ("", "none") and detected_arch and detected_arch != declared_arch:
        problems.append(
            "%s: gpu_arch %s does not match the GPUs found on the node (%s, %s); fix gpu_arch in the inventory"
            % (node, declared_arch, detected_arch,
               detected.get("model") or "PCI " + str(detected.get("pci_device_id"))))

    pip_only = all((plan.get(c) or {}).get("method") == "pip" for c in ("cuda", "nccl", "cudnn"))
    if count == 0 and not arch:
        if plan.get("require_gpu"):
            problems.append("%s: no NVIDIA GPU (gpu_count 0, none found on the node) but gpu_stack_require_gpu is "
                            "true; fix gpu_count/gpu_arch in the inventory or set gpu_stack_require_gpu: false" % node)
        else:
            notes.append("%s: no NVIDIA GPU, GPU stack skipped%s"
                         % (node, " (pip components still installed)" if pip_only else ""))
        _check_versions(matrix, plan, node, None, problems)
        _check_methods(matrix, plan, node, problems, gpu=False)
        return {"problems": problems, "notes": notes, "arch": "none", "skip": True}

    info = arch_info(matrix, arch)
    if info is None:
        known = ", ".join(sorted(matrix.get("architectures") or {}))
        problems.append("%s: gpu_arch %r is not in the compatibility matrix (known: %s); set gpu_arch in the "
                        "inventory or add it to sccnlp/data/compat_matrix.yml" % (node, arch or "", known))
        return {"problems": problems, "notes": notes, "arch": arch, "skip": False}

    label = _label(arch, model, matrix)
    drv = plan.get("gpu_driver") or {}
    flavour = drv.get("flavour") or "auto"
    if flavour != "auto" and flavour not in info["kernel_module_flavours"]:
        problems.append(
            "%s: gpu_driver flavour %s does not support gpu_arch %s: its GPUs need the %s kernel module "
            "(the open module supports Turing and newer); use gpu_driver_flavour %s"
            % (node, flavour, label, "/".join(info["kernel_module_flavours"]), info["recommended_flavour"]))

    driver_version = drv.get("version") or ""
    if not driver_version and drv.get("method") == "adopt":
        driver_version = detected.get("driver") or ""
    branch = str(drv.get("branch") or major(driver_version) or "")
    if driver_version and branch and major(driver_version) != branch:
        problems.append("%s: gpu_driver version %s is not on gpu_driver_branch %s; make them agree"
                        % (node, driver_version, branch))
    bounds = info.get("driver_branches") or {}
    if branch:
        if bounds.get("min") and int(branch) < int(bounds["min"]):
            problems.append("%s: gpu_driver branch %s does not support gpu_arch %s: it needs branch %s or newer; "
                            "use gpu_driver_branch %s or newer"
                            % (node, branch, label, bounds["min"], bounds["min"]))
        if bounds.get("max") and int(branch) > int(bounds["max"]):
            problems.append("%s: gpu_driver branch %s does not support gpu_arch %s: R%s is the last branch for it; "
                            "use gpu_driver_branch %s" % (node, branch, label, bounds["max"], bounds["max"]))

    _check_versions(matrix, plan, node, arch, problems, label=label, driver_version=driver_version, branch=branch)
    _check_methods(matrix, plan, node, problems, gpu=True)
    _check_distribution_packages(matrix, plan, node, problems)
    return {"problems": problems, "notes": notes, "arch": arch, "skip": False}


def _check_versions(matrix, plan, node, arch, problems, label="", driver_version="", branch=""):
    cuda = plan.get("cuda") or {}
    cuda_version = str(cuda.get("version") or "")
    cuda_major = major(cuda_version)
    majors = (matrix.get("cuda") or {}).get("majors") or {}
    if cuda_version:
        entry = majors.get(cuda_major)
        if entry is None:
            problems.append("%s: cuda %s is not in the compatibility matrix (known majors: %s); use a listed "
                            "cuda_version or extend sccnlp/data/compat_matrix.yml"
                            % (node, cuda_version, ", ".join(sorted(majors))))
        else:
            if arch:
                info = arch_info(matrix, arch) or {}
                if arch not in entry.get("architectures", []):
                    why = (entry.get("dropped") or {}).get(arch, "CUDA %s does not build for %s" % (cuda_major, arch))
                    problems.append("%s: cuda %s does not support gpu_arch %s: %s; %s"
                                    % (node, cuda_version, label, why, entry.get("fix", "choose another cuda_version")))
                elif (info.get("cuda") or {}).get("min") and not version_at_least(cuda_version, info["cuda"]["min"]):
                    problems.append("%s: cuda %s does not support gpu_arch %s: it needs CUDA %s or newer; use "
                                    "cuda_version %s or newer"
                                    % (node, cuda_version, label, info["cuda"]["min"], info["cuda"]["min"]))
                floor = entry.get("min_driver")
                if floor and driver_version and not version_at_least(driver_version, floor):
                    problems.append("%s: cuda %s needs driver >= %s, gpu_driver is %s; use gpu_driver_branch %s or "
                                    "a cuda_version for the driver"
                                    % (node, cuda_version, floor, driver_version, major(floor)))
                elif floor and branch and not driver_version and int(branch) < int(major(floor)):
                    problems.append("%s: cuda %s needs driver >= %s, gpu_driver_branch is %s; use gpu_driver_branch "
                                    "%s or a cuda_version for the driver"
                                    % (node, cuda_version, floor, branch, major(floor)))
    for lib in ("nccl", "cudnn"):
        spec = plan.get(lib) or {}
        lib_version = str(spec.get("version") or "")
        if not lib_version or not cuda_major:
            continue
        table = ((matrix.get(lib) or {}).get("majors") or {}).get(major(lib_version))
        if table is None:
            problems.append("%s: %s %s is not in the compatibility matrix; use a listed %s_version or extend "
                            "sccnlp/data/compat_matrix.yml" % (node, lib, lib_version, lib))
            continue
        if cuda_major not in table.get("cuda_majors", []):
            problems.append("%s: %s %s is not built for cuda %s (builds exist for CUDA %s); use a %s_version for "
                            "CUDA %s or another cuda_version" % (node, lib, lib_version, cuda_version,
                                                                 ", ".join(table.get("cuda_majors", [])), lib,
                                                                 cuda_major))
            continue
        first = (table.get("first_for_cuda") or {}).get(cuda_major)
        if first and not version_at_least(lib_version, first):
            problems.append("%s: %s %s is not built for cuda %s: the first %s for CUDA %s is %s; use %s_version %s "
                            "or newer" % (node, lib, lib_version, cuda_version, lib, cuda_major, first, lib, first))
        last = (table.get("last_for_cuda") or {}).get(cuda_major)
        if last and version_tuple(lib_version)[:3] > version_tuple(last)[:3]:
            problems.append("%s: %s %s is not built for cuda %s: the last %s for CUDA %s is %s; use %s_version %s "
                            "or older" % (node, lib, lib_version, cuda_version, lib, cuda_major, last, lib, last))


def _check_methods(matrix, plan, node, problems, gpu):
    distribution = plan.get("distribution") or ""
    dist_version = plan.get("distribution_version") or ""
    allowed, _known = _os_methods(matrix, distribution, dist_version)
    for component in COMPONENTS:
        spec = plan.get(component) or {}
        method = spec.get("method")
        if not method:
            continue
        if method not in METHODS[component]:
            problems.append("%s: %s method %s is not one of %s; set %s_method to one of them"
                            % (node, component, method, ", ".join(METHODS[component]), component))
            continue
        if not gpu and method != "pip":
            continue
        if distribution and method not in allowed:
            problems.append("%s: %s method %s is not supported on %s %s (supported there: %s); use one of them "
                            "or add the OS to sccnlp/data/compat_matrix.yml" % (node, component, method, distribution,
                                                                                dist_version, ", ".join(allowed)))
        if method not in ("adopt",) and not str(spec.get("version") or "") and not (
                component == "gpu_driver" and spec.get("branch")):
            problems.append("%s: %s method %s installs, so it needs a pinned version; set %s_version"
                            % (node, component, method, component))


def _either_matches(a, b):
    return version_matches(a, b) or version_matches(b, a)


def _check_distribution_packages(matrix, plan, node, problems):
    """A component installed from the distribution's archive must ask for the version that archive carries."""
    versions = (matrix.get("distribution_packages") or {}).get(plan.get("distribution") or "") or {}
    dist_version = str(plan.get("distribution_version") or "")
    carried = versions.get(dist_version) or versions.get(major(dist_version)) or {}
    for component in ("gpu_driver", "cuda"):
        spec = plan.get(component) or {}
        have = carried.get(component)
        if spec.get("method") != "package" or spec.get("source") != "distribution" or not have:
            continue
        want = str(spec.get("version") or "")
        if component == "gpu_driver":
            branch = str(spec.get("branch") or "")
            if branch != have["branch"] or (want and not _either_matches(want, have["version"])):
                problems.append("%s: gpu_driver from the %s %s archive (%s) is %s, the plan asks for branch %s%s; set "
                                "gpu_driver_branch %s and gpu_driver_version %s, or gpu_driver_package_source nvidia"
                                % (node, plan.get("distribution"), dist_version, carried.get("components", "main"),
                                   have["version"], branch, (" version " + want) if want else "", have["branch"],
                                   have["version"]))
        elif want and not _either_matches(want, have["version"]):
            problems.append("%s: cuda from the %s %s archive (%s) is %s, the plan asks for %s; set cuda_version %s, "
                            "or cuda_package_source nvidia" % (node, plan.get("distribution"), dist_version,
                                                               carried.get("components", "main"), have["version"],
                                                               want, have["version"]))


def check_kernels(kernels):
    """{node: kernel release} -> problems naming each node whose kernel differs from the majority."""
    counts = {}
    for release in kernels.values():
        counts[release] = counts.get(release, 0) + 1
    if len(counts) <= 1:
        return []
    common = max(sorted(counts), key=lambda r: counts[r])
    return ["%s: kernel %s differs from the other nodes' %s; all nodes must run one kernel before the driver is "
            "built (install and boot %s on it, or hold the others)" % (node, release, common, common)
            for node, release in sorted(kernels.items()) if release != common]


def package_repo(matrix, distribution, version):
    """NVIDIA's CUDA repository folder for an OS (ubuntu2404, debian12, rhel9) or ''."""
    versions = (matrix.get("operating_systems") or {}).get(distribution) or {}
    entry = versions.get(str(version)) or versions.get(major(version)) or {}
    return entry.get("package_repo", "")
