# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `parse_nvidia_smi_q`: tool text -> plain data (thin wrapper over module_utils.parsers)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: parse_nvidia_smi_q
short_description: Parse nvidia-smi -q output into plain data
description:
  - Turns the text printed by C(nvidia-smi -q) into dictionaries and lists of numbers and strings.
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
    msg: "{{ (smi_out.stdout | scc.nlp_training.parse_nvidia_smi_q).gpus | map(attribute='uuid') }}"
"""

RETURN = r"""
_value:
  description: >-
    Dictionary with C(driver_version), C(cuda_version), C(attached_gpus) and C(gpus), a list of per-GPU facts:
    C(product_name), C(uuid), C(pci_bus_id), C(pci_device_id), C(persistence_mode), C(ecc_mode_current),
    C(ecc_mode_pending), C(ecc_errors) (volatile/aggregate correctable/uncorrectable totals, from either driver
    layout), C(retired_pages), C(remapped_rows), C(memory_total_mib), C(memory_used_mib), C(temperature_gpu_c),
    C(power_draw_w), C(power_limit_w), C(clocks_mhz), C(reset_required).
  type: dict
"""


from ansible_collections.scc.nlp_training.plugins.plugin_utils.filter_input import tool_text
from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.nvidia_smi_q import parse_nvidia_smi_q as _parse


def parse_nvidia_smi_q(text):
    """Parse the tool output; raise AnsibleFilterError for input that is not text."""
    return _parse(tool_text(text, "parse_nvidia_smi_q", "nvidia-smi -q"))


class FilterModule(object):
    """scc.nlp_training.parse_nvidia_smi_q"""

    def filters(self):
        return {"parse_nvidia_smi_q": parse_nvidia_smi_q}
