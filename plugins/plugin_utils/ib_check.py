# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The decisions of the ib_check role over the RDMA devices a node reported (files/rdma_sysfs.py: devices with
their ports) and the tools' parsed output: the port checks, the NIC firmware across nodes, the NCCL settings derived
from the active ports, and ibv_devinfo's agreement with sysfs. Pure functions; the filters in
plugins/filter/ib_check.py are thin wrappers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Pair = tuple[Mapping[str, Any], Mapping[str, Any]]


def _pairs(devices: Iterable[Mapping[str, Any]]) -> list[Pair]:
    return [(device, port) for device in devices for port in device.get("ports") or []]


def active_pairs(devices: Iterable[Mapping[str, Any]]) -> list[Pair]:
    return [(d, p) for d, p in _pairs(devices) if p.get("state") == "ACTIVE"]


def describe(pairs: Sequence[Pair]) -> str:
    """'mlx5_0 port 1: DOWN (Disabled), 100 Gb/sec (4X EDR), InfiniBand; ...' for the messages."""
    return "; ".join("%s port %s: %s (%s), %s, %s" % (d.get("name"), p.get("port"), p.get("state"),
                                                      p.get("phys_state"), p.get("rate"), p.get("link_layer"))
                     for d, p in pairs)


def port_problems(node: str, devices: Sequence[Mapping[str, Any]], min_rate_gbps: Any,
                  link_layer: str) -> list[str]:
    """Every port ACTIVE, every active port at min_rate_gbps or more, and on the wanted link layer (when set).
    `min_rate_gbps` is named in the message as the setting gives it."""
    out = []
    inactive = [(d, p) for d, p in _pairs(devices) if p.get("state") != "ACTIVE"]
    if inactive:
        out.append("%s: RDMA port not ACTIVE: %s. Check the cable/switch port (ibstat, `rdma link show`), or disable "
                   "the port so NCCL does not pick it." % (node, describe(inactive)))
    active = active_pairs(devices)
    slow = [(d, p) for d, p in active if float(p.get("rate_gbps") or 0) < float(min_rate_gbps)]
    if slow:
        out.append("%s: RDMA port below ib_check_min_rate_gbps %s Gb/s: %s. Check the link negotiation (ibstat Rate, "
                   "ethtool) or lower ib_check_min_rate_gbps." % (node, min_rate_gbps, describe(slow)))
    wrong = [(d, p) for d, p in active if link_layer and p.get("link_layer") != link_layer]
    if wrong:
        out.append("%s: RDMA port with the wrong link layer (ib_check_link_layer is %s): %s. Set the port type "
                   "(mlxconfig LINK_TYPE_P1) or change ib_check_link_layer." % (node, link_layer, describe(wrong)))
    return out


def firmware_problems(devices_by_host: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """One firmware version across every RDMA device of the nodes (None for a node without its sysfs view)."""
    versions = {d.get("fw_ver") for devices in devices_by_host.values() for d in devices or []}
    if len(versions) <= 1:
        return []
    listing = "".join("%s %s %s;" % (host, d.get("name"), d.get("fw_ver"))
                      for host, devices in devices_by_host.items() for d in devices or [])
    return ["NIC firmware differs across nodes: %s. Set ib_check_firmware_update: true with ib_check_firmware_version "
            "and a pinned package or URL + sha256, or update by hand; ib_check_same_firmware: false accepts the mix."
            % listing]


def nccl_settings(present: bool, devices: Sequence[Mapping[str, Any]], settings: Mapping[str, Any],
                  default_ifname: str) -> dict[str, Any]:
    """The NCCL defaults of the node: over its active RDMA ports (NCCL_IB_HCA, the RoCE v2 GID index and traffic
    class on RoCE), else TCP (NCCL_IB_DISABLE=1); the socket interface; then ib_check_nccl_extra. `settings`: the
    ib_check_nccl_* values without the prefix (ib_hca, ib_gid_index, ib_tc, ib_timeout, socket_ifname, extra)."""
    out: dict[str, Any] = {}
    active = active_pairs(devices)
    if present and active:
        hca = ",".join("%s:%s" % (d.get("name"), p.get("port")) for d, p in active)
        out.update({"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": str(settings.get("ib_hca") or hca),
                    "NCCL_IB_TIMEOUT": str(settings.get("ib_timeout"))})
        if any(p.get("link_layer") == "Ethernet" for _d, p in active):
            gid = str(settings.get("ib_gid_index") if settings.get("ib_gid_index") not in (None, "") else "")
            if not gid:
                found = [p.get("roce_v2_gid_index") for _d, p in active if p.get("roce_v2_gid_index") is not None]
                gid = str(found[0]) if found else ""
            if gid:
                out["NCCL_IB_GID_INDEX"] = gid
            tc = settings.get("ib_tc")
            if tc not in (None, ""):
                out["NCCL_IB_TC"] = str(tc)
    else:
        out["NCCL_IB_DISABLE"] = "1"
    out["NCCL_SOCKET_IFNAME"] = str(settings.get("socket_ifname") or str(default_ifname).strip())
    out.update(dict(settings.get("extra") or {}))
    return out


def devinfo_disagreements(devices: Sequence[Mapping[str, Any]], ibv_devinfo: Mapping[str, Any]) -> list[str]:
    """'dev:port' of each port sysfs reports ACTIVE that `ibv_devinfo -v` (parsed) does not report PORT_ACTIVE."""
    out = []
    for device, port in active_pairs(devices):
        seen = ibv_devinfo.get(str(device.get("name")))
        if seen is None:
            continue
        ports = [q for q in seen.get("ports") or [] if q.get("port") == port.get("port")]
        if not ports or ports[0].get("state") != "PORT_ACTIVE":
            out.append("%s:%s" % (device.get("name"), port.get("port")))
    return out
