# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filters rdma_pairs_ring and rdma_perftest_args: the ring of RDMA nodes and their perftest arguments (thin
wrappers over plugin_utils.rdma_pairs)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Each filter is documented in its own file beside this one (<name>.yml): ansible-doc reads those.

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.rdma_pairs import perftest_args, ring


def rdma_pairs_ring(hosts):
    if not isinstance(hosts, list):
        raise AnsibleFilterError("rdma_pairs_ring expects the RDMA nodes as a list, got %s" % type(hosts).__name__)
    return ring([str(h) for h in hosts])


def rdma_perftest_args(devices, host, tcp_port):
    try:
        return perftest_args(str(host), list(devices or []), int(tcp_port))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule(object):
    """scc.nlp_training RDMA pair helpers"""

    def filters(self):
        return {"rdma_pairs_ring": rdma_pairs_ring, "rdma_perftest_args": rdma_perftest_args}
