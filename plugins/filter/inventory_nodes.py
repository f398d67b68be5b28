# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `inventory_nodes`: the cluster group's inventory variables -> one record per node (thin wrapper over
plugin_utils.inventory_check)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: inventory_nodes
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.3.0
short_description: The nodes of the cluster group as the roles read them from the inventory
description:
  - Reads the inventory variables of each host of the cluster group (no node is contacted) and returns one record
    per host, in group order.
  - The cluster role builds C(/etc/hosts), the SSH trust and C(mpihosts) from the records; the
    P(scc.nlp_training.inventory_problems#filter) filter judges them.
options:
  _input:
    description: The hosts of the cluster group, for example C(groups['scc_cluster']).
    type: list
    elements: str
    required: true
  hostvars:
    description: The inventory variables of every host, the magic variable C(hostvars).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The cluster's nodes
  ansible.builtin.set_fact:
    __nodes: "{{ groups['scc_cluster'] | scc.nlp_training.inventory_nodes(hostvars) }}"
"""

RETURN = r"""
_value:
  description: >-
    List of dictionaries: C(name), C(short) (inventory_hostname_short), C(ip) (ansible_host, else the name),
    C(rdma_ip) (empty when unset), C(slots) (mpi_slots, else gpu_count when above 0, else 1), and the raw settings
    C(mpi_slots), C(gpu_count), C(backend) (cpfs_client_backend) and C(bundle_dir) (scc_bundle_dir).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.inventory_check import inventory_nodes as _nodes


def inventory_nodes(hosts, hostvars):
    """One record per host; raise AnsibleFilterError for input that is not a list of host names."""
    if isinstance(hosts, (str, dict)) or not hasattr(hosts, "__iter__"):
        raise AnsibleFilterError("inventory_nodes expects the list of the cluster group's hosts "
                                 "(groups[...]), got %s" % type(hosts).__name__)
    return _nodes(hosts, hostvars)


class FilterModule(object):
    """scc.nlp_training.inventory_nodes"""

    def filters(self):
        return {"inventory_nodes": inventory_nodes}
