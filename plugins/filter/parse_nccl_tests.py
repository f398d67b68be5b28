# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `parse_nccl_tests`: tool text -> plain data (thin wrapper over module_utils.parsers)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: parse_nccl_tests
short_description: Parse nccl-tests (all_reduce_perf and the other *_perf programs) output into plain data
description:
  - Turns the text printed by C(nccl-tests) into dictionaries and lists of numbers and strings.
  - Unknown lines are ignored, so newer tool versions that add lines still parse.
options:
  _input:
    description: The tool's standard output.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Show the parsed output
  ansible.builtin.debug:
    msg: "{{ (nccl_out.stdout | scc.nlp_training.parse_nccl_tests).avg_busbw }}"
"""

RETURN = r"""
_value:
  description: >-
    Dictionary with C(header) (nThread, nGpus, minBytes, maxBytes, iters, ...), C(ranks) (rank, host, device,
    bus_id, name), C(rows) (C(size), C(count), C(type), C(redop), C(root), C(out_of_place) and C(in_place) each
    with C(time_us), C(algbw), C(busbw), C(wrong), C(error)), C(avg_busbw), C(out_of_bounds), C(max_busbw), and
    C(runs) (every run when the output holds several).
  type: dict
"""


from ansible_collections.scc.nlp_training.plugins.plugin_utils.filter_input import tool_text
from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests as _parse


def parse_nccl_tests(text):
    """Parse the tool output; raise AnsibleFilterError for input that is not text."""
    return _parse(tool_text(text, "parse_nccl_tests", "nccl-tests"))


class FilterModule(object):
    """scc.nlp_training.parse_nccl_tests"""

    def filters(self):
        return {"parse_nccl_tests": parse_nccl_tests}
