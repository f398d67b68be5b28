# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `cluster_resolve_problems`: getent output on a node -> the peers that resolve wrongly (thin wrapper over
plugin_utils.cluster_verify)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: cluster_resolve_problems
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.3.0
short_description: The cluster peers a node resolves to another address than the inventory's
description:
  - Compares what C(getent hosts) printed on a node with the addresses of the inventory - each peer's name must
    resolve to its C(ansible_host), its name with the RDMA suffix to its C(rdma_ip).
options:
  _input:
    description: The lines C(NAME<TAB>ADDRESS) printed on the node (ADDRESS empty when the name did not resolve).
    type: list
    elements: str
    required: true
  peers:
    description: The node records (P(scc.nlp_training.inventory_nodes#filter)) of the other nodes.
    type: list
    elements: dict
    required: true
  rdma_suffix:
    description: The suffix of the names that resolve to C(rdma_ip).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Check that every other node resolves to its inventory address
  ansible.builtin.assert:
    that: __bad | length == 0
    fail_msg: "{{ __bad | join('; ') }}"
  vars:
    __bad: "{{ getent.stdout_lines | scc.nlp_training.cluster_resolve_problems(peers=peers, rdma_suffix='-ib') }}"
"""

RETURN = r"""
_value:
  description: One line per wrong name, C(NAME resolves to ADDRESS, not EXPECTED) (C(nothing) when unresolved).
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.cluster_verify import (
    expected_addresses,
    resolve_problems,
)


def cluster_resolve_problems(lines, peers, rdma_suffix):
    """The wrongly resolved names; raise AnsibleFilterError for input that is not a list of lines."""
    if isinstance(lines, str) or not isinstance(lines, (list, tuple)):
        raise AnsibleFilterError("cluster_resolve_problems expects the getent output as a list of lines "
                                 "(register.stdout_lines), got %s" % type(lines).__name__)
    return resolve_problems(lines, expected_addresses(peers, str(rdma_suffix)))


class FilterModule(object):
    """scc.nlp_training.cluster_resolve_problems"""

    def filters(self):
        return {"cluster_resolve_problems": cluster_resolve_problems}
