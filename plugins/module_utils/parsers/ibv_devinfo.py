"""Parse `ibv_devinfo` / `ibv_devinfo -v` (rdma-core and MLNX_OFED layouts) into one dict per HCA."""

import re
from typing import Any, Dict, List, Optional, Tuple

from ._common import leading_number, to_int

_HCA_RE = re.compile(r"^hca_id:\s*(\S+)")
_PORT_RE = re.compile(r"^port:\s*(\d+)\s*$")
_KV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_ ]*?):\s*(.*?)\s*$")
_GID_RE = re.compile(r"^GID\[\s*(\d+)\]:\s*([0-9a-fA-F:.]+)(?:\s*,\s*(.+?))?\s*$")
_CODED_RE = re.compile(r"^(.*?)\s*\((\d+)\)$")  # "PORT_ACTIVE (4)" -> ("PORT_ACTIVE", 4)

_DEVICE_KEYS = ("transport", "fw_ver", "node_guid", "sys_image_guid", "vendor_id", "vendor_part_id", "hw_ver",
                "board_id", "phys_port_cnt")
_PORT_KEYS = ("state", "max_mtu", "active_mtu", "sm_lid", "port_lid", "port_lmc", "link_layer", "active_width",
              "active_speed", "phys_state", "gid_tbl_len")


def parse_ibv_devinfo(text: str) -> Dict[str, Any]:
    """Return {hca_id: {transport, fw_ver, ..., phys_port_cnt, ports: [{port, state, ..., gids: [...]}]}}.

    Coded values keep the name and the code: state 'PORT_ACTIVE (4)' -> state 'PORT_ACTIVE', state_code 4;
    MTUs become numbers of bytes; active_speed '25.0 Gbps (32)' adds active_speed_gbps 25.0.
    """
    hcas: Dict[str, Dict[str, Any]] = {}
    hca: Optional[Dict[str, Any]] = None
    port: Optional[Dict[str, Any]] = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _HCA_RE.match(line)
        if match:
            hca = {"hca_id": match.group(1), "ports": []}
            hcas[match.group(1)] = hca
            port = None
            continue
        if hca is None:
            continue
        match = _PORT_RE.match(line)
        if match:
            port = {"port": int(match.group(1)), "gids": []}
            ports: List[Dict[str, Any]] = hca["ports"]
            ports.append(port)
            continue
        match = _GID_RE.match(line)
        if match and port is not None:
            gid: Dict[str, Any] = {"index": int(match.group(1)), "gid": match.group(2)}
            if match.group(3):
                gid["type"] = match.group(3)
            port["gids"].append(gid)
            continue
        match = _KV_RE.match(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2)
        if port is not None and key in _PORT_KEYS:
            _store_port(port, key, value)
        elif port is None and key in _DEVICE_KEYS:
            _store_device(hca, key, value)
    return hcas


def _store_device(hca: Dict[str, Any], key: str, value: str) -> None:
    if key == "transport":
        name, _code = _split_code(value)
        hca[key] = name
    elif key in ("vendor_part_id", "phys_port_cnt"):
        hca[key] = to_int(value)
    else:
        hca[key] = value


def _store_port(port: Dict[str, Any], key: str, value: str) -> None:
    if key in ("state", "phys_state"):
        name, code = _split_code(value)
        port[key] = name
        port[key + "_code"] = code
    elif key in ("max_mtu", "active_mtu"):
        port[key] = leading_number(value)
    elif key in ("sm_lid", "port_lid", "gid_tbl_len"):
        port[key] = to_int(value)
    elif key == "active_width":
        name, _code = _split_code(value)
        port[key] = name
    elif key == "active_speed":
        name, _code = _split_code(value)
        port[key] = name
        port["active_speed_gbps"] = leading_number(name)
    else:
        port[key] = value


def _split_code(value: str) -> Tuple[str, Optional[int]]:
    match = _CODED_RE.match(value)
    if match:
        return match.group(1), int(match.group(2))
    return value, None
