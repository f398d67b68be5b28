# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `glusterfs_volume_verdict`: the GlusterFS volume probe -> problems naming the brick, blame, detail (thin
wrapper over plugin_utils.glusterfs_health)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: glusterfs_volume_verdict
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: Whether a GlusterFS volume is whole, and what mends each fault
description:
  - Reads the GlusterFS probe of the internal role C(_shared_storage) (the XML answers of C(gluster volume
    info), C(volume status), C(volume heal ... info summary) and C(pool list)). No problem when the volume is
    Started, every brick is online on a connected peer and no entry waits to be healed or is in split-brain.
  - Each problem names the volume and the brick, says why (its server disconnected or not in the pool, its process
    not running, entries pending heal) and gives the commands that bring it back, for a node that is only down and
    for a node that was re-imaged.
options:
  _input:
    description: The probe's output.
    type: str
    required: true
  volume:
    description: The volume's name.
    type: str
    required: true
  server:
    description: The server the nodes mount the volume from.
    type: str
    required: true
  hosts:
    description: The inventory's nodes; a fault on a brick of one of them is blamed on that node.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Fail on a degraded volume
  ansible.builtin.assert:
    that: verdict.problems | length == 0
    fail_msg: "{{ verdict.problems | join('; ') }}"
  vars:
    verdict: "{{ probe.stdout | scc.nlp_training.glusterfs_volume_verdict(volume='gv0', server='node1') }}"
"""

RETURN = r"""
_value:
  description: The verdict.
  type: dict
  contains:
    problems:
      description: One line per fault, with the brick and the fix; empty when the volume is whole.
      type: list
      elements: str
    blame:
      description: The nodes at fault, each with its message (C(host), C(msg)).
      type: list
      elements: dict
    detail:
      description: One line for a report, for example C(volume gv0 (Replicate, 3 bricks\) - 3 of 3 bricks online).
      type: str
"""

from ansible_collections.scc.nlp_training.plugins.plugin_utils.filter_input import tool_text
from ansible_collections.scc.nlp_training.plugins.plugin_utils.glusterfs_health import volume_verdict


def glusterfs_volume_verdict(probe, volume, server, hosts=None):
    """The verdict; raise AnsibleFilterError for input that is not the probe's text."""
    return volume_verdict(tool_text(probe, "glusterfs_volume_verdict", "the GlusterFS volume probe"), str(volume),
                          str(server), [str(h) for h in hosts or []])


class FilterModule(object):
    """scc.nlp_training.glusterfs_volume_verdict"""

    def filters(self):
        return {"glusterfs_volume_verdict": glusterfs_volume_verdict}
