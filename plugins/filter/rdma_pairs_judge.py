# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `rdma_pairs_judge`: perftest results of the ring pairs -> verdicts and the nodes to suspect (thin wrapper
over plugin_utils.rdma_pairs)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rdma_pairs_judge
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.3.0
short_description: Judge RDMA perftest pairs and narrow a failure down to the node at fault
description:
  - Judges each pair of the ring of C(playbooks/rdma_verify.yml) - C(ib_write_bw) against a fraction of the line
    rate of the slower end's active port, C(ib_write_lat) against a ceiling.
  - Narrows failures down - in a ring of three or more nodes a node in two failing pairs is the one at fault;
    otherwise every node of a failing pair is to be tested alone (loopback).
options:
  _input:
    description: The ring, a list of dictionaries with C(client) and C(server) host names.
    type: list
    elements: dict
    required: true
  results:
    description: >-
      The recorded perftest results of every client - dictionaries with C(tool), C(client), C(server), C(rc),
      C(parsed) (the output of P(scc.nlp_training.parse_perftest#filter)) and C(stderr).
    type: list
    elements: dict
    required: true
  devices:
    description: The RDMA devices of each host (C(ib_check_facts.devices)), by host name.
    type: dict
    required: true
  min_fraction:
    description: The fraction of the line rate a pair's bandwidth must reach.
    type: float
    required: true
  max_latency_us:
    description: The highest typical latency in microseconds a pair may show.
    type: float
    required: true
  rdma_hosts:
    description: How many hosts take part in the ring.
    type: int
    required: true
"""

EXAMPLES = r"""
- name: Judge the pairs
  ansible.builtin.set_fact:
    __verdict: >-
      {{ ring | scc.nlp_training.rdma_pairs_judge(results=results, devices=devices, min_fraction=0.9,
                                                  max_latency_us=10, rdma_hosts=ring | length) }}
"""

RETURN = r"""
_value:
  description: >-
    Dictionary with C(pairs) (per pair C(client), C(server), C(line_gbps), C(gbps), C(usec), C(ok), C(error),
    C(curve) and C(where)), C(suspects) (nodes in two failing pairs) and C(loopback) (nodes to test alone).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.rdma_pairs import judge_pairs, narrow_faults


def rdma_pairs_judge(ring, results, devices, min_fraction, max_latency_us, rdma_hosts):
    """{pairs, suspects, loopback}; raise AnsibleFilterError for a host without an active RDMA port."""
    if not isinstance(ring, list) or not isinstance(results, list) or not isinstance(devices, dict):
        raise AnsibleFilterError("rdma_pairs_judge expects the ring (list), results (list) and devices (dict), got "
                                 "%s, %s, %s" % (type(ring).__name__, type(results).__name__, type(devices).__name__))
    try:
        pairs = judge_pairs(ring, results, devices, float(min_fraction), float(max_latency_us))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from None
    return dict(narrow_faults(pairs, int(rdma_hosts)), pairs=pairs)


class FilterModule(object):
    """scc.nlp_training.rdma_pairs_judge"""

    def filters(self):
        return {"rdma_pairs_judge": rdma_pairs_judge}
