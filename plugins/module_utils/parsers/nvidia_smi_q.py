"""Parse `nvidia-smi -q` (human-readable) into driver/CUDA versions and one summary dict per GPU.

The text is first read into a tree by indentation ("Key : Value" leaves, bare "Key" sections), then the fields that
validation needs are picked out. Both ECC layouts are understood: older drivers print "Single Bit"/"Double Bit"
sections with a "Total"; newer ones print "SRAM Correctable", "DRAM Uncorrectable", ... counters.
"""

import re
from typing import Any, Dict, List, Optional, Tuple

from ._common import leading_number, to_int, yes_no

_KV_RE = re.compile(r"^(\S.*?)\s+:\s?(.*?)\s*$")
_GPU_RE = re.compile(r"^GPU\s+([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+)$")

Tree = Dict[str, Any]


def parse_nvidia_smi_q(text: str) -> Dict[str, Any]:
    """Return {driver_version, cuda_version, attached_gpus, gpus: [{product_name, uuid, pci_bus_id, ...}]}."""
    tree = _tree(text or "")
    gpus = [_gpu(bus_id, node) for bus_id, node in tree.items() if isinstance(node, dict) and _GPU_RE.match(bus_id)]
    return {
        "timestamp": _str(tree.get("Timestamp")),
        "driver_version": _str(tree.get("Driver Version")),
        "cuda_version": _str(tree.get("CUDA Version")),
        "attached_gpus": to_int(tree.get("Attached GPUs")),
        "gpus": gpus,
    }


def _tree(text: str) -> Tree:
    root: Tree = {}
    stack: List[Tuple[int, Tree]] = [(-1, root)]
    for raw in text.splitlines():
        if not raw.strip() or raw.strip().startswith("="):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        line = raw.strip()
        while stack and indent <= stack[-1][0]:
            stack.pop()
        parent = stack[-1][1]
        match = _KV_RE.match(line)
        if match:
            parent.setdefault(match.group(1), match.group(2))
            continue
        section: Tree = {}
        if line not in parent:
            parent[line] = section
        elif isinstance(parent[line], dict):
            section = parent[line]
        stack.append((indent, section))
    return root


def _get(node: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _first(node: Any, *paths: Tuple[str, ...]) -> Any:
    for path in paths:
        value = _get(node, *path)
        if value is not None:
            return value
    return None


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value not in ("N/A", "") else None


def _gpu(bus_key: str, node: Tree) -> Dict[str, Any]:
    ecc_mode = _first(node, ("ECC Mode",), ("Ecc Mode",)) or {}
    power = _first(node, ("GPU Power Readings",), ("Power Readings",)) or {}
    return {
        "pci_bus_id": _str(_get(node, "PCI", "Bus Id")) or _GPU_RE.match(bus_key).group(1),  # type: ignore[union-attr]
        "product_name": _str(node.get("Product Name")),
        "product_architecture": _str(node.get("Product Architecture")),
        "uuid": _str(node.get("GPU UUID")),
        "serial": _str(node.get("Serial Number")),
        "vbios_version": _str(node.get("VBIOS Version")),
        "pci_device_id": _str(_get(node, "PCI", "Device Id")),
        "persistence_mode": _str(node.get("Persistence Mode")),
        "performance_state": _str(node.get("Performance State")),
        "ecc_mode_current": _str(_get(ecc_mode, "Current")),
        "ecc_mode_pending": _str(_get(ecc_mode, "Pending")),
        "ecc_errors": {
            "volatile": _ecc_totals(_get(node, "ECC Errors", "Volatile")),
            "aggregate": _ecc_totals(_get(node, "ECC Errors", "Aggregate")),
        },
        "retired_pages": _retired_pages(node.get("Retired Pages")),
        "remapped_rows": _remapped_rows(node.get("Remapped Rows")),
        "memory_total_mib": leading_number(_get(node, "FB Memory Usage", "Total")),
        "memory_used_mib": leading_number(_get(node, "FB Memory Usage", "Used")),
        "memory_free_mib": leading_number(_get(node, "FB Memory Usage", "Free")),
        "temperature_gpu_c": leading_number(_get(node, "Temperature", "GPU Current Temp")),
        "temperature_memory_c": leading_number(_get(node, "Temperature", "Memory Current Temp")),
        "power_draw_w": leading_number(power.get("Power Draw")) if isinstance(power, dict) else None,
        "power_limit_w": leading_number(_first(power, ("Current Power Limit",), ("Enforced Power Limit",),
                                               ("Power Limit",))),
        "clocks_mhz": _clocks(node.get("Clocks")),
        "max_clocks_mhz": _clocks(node.get("Max Clocks")),
        "reset_required": yes_no(_str(_get(node, "GPU Reset Status", "Reset Required"))),
        "drain_and_reset_recommended": yes_no(_str(_get(node, "GPU Reset Status", "Drain and Reset Recommended"))),
        "recovery_action": _str(node.get("GPU Recovery Action")),
        "fabric_state": _str(_get(node, "Fabric", "State")),
        "fabric_status": _str(_get(node, "Fabric", "Status")),
    }


def _ecc_totals(section: Any) -> Dict[str, Optional[int]]:
    """Correctable / uncorrectable totals of one ECC section, whichever layout the driver printed."""
    totals: Dict[str, Optional[int]] = {"correctable": None, "uncorrectable": None}
    if not isinstance(section, dict):
        return totals
    if "Single Bit" in section or "Double Bit" in section:
        totals["correctable"] = to_int(_get(section, "Single Bit", "Total"))
        totals["uncorrectable"] = to_int(_get(section, "Double Bit", "Total"))
        return totals
    for key, value in section.items():
        if not isinstance(value, str):
            continue
        kind = "uncorrectable" if "Uncorrectable" in key else "correctable" if "Correctable" in key else None
        count = to_int(value)
        if kind is None or count is None:
            continue
        totals[kind] = (totals[kind] or 0) + count
    return totals


def _retired_pages(section: Any) -> Optional[Dict[str, Any]]:
    if not isinstance(section, dict):
        return None
    pending = _first(section, ("Pending Page Blacklist",), ("Pending Page Retirement",), ("Pending",))
    return {
        "single_bit": to_int(section.get("Single Bit ECC")),
        "double_bit": to_int(section.get("Double Bit ECC")),
        "pending": yes_no(_str(pending)),
    }


def _remapped_rows(section: Any) -> Optional[Dict[str, Any]]:
    if not isinstance(section, dict):
        return None  # "Remapped Rows : N/A" on GPUs without row remapping (pre-Ampere)
    return {
        "correctable": to_int(section.get("Correctable Error")),
        "uncorrectable": to_int(section.get("Uncorrectable Error")),
        "pending": yes_no(_str(section.get("Pending"))),
        "failure_occurred": yes_no(_str(section.get("Remapping Failure Occurred"))),
    }


def _clocks(section: Any) -> Dict[str, Any]:
    if not isinstance(section, dict):
        return {}
    return {key.lower(): leading_number(value) for key, value in section.items() if isinstance(value, str)}
