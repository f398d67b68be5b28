# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `parse_ibv_devinfo`: tool text -> plain data (thin wrapper over module_utils.parsers)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: parse_ibv_devinfo
short_description: Parse ibv_devinfo -v output into plain data
description:
  - Turns the text printed by C(ibv_devinfo -v) into dictionaries and lists of numbers and strings.
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
    msg: "{{ ibv_out.stdout | scc.nlp_training.parse_ibv_devinfo }}"
"""

RETURN = r"""
_value:
  description: >-
    Dictionary keyed by hca_id; each HCA has C(transport), C(fw_ver), C(node_guid), C(vendor_id),
    C(vendor_part_id), C(board_id), C(phys_port_cnt) and C(ports), a list of C(port), C(state) (PORT_ACTIVE...),
    C(state_code), C(max_mtu), C(active_mtu), C(link_layer), C(active_width), C(active_speed),
    C(active_speed_gbps), C(phys_state) and C(gids) (C(index), C(gid), C(type) such as RoCE v2 when printed).
  type: dict
"""


from ansible_collections.scc.nlp_training.plugins.plugin_utils.filter_input import tool_text
from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo as _parse


def parse_ibv_devinfo(text):
    """Parse the tool output; raise AnsibleFilterError for input that is not text."""
    return _parse(tool_text(text, "parse_ibv_devinfo", "ibv_devinfo -v"))


class FilterModule(object):
    """scc.nlp_training.parse_ibv_devinfo"""

    def filters(self):
        return {"parse_ibv_devinfo": parse_ibv_devinfo}
