"""Parse `ibstat` (infiniband-diags) output into one dict per channel adapter."""

import re
from typing import Any, Dict, List, Optional

from ._common import leading_number, to_int

_CA_RE = re.compile(r"^CA '([^']+)'\s*$")
_PORT_RE = re.compile(r"^Port (\d+):\s*$")
_KV_RE = re.compile(r"^([A-Za-z][A-Za-z .]*?):\s*(.*?)\s*$")

_CA_KEYS = {
    "CA type": "type",
    "Number of ports": "port_count",
    "Firmware version": "firmware_version",
    "Hardware version": "hardware_version",
    "Node GUID": "node_guid",
    "System image GUID": "system_image_guid",
}
_PORT_KEYS = {
    "State": "state",
    "Physical state": "physical_state",
    "Rate": "rate",
    "Base lid": "base_lid",
    "LMC": "lmc",
    "SM lid": "sm_lid",
    "Capability mask": "capability_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}
_INT_FIELDS = ("port_count", "base_lid", "lmc", "sm_lid")


def parse_ibstat(text: str) -> Dict[str, Any]:
    """Return {ca_name: {type, port_count, firmware_version, ..., ports: [{port, state, rate (Gb/s), ...}]}}."""
    cas: Dict[str, Dict[str, Any]] = {}
    current: Optional[Dict[str, Any]] = None
    port: Optional[Dict[str, Any]] = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _CA_RE.match(line)
        if match:
            current = {"name": match.group(1), "ports": []}
            cas[match.group(1)] = current
            port = None
            continue
        if current is None:
            continue
        match = _PORT_RE.match(line)
        if match:
            port = {"port": int(match.group(1))}
            ports: List[Dict[str, Any]] = current["ports"]
            ports.append(port)
            continue
        match = _KV_RE.match(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2)
        if port is not None and key in _PORT_KEYS:
            _store(port, _PORT_KEYS[key], value)
        elif key in _CA_KEYS:
            _store(current, _CA_KEYS[key], value)
    return cas


def _store(target: Dict[str, Any], name: str, value: str) -> None:
    if name in _INT_FIELDS:
        target[name] = to_int(value)
    elif name == "rate":
        target[name] = leading_number(value)
    else:
        target[name] = value
