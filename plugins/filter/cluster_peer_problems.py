# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `cluster_peer_problems`: a node's peer probe -> the names that resolve wrongly and the peers it cannot
log in to (thin wrapper over plugin_utils.cluster_peers)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: cluster_peer_problems
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: The peers a node does not resolve or reach by their inventory names
description:
  - Judges the lines of the cluster role's peer probe (entry point C(peers)) - each other node's name (and its name
    with the RDMA suffix) must resolve to its inventory address, and C(ssh NAME hostname) must answer with strict
    host key checking (with the peer's own host name when O(hostnames) gives it).
options:
  _input:
    description: The probe's lines, C(resolve<TAB>NAME<TAB>ADDRESS) and C(ssh<TAB>NAME<TAB>rc<TAB>printed<TAB>stderr).
    type: list
    elements: str
    required: true
  peers:
    description: The node records (P(scc.nlp_training.inventory_nodes#filter)) of the other nodes, to resolve.
    type: list
    elements: dict
    required: true
  logins:
    description: The other nodes logged in to.
    type: list
    elements: str
    required: true
  rdma_suffix:
    description: The suffix of the names that resolve to C(rdma_ip).
    type: str
    required: true
  hostnames:
    description: The host name each peer reported of itself; without it, any answer of a login counts.
    type: dict
"""

EXAMPLES = r"""
- name: Fail when a peer does not resolve or answer
  ansible.builtin.assert:
    that: (bad.resolve + bad.ssh) | length == 0
  vars:
    bad: >-
      {{ probe.stdout_lines | scc.nlp_training.cluster_peer_problems(peers=peers, logins=names, rdma_suffix='-ib') }}
"""

RETURN = r"""
_value:
  description: C(resolve) (one line per name that resolves to another address or to nothing) and C(ssh) (one line
    per peer whose login failed or answered with another name).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.cluster_peers import peer_problems


def cluster_peer_problems(lines, peers, logins, rdma_suffix, hostnames=None):
    """The problems; raise AnsibleFilterError for input that is not a list of lines."""
    if isinstance(lines, str) or not isinstance(lines, (list, tuple)):
        raise AnsibleFilterError("cluster_peer_problems expects the probe's output as a list of lines "
                                 "(register.stdout_lines), got %s" % type(lines).__name__)
    return peer_problems(lines, peers, [str(n) for n in logins], str(rdma_suffix), hostnames)


class FilterModule(object):
    """scc.nlp_training.cluster_peer_problems"""

    def filters(self):
        return {"cluster_peer_problems": cluster_peer_problems}
