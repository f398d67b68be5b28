# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Which SSH host keys the cluster files list for each node: the keys this run read from the node itself, else
the keys an earlier run read from it and recorded on the controller (a node outside a --limit run, or one that
does not answer). So a limited run writes the same known hosts as a full run, even on a node whose own file is
new (a re-imaged node). The filter cluster_host_keys is a thin wrapper; the cluster role fails on nothing here,
it renders /etc/ssh/ssh_known_hosts and the controller's record from the result."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

READ = "_cluster_host_keys"  # the fact roles/cluster/tasks/install.yml sets on every node of the run


def listed_host_keys(members: Iterable[str], hostvars: Mapping[str, Mapping[str, Any]],
                     recorded: Mapping[str, Any]) -> dict[str, list[str]]:
    """node -> its key lines (`TYPE BASE64`, sorted), for every member that has keys read in this run or recorded;
    members with neither are left out (the template then keeps what the node's own file held)."""
    out: dict[str, list[str]] = {}
    for name in members:
        node = str(name)
        host_vars = hostvars.get(node, {})
        keys = host_vars[READ] if READ in host_vars else recorded.get(node)
        if keys:
            out[node] = sorted(str(k) for k in keys)
    return out
