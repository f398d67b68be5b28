# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Read RDMA devices, ports and GID tables from sysfs and print them as JSON (read-only; role ib_check).

Usage: rdma_sysfs.py [SYSFS_ROOT] [TOOL ...]

Prints {"present", "class_dir", "devices": [...], "tools": {name: path|null}}. Each device: name, fw_ver,
node_guid, hca_type, board_id, ports: [{port, state, state_code, phys_state, rate, rate_gbps, link_layer, netdev,
gids: [{index, gid, type, ndev}], roce_v2_gid_index}]. The RoCE v2 GID index NCCL should use is the first RoCE v2
GID that is an IPv4-mapped address, else the first outside fe80::/10, else the first RoCE v2 GID.
Runs with the nodes' system python (3.6 or newer).
"""


import json
import os
import re
import sys

_ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
_V4_MAPPED = "0000:0000:0000:0000:0000:ffff:"


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:  # unpopulated GID attributes raise EINVAL in real sysfs
        return None


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _coded(text):
    """'4: ACTIVE' -> ('ACTIVE', 4); 'ACTIVE' -> ('ACTIVE', None)."""
    if not text:
        return None, None
    match = re.match(r"^\s*(\d+)\s*:\s*(.+?)\s*$", text)
    if match:
        return match.group(2), int(match.group(1))
    return text, None


def _rate_gbps(text):
    match = re.match(r"^\s*([\d.]+)\s*Gb/sec", text or "")
    return float(match.group(1)) if match else 0.0


def pick_roce_v2_index(gids):
    """NCCL_IB_GID_INDEX for one port: IPv4-mapped RoCE v2 first, then global RoCE v2, then any RoCE v2."""
    v2 = [g for g in gids if (g.get("type") or "").lower() == "roce v2" and g.get("gid") not in (None, _ZERO_GID)]
    for preferred in (lambda g: g["gid"].startswith(_V4_MAPPED), lambda g: not g["gid"].startswith("fe80:"),
                      lambda g: True):
        for gid in v2:
            if preferred(gid):
                return gid["index"]
    return None


def read_port(port_dir, number):
    state, state_code = _coded(_read(os.path.join(port_dir, "state")))
    phys_state, _code = _coded(_read(os.path.join(port_dir, "phys_state")))
    rate = _read(os.path.join(port_dir, "rate"))
    gids = []
    for name in sorted(_listdir(os.path.join(port_dir, "gids")), key=lambda n: int(n) if n.isdigit() else -1):
        if not name.isdigit():
            continue
        gid = _read(os.path.join(port_dir, "gids", name))
        if gid is None or gid == _ZERO_GID:
            continue
        gids.append({
            "index": int(name),
            "gid": gid,
            "type": _read(os.path.join(port_dir, "gid_attrs", "types", name)),
            "ndev": _read(os.path.join(port_dir, "gid_attrs", "ndevs", name)),
        })
    netdevs = [g["ndev"] for g in gids if g.get("ndev")]
    return {
        "port": number,
        "state": state,
        "state_code": state_code,
        "phys_state": phys_state,
        "rate": rate,
        "rate_gbps": _rate_gbps(rate),
        "link_layer": _read(os.path.join(port_dir, "link_layer")),
        "netdev": netdevs[0] if netdevs else None,
        "gids": gids,
        "roce_v2_gid_index": pick_roce_v2_index(gids),
    }


def read_tree(sysfs_root):
    class_dir = os.path.join(sysfs_root, "sys", "class", "infiniband")
    devices = []
    for name in _listdir(class_dir):
        dev_dir = os.path.join(class_dir, name)
        ports = []
        for port in _listdir(os.path.join(dev_dir, "ports")):
            if port.isdigit():
                ports.append(read_port(os.path.join(dev_dir, "ports", port), int(port)))
        pci_netdevs = _listdir(os.path.join(dev_dir, "device", "net"))
        for port in ports:
            if not port["netdev"] and pci_netdevs:
                port["netdev"] = pci_netdevs[0]
        devices.append({
            "name": name,
            "fw_ver": _read(os.path.join(dev_dir, "fw_ver")),
            "node_guid": _read(os.path.join(dev_dir, "node_guid")),
            "hca_type": _read(os.path.join(dev_dir, "hca_type")),
            "board_id": _read(os.path.join(dev_dir, "board_id")),
            "ports": sorted(ports, key=lambda p: p["port"]),
        })
    return class_dir, devices


def which(name):
    """Path of a command on PATH or the sbin directories, or None."""
    dirs = [*os.environ.get("PATH", "").split(os.pathsep), "/usr/local/sbin", "/usr/sbin", "/sbin"]
    for folder in dirs:
        path = os.path.join(folder, name)
        if folder and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def main(argv):
    root = argv[0] if argv else "/"
    tools = argv[1:] or ["ibv_devinfo", "ibstat", "rdma", "ib_write_bw", "ib_write_lat"]
    class_dir, devices = read_tree(root)
    print(json.dumps({"present": bool(devices), "class_dir": class_dir, "devices": devices,
                      "tools": dict((name, which(name)) for name in tools)}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
