# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `cluster_host_keys`: the cluster's nodes -> the SSH host keys the cluster files list for each (thin
wrapper over plugin_utils.cluster_keys)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: cluster_host_keys
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: The SSH host keys the cluster files list for each node
description:
  - For each node, the host keys this run read from the node itself (the fact C(_cluster_host_keys) of the cluster
    role), else the keys an earlier run recorded on the controller. A run limited to some nodes thus lists every
    node's keys, as a full run does.
options:
  _input:
    description: The names of the nodes the cluster files list.
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: raw
    required: true
  recorded:
    description: Node name to its key lines, as recorded on the controller by earlier runs.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Keys of every listed node
  ansible.builtin.set_fact:
    keys: "{{ ['node1', 'node2'] | scc.nlp_training.cluster_host_keys(hostvars, recorded={}) }}"
"""

RETURN = r"""
_value:
  description: Node name to its sorted key lines (C(TYPE BASE64)); nodes with no keys read or recorded are left out.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.cluster_keys import listed_host_keys


def cluster_host_keys(members, hostvars, recorded=None):
    """The keys per node; raise AnsibleFilterError for input that is not a list of node names."""
    if isinstance(members, (str, dict)) or not hasattr(members, "__iter__"):
        raise AnsibleFilterError("cluster_host_keys expects the list of node names, got %s" % type(members).__name__)
    if recorded is not None and not isinstance(recorded, dict):
        raise AnsibleFilterError("cluster_host_keys: recorded must be a mapping of node names to key lines, got %s"
                                 % type(recorded).__name__)
    return listed_host_keys(members, hostvars, recorded or {})


class FilterModule(object):
    """scc.nlp_training.cluster_host_keys"""

    def filters(self):
        return {"cluster_host_keys": cluster_host_keys}
