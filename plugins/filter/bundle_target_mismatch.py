# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `bundle_target_mismatch`: the offline bundle's target against the node (thin wrapper over
plugin_utils.bundle_target)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: bundle_target_mismatch
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: What an offline bundle was built for that the node is not
description:
  - Compares the release, architecture and Python the bundle's C(manifest.json) was built for with the node's.
options:
  _input:
    description: The manifest's C(target).
    type: dict
    required: true
  node:
    description: The node's C(release), C(arch) and C(python).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Refuse a bundle built for another node
  ansible.builtin.assert:
    that: __wrong | length == 0
    fail_msg: "the bundle was built for {{ __wrong | join(', ') }}"
  vars:
    __wrong: "{{ manifest.target | scc.nlp_training.bundle_target_mismatch(node_target) }}"
"""

RETURN = r"""
_value:
  description: C(KEY WANT (the node has HAVE)) per difference.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.bundle_target import mismatch


def bundle_target_mismatch(target, node):
    """The differences between the bundle's target and the node."""
    if not isinstance(target, dict) or not isinstance(node, dict):
        raise AnsibleFilterError("bundle_target_mismatch expects the manifest's target and the node's as dictionaries")
    return mismatch(target, node)


class FilterModule(object):
    """scc.nlp_training.bundle_target_mismatch"""

    def filters(self):
        return {"bundle_target_mismatch": bundle_target_mismatch}
