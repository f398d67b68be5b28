# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `rdma_pairs_report`: RDMA pair verdicts -> the report's checks and curves (thin wrapper over
plugin_utils.rdma_pairs)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rdma_pairs_report
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.3.0
short_description: The report checks and curves of judged RDMA pairs
description:
  - Turns the pair verdicts of P(scc.nlp_training.rdma_pairs_judge#filter) into the cluster checks of the report
    (bandwidth and latency per pair, one check per node at fault, a C(skip) check when there was no pair) and the
    C(ib_write_bw) curves.
options:
  _input:
    description: The C(pairs) of P(scc.nlp_training.rdma_pairs_judge#filter).
    type: list
    elements: dict
    required: true
  suspects:
    description: The nodes in two failing pairs.
    type: list
    elements: str
    required: true
  loopback_failed:
    description: The nodes whose loopback C(ib_write_bw) failed or stayed below the floor.
    type: list
    elements: str
    required: true
  min_fraction:
    description: The fraction of the line rate a pair's bandwidth must reach.
    type: float
    required: true
  max_latency_us:
    description: The highest typical latency in microseconds a pair may show.
    type: raw
    required: true
  rdma_hosts:
    description: The hosts with RDMA devices.
    type: list
    elements: str
    required: true
  play_hosts:
    description: How many hosts the play runs on.
    type: int
    required: true
"""

EXAMPLES = r"""
- name: The report's checks
  ansible.builtin.debug:
    msg: >-
      {{ (verdict.pairs | scc.nlp_training.rdma_pairs_report(suspects=verdict.suspects, loopback_failed=[],
          min_fraction=0.9, max_latency_us=10, rdma_hosts=hosts, play_hosts=ansible_play_hosts | length)).checks }}
"""

RETURN = r"""
_value:
  description: >-
    Dictionary with C(checks) (report checks - C(name), C(status), C(measured), C(floor), C(unit), C(detail)),
    C(curves) (C(size) and C(bw_avg) points per pair), C(faulty) (nodes at fault), C(bad) (failing pairs as
    C(client->server)) and C(percent) (the bandwidth floor in percent of the line rate).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.rdma_pairs import report


def rdma_pairs_report(pairs, suspects, loopback_failed, min_fraction, max_latency_us, rdma_hosts, play_hosts):
    """{checks, curves, faulty, bad, percent} of the pair verdicts."""
    if not isinstance(pairs, list):
        raise AnsibleFilterError("rdma_pairs_report expects the pairs of rdma_pairs_judge (a list), got %s"
                                 % type(pairs).__name__)
    return report(pairs, list(suspects), list(loopback_failed), float(min_fraction), max_latency_us,
                  list(rdma_hosts), int(play_hosts))


class FilterModule(object):
    """scc.nlp_training.rdma_pairs_report"""

    def filters(self):
        return {"rdma_pairs_report": rdma_pairs_report}
