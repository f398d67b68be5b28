# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `parse_ibstat`: tool text -> plain data (thin wrapper over module_utils.parsers)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: parse_ibstat
short_description: Parse ibstat output into plain data
description:
  - Turns the text printed by C(ibstat) into dictionaries and lists of numbers and strings.
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
    msg: "{{ (ibstat_out.stdout | scc.nlp_training.parse_ibstat)['mlx5_0'].ports[0].state }}"
"""

RETURN = r"""
_value:
  description: >-
    Dictionary keyed by CA name (for example C(mlx5_0)); each CA has C(type), C(port_count),
    C(firmware_version), C(hardware_version), C(node_guid), C(system_image_guid) and C(ports), a list of
    C(port), C(state) (Active/Down), C(physical_state), C(rate) (Gb/s), C(base_lid), C(lmc), C(sm_lid),
    C(port_guid), C(link_layer) (InfiniBand/Ethernet).
  type: dict
"""


from ansible_collections.scc.nlp_training.plugins.plugin_utils.filter_input import tool_text
from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.ibstat import parse_ibstat as _parse


def parse_ibstat(text):
    """Parse the tool output; raise AnsibleFilterError for input that is not text."""
    return _parse(tool_text(text, "parse_ibstat", "ibstat"))


class FilterModule(object):
    """scc.nlp_training.parse_ibstat"""

    def filters(self):
        return {"parse_ibstat": parse_ibstat}
