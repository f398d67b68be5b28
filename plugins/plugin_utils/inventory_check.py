# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The cluster inventory as the roles read it, and the rules that refuse a bad one before anything changes.

Pure functions over plain data: `inventory_nodes` turns the inventory variables of the cluster group's hosts into
one record per node (the cluster role's /etc/hosts, SSH trust and mpihosts are built from these records);
`inventory_problems` returns one message per problem, naming the host, the setting, the value and the fix. The
filters of the same names are thin wrappers; roles/inventory_check fails with the messages."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(r"^(%s\.){3}%s$" % (_OCTET, _OCTET))
_IPV6 = re.compile(r"^[0-9A-Fa-f]{0,4}(:[0-9A-Fa-f]{0,4}){2,7}$")
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_COUNT = re.compile(r"^[0-9]+$")

Node = dict[str, Any]


def _var(host_vars: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """A host variable, or `default` when the host does not define it (a defined None stays None)."""
    return host_vars.get(name, default)


def _to_int(value: Any) -> int:
    """Ansible's `int` filter: the integer value, 0 when there is none."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            return 0


def _is_count(value: Any) -> bool:
    """An int (not a bool) or a string of digits."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, str) and _COUNT.match(value) is not None)


def _is_ip(text: str) -> bool:
    return _IPV4.match(text) is not None or _IPV6.match(text) is not None


def inventory_nodes(hosts: Iterable[str], hostvars: Mapping[str, Mapping[str, Any]]) -> list[Node]:
    """One record per host of the cluster group, in group order.

    `name`, `short` (inventory_hostname_short), `ip` (ansible_host, else the name), `rdma_ip` ('' when unset or
    empty) and `slots` (mpi_slots, else gpu_count when above 0, else 1) are what the cluster files are built from;
    `mpi_slots`, `gpu_count`, `backend` (cpfs_client_backend) and `bundle_dir` (scc_bundle_dir) are the raw
    settings (None or the default when unset) that `inventory_problems` judges; `local` is whether Ansible reaches
    the node over the local connection."""
    nodes = []
    for host in hosts:
        name = str(host)
        host_vars = hostvars[host]
        gpus = _var(host_vars, "gpu_count", 0)
        mpi_slots = _var(host_vars, "mpi_slots")
        gpu_int = _to_int(gpus)
        nodes.append({
            "name": name,
            "short": str(_var(host_vars, "inventory_hostname_short", name.split(".", maxsplit=1)[0])),
            "ip": str(_var(host_vars, "ansible_host", name)),
            "rdma_ip": str(_var(host_vars, "rdma_ip") or ""),
            "slots": _to_int(mpi_slots or (gpu_int if gpu_int > 0 else 1)),
            "mpi_slots": mpi_slots,
            "gpu_count": gpus,
            "backend": _var(host_vars, "cpfs_client_backend"),
            "bundle_dir": _var(host_vars, "scc_bundle_dir", ""),
            "local": _var(host_vars, "ansible_connection") == "local",
        })
    return nodes


def _groups(items: Sequence[Node], key: str) -> list[tuple[str, list[Node]]]:
    """Jinja's `groupby` (case-insensitive, the default): groups sorted by the lower-cased key, each shown with the
    key of its first item, items in their original order."""
    by_key: dict[str, list[Node]] = {}
    for item in items:
        by_key.setdefault(str(item[key]).lower(), []).append(item)
    return [(str(group[0][key]), group) for _lower, group in sorted(by_key.items())]


def _node_problems(node: Node, require_ip: bool, backends: Sequence[str]) -> list[str]:
    host = node["name"]
    out = []
    if _HOSTNAME.match(host) is None:
        out.append("host '%s': the inventory name is not a valid host name for /etc/hosts (letters, digits, '-' and "
                   "'.'). Fix: rename the host in the inventory and set its address in ansible_host." % host)
    if require_ip and not _is_ip(node["ip"]):
        out.append("host '%s': ansible_host '%s' is not an IP address (/etc/hosts and the SSH trust are built from "
                   "it). Fix: set ansible_host to the node's management (VPC) IP." % (host, node["ip"]))
    if node["rdma_ip"] and require_ip and not _is_ip(node["rdma_ip"]):
        out.append("host '%s': rdma_ip '%s' is not an IP address. Fix: set rdma_ip to the IP of the node's RDMA "
                   "interface, or remove it." % (host, node["rdma_ip"]))
    slots = node["mpi_slots"]
    if slots is not None and not (_is_count(slots) and _to_int(slots) > 0):
        out.append("host '%s': mpi_slots '%s' is not a positive integer. Fix: set mpi_slots to the number of MPI "
                   "ranks for the node (e.g. its GPU count), or remove it to use gpu_count (1 without GPU)."
                   % (host, slots))
    gpus = node["gpu_count"]
    if not (_is_count(gpus) and _to_int(gpus) >= 0):
        out.append("host '%s': gpu_count '%s' is not a non-negative integer. Fix: set gpu_count to the number of "
                   "GPUs in the node (0 for none)." % (host, gpus))
    bundle_dir = node["bundle_dir"]
    if not isinstance(bundle_dir, str) or (bundle_dir and not bundle_dir.startswith("/")):
        out.append("host '%s': scc_bundle_dir '%s' is not an absolute path. Fix: set scc_bundle_dir to the offline "
                   "bundle's directory as the nodes see it (e.g. /mnt/cpfs/scc-bundle; sccnlp deploy --bundle DIR "
                   "sets it), or remove it to install from the nodes' own sources." % (host, bundle_dir))
    backend = node["backend"]
    if backend is not None and backend not in backends:
        out.append("host '%s': cpfs_client_backend '%s' is unknown. Fix: set it to one of %s."
                   % (host, backend, ", ".join(str(b) for b in backends)))
    return out


def inventory_problems(nodes: Sequence[Node], require_ip: bool = True,
                       backends: Sequence[str] = ("cpfs_lustre", "cpfs_nfs", "nfs", "glusterfs")) -> list[str]:
    """Every problem of the nodes (records of `inventory_nodes`), one message each naming host, setting and fix:
    per node in order, then host names used twice, then IP addresses used by two hosts. Empty when all is well.
    A cluster of one node reached over the local connection (a single GPU box run on itself) needs no IP address:
    no other node resolves it or logs in to it."""
    out = []
    if len(nodes) == 1 and nodes[0].get("local"):
        require_ip = False
    for node in nodes:
        out.extend(_node_problems(node, require_ip, backends))
    names = [dict(node, short=node["short"].lower()) for node in nodes]
    for name, same in _groups(names, "short"):
        if len(same) > 1:
            out.append("hosts %s: the same host name '%s' (names are case-insensitive and the short name goes into "
                       "/etc/hosts). Fix: give each node its own name in the inventory."
                       % (", ".join(n["name"] for n in same), name))
    uses = []
    for node in nodes:
        uses.append({"ip": node["ip"], "use": node["name"] + " (ansible_host)", "host": node["name"]})
        if node["rdma_ip"]:
            uses.append({"ip": node["rdma_ip"], "use": node["name"] + " (rdma_ip)", "host": node["name"]})
    for ip, same in _groups(uses, "ip"):
        if len({u["host"] for u in same}) > 1:
            out.append("hosts %s: the same IP address %s. Fix: each node needs its own ansible_host and rdma_ip; "
                       "remove the duplicate host or correct its address." % (", ".join(u["use"] for u in same), ip))
    return out
