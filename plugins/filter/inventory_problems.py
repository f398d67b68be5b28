# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `inventory_problems`: the cluster's node records -> the list of problems (thin wrapper over
plugin_utils.inventory_check)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: inventory_problems
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.3.0
short_description: The problems of a cluster inventory, each naming host, setting and fix
description:
  - Applies the inventory rules to the records of P(scc.nlp_training.inventory_nodes#filter) - host names valid
    for C(/etc/hosts) and unique (case-insensitive short names), C(ansible_host) and C(rdma_ip) IP addresses used by
    one host only, C(mpi_slots) a positive integer, C(gpu_count) a non-negative integer, C(scc_bundle_dir) an
    absolute path, C(cpfs_client_backend) a known back end.
  - Returns one message per problem naming the host, the setting, the value and the fix; an empty list when all is
    well.
options:
  _input:
    description: The node records of P(scc.nlp_training.inventory_nodes#filter).
    type: list
    elements: dict
    required: true
  require_ip:
    description: Refuse an C(ansible_host) or C(rdma_ip) that is not an IPv4/IPv6 address.
    type: bool
    default: true
  backends:
    description: The shared storage back ends a node's C(cpfs_client_backend) may name.
    type: list
    elements: str
    default: [cpfs_lustre, cpfs_nfs, nfs, glusterfs]
"""

EXAMPLES = r"""
- name: Refuse a bad inventory
  ansible.builtin.fail:
    msg: "{{ __problems | join(' | ') }}"
  vars:
    __problems: "{{ groups['scc_cluster'] | scc.nlp_training.inventory_nodes(hostvars)
                    | scc.nlp_training.inventory_problems(require_ip=true) }}"
  when: __problems | length > 0
"""

RETURN = r"""
_value:
  description: The problems, one message each (host, setting, value and "Fix:"); empty when there is none.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.inventory_check import inventory_problems as _problems

_BACKENDS = ("cpfs_lustre", "cpfs_nfs", "nfs", "glusterfs")


def inventory_problems(nodes, require_ip=True, backends=_BACKENDS):
    """The problems of the node records; raise AnsibleFilterError for input that is not such a list."""
    if not isinstance(nodes, (list, tuple)) or not all(isinstance(n, dict) for n in nodes):
        raise AnsibleFilterError("inventory_problems expects the node records of inventory_nodes (a list of "
                                 "dictionaries), got %s" % type(nodes).__name__)
    if isinstance(backends, str) or not isinstance(backends, (list, tuple)):
        raise AnsibleFilterError("inventory_problems: backends must be a list of back end names, got %s"
                                 % type(backends).__name__)
    return _problems(nodes, bool(require_ip), list(backends))


class FilterModule(object):
    """scc.nlp_training.inventory_problems"""

    def filters(self):
        return {"inventory_problems": inventory_problems}
