# Copyright: scc.nlp_training contributors
# Apache-2.0
"""What a node's peer probe (roles/cluster/tasks/peers.yml) found: the other nodes' names that resolve elsewhere or
not at all, and the peers `ssh NAME hostname` does not reach. One probe serves the cluster role's verify, the
rolling reboot's validation and the validate role; the rules are those of plugin_utils.cluster_verify. The filter
cluster_peer_problems is a thin wrapper."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from .cluster_verify import expected_addresses, resolve_problems, ssh_problems


def peer_problems(lines: Iterable[str], peers: Iterable[Mapping[str, Any]], logins: Sequence[str], rdma_suffix: str,
                  hostnames: Optional[Mapping[str, str]] = None) -> dict[str, list[str]]:
    """`lines`: the probe's `resolve<TAB>NAME<TAB>ADDRESS` and `ssh<TAB>NAME<TAB>rc<TAB>printed<TAB>stderr` lines;
    `peers`: node records (inventory_nodes) of the names to resolve; `logins`: the peers logged in to;
    `hostnames`: the host name each peer reported of itself, when known (else any answer counts).
    Returns {'resolve': [...], 'ssh': [...]}, each empty when all is well."""
    resolved, logged = [], []
    for line in lines:
        kind, _sep, rest = str(line).partition("\t")
        if kind == "resolve":
            resolved.append(rest)
        elif kind == "ssh":
            logged.append(rest)
    ssh = ssh_problems(logged, list(logins), hostnames) if hostnames is not None else _unanswered(logged, logins)
    return {"resolve": resolve_problems(resolved, expected_addresses(peers, rdma_suffix)), "ssh": ssh}


def _unanswered(logged: Iterable[str], logins: Sequence[str]) -> list[str]:
    """Logins that failed or printed nothing (no host name to compare with)."""
    seen = {}
    for rest in logged:
        fields = [*rest.split("\t"), "", "", ""]
        seen[fields[0]] = fields[1:4]
    out = []
    for peer in logins:
        rc, printed, stderr = seen.get(peer, ["none", "", "no answer recorded"])
        if rc != "0" or not printed.strip():
            out.append("to %s (rc %s): %s" % (peer, rc, stderr.strip() or "no host name printed"))
    return out
