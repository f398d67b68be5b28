# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `gluster_orphan_bricks`: the GlusterFS bricks on hosts the inventory no longer has (thin wrapper over
plugin_utils.shared_storage)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: gluster_orphan_bricks
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: The bricks of a GlusterFS volume on hosts the inventory no longer has
description:
  - Reads C(gluster volume info) and returns each brick whose host is none of the known names, addresses or short
    names, so that removing a node from the inventory can be refused while it still holds a brick.
options:
  _input:
    description: The output of C(gluster volume info VOLUME).
    type: str
    required: true
  known:
    description: The inventory's host names, their addresses and short names.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Refuse dropping a brick holder
  ansible.builtin.assert:
    that: __orphans | length == 0
    fail_msg: "{{ __orphans | map(attribute='host') | join(', ') }} still hold bricks"
  vars:
    __orphans: "{{ info.stdout | scc.nlp_training.gluster_orphan_bricks(['n1', 'n2']) }}"
"""

RETURN = r"""
_value:
  description: One C(host), C(brick) per brick on an unknown host.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.shared_storage import orphan_bricks


def gluster_orphan_bricks(volume_info, known):
    """The bricks on hosts outside `known`."""
    if not isinstance(known, list):
        raise AnsibleFilterError("gluster_orphan_bricks expects the known hosts as a list")
    return orphan_bricks(str(volume_info or ""), [str(k) for k in known])


class FilterModule(object):
    """scc.nlp_training.gluster_orphan_bricks"""

    def filters(self):
        return {"gluster_orphan_bricks": gluster_orphan_bricks}
