# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `ssh_host_keys`: SSH host key files as known_hosts key lines (thin wrapper over plugin_utils.ssh_keys)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: ssh_host_keys
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: SSH host key files as TYPE KEY lines
description:
  - Turns the contents of C(/etc/ssh/ssh_host_*_key.pub) into sorted C(TYPE KEY) lines, the comment left out, as
    the cluster role writes them into every node's C(ssh_known_hosts).
options:
  _input:
    description: The files' contents (slurped and decoded).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Remember the host keys
  ansible.builtin.set_fact:
    __keys: "{{ slurped.results | map(attribute='content') | map('b64decode') | scc.nlp_training.ssh_host_keys }}"
"""

RETURN = r"""
_value:
  description: Sorted C(TYPE KEY) lines.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.ssh_keys import host_key_lines


def ssh_host_keys(texts):
    """Sorted 'TYPE KEY' lines."""
    if isinstance(texts, str) or not isinstance(texts, (list, tuple)):
        raise AnsibleFilterError("ssh_host_keys expects the key files' contents as a list")
    return host_key_lines(list(texts))


class FilterModule(object):
    """scc.nlp_training.ssh_host_keys"""

    def filters(self):
        return {"ssh_host_keys": ssh_host_keys}
