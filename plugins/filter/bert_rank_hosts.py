# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `bert_rank_hosts`: rank to host of the BERT launch (thin wrapper over plugin_utils.bert_launch)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: bert_rank_hosts
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: The host of each rank of an mpirun --map-by slot launch
description:
  - Each host of the hostfile repeated for its slot count, in the hostfile's order, as mpirun C(--map-by slot) places
    the ranks.
options:
  _input:
    description: The hostfile's hosts, in order.
    type: list
    elements: str
    required: true
  slots:
    description: The slot count of each host.
    type: list
    elements: int
    required: true
"""

EXAMPLES = r"""
- name: Rank to host
  ansible.builtin.set_fact:
    __ranks: "{{ ['n1', 'n2'] | scc.nlp_training.bert_rank_hosts([2, 1]) }}"
"""

RETURN = r"""
_value:
  description: The host of rank 0, 1, ...
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.bert_launch import rank_hosts


def bert_rank_hosts(hosts, slots):
    """The host of each rank."""
    try:
        return rank_hosts(list(hosts or []), list(slots or []))
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("bert_rank_hosts: %s" % exc) from None


class FilterModule(object):
    """scc.nlp_training.bert_rank_hosts"""

    def filters(self):
        return {"bert_rank_hosts": bert_rank_hosts}
