# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `parse_perftest`: tool text -> plain data (thin wrapper over module_utils.parsers)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: parse_perftest
short_description: Parse perftest (ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ...) output into plain data
description:
  - Turns the text printed by C(perftest) into dictionaries and lists of numbers and strings.
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
    msg: "{{ (bw_out.stdout | scc.nlp_training.parse_perftest).summary.max_bw_avg_gbps }}"
"""

RETURN = r"""
_value:
  description: >-
    Dictionary with C(test), C(kind) (bw or lat), C(device), C(link_type), C(unit), C(rows) (bandwidth rows
    C(bytes), C(iterations), C(bw_peak), C(bw_avg), C(msg_rate_mpps), C(bw_avg_gbps); latency rows C(bytes),
    C(iterations), C(t_min), C(t_max), C(t_typical), C(t_avg), C(t_stdev), C(p99), C(p99_9)) and C(summary)
    (C(max_bw_avg_gbps) or C(min_t_typical_usec)).
  type: dict
"""


from ansible_collections.scc.nlp_training.plugins.plugin_utils.filter_input import tool_text
from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.perftest import parse_perftest as _parse


def parse_perftest(text):
    """Parse the tool output; raise AnsibleFilterError for input that is not text."""
    return _parse(tool_text(text, "parse_perftest", "perftest"))


class FilterModule(object):
    """scc.nlp_training.parse_perftest"""

    def filters(self):
        return {"parse_perftest": parse_perftest}
