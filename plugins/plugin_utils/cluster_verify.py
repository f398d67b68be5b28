# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The verdicts of roles/cluster/tasks/verify.yml: name resolution and SSH logins between the nodes.

Pure functions over what the nodes printed (lines of tab-separated fields) and the node records of
plugin_utils.inventory_check.inventory_nodes. The filters cluster_resolve_problems and cluster_ssh_problems are thin
wrappers; the role fails with the returned problems."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def expected_addresses(peers: Iterable[Mapping[str, Any]], rdma_suffix: str) -> dict[str, str]:
    """Name -> address every peer must resolve to: its name to ansible_host, name + rdma_suffix to rdma_ip."""
    peers = list(peers)
    want = {str(p["name"]): str(p["ip"]) for p in peers}
    want.update({str(p["name"]) + rdma_suffix: str(p["rdma_ip"]) for p in peers if p.get("rdma_ip")})
    return want


def resolve_problems(lines: Iterable[str], want: Mapping[str, str]) -> list[str]:
    """`lines`: 'NAME<TAB>ADDRESS' as getent printed them (ADDRESS empty when unresolved). One problem per name of
    `want` that resolves elsewhere or not at all."""
    seen = {}
    for line in lines:
        fields = [*str(line).split("\t"), ""]
        seen[fields[0]] = fields[1]
    return ["%s resolves to %s, not %s" % (name, seen.get(name, "") or "nothing", ip)
            for name, ip in want.items() if seen.get(name, "") != ip]


def ssh_problems(lines: Iterable[str], peers: Sequence[str], hostnames: Mapping[str, str]) -> list[str]:
    """`lines`: 'NAME<TAB>exit status<TAB>printed<TAB>stderr' per login; `hostnames`: the host name each peer
    reported of itself. One problem per peer that failed, printed another name or did not answer."""
    seen = {}
    for line in lines:
        fields = [*str(line).split("\t"), "", "", ""]
        seen[fields[0]] = {"rc": fields[1], "printed": fields[2].strip(), "stderr": fields[3].strip()}
    out = []
    for peer in peers:
        want = str(hostnames.get(peer, ""))
        got = seen.get(peer, {"rc": "none", "printed": "", "stderr": "no answer recorded"})
        if got["rc"] != "0" or got["printed"] != want:
            out.append('to %s (rc %s, printed "%s", expected "%s"): %s'
                       % (peer, got["rc"], got["printed"], want, got["stderr"]))
    return out
