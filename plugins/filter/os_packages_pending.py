# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `os_packages_pending`: the distribution packages a node still needs (thin wrapper over
plugin_utils.os_packages)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: os_packages_pending
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: The packages dpkg does not report installed at their pinned version
description:
  - Reads the lines of C(dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package} ${Version}\n' NAME...) and returns the
    names (C(NAME) or C(NAME=VERSION), a trailing C(*) pinning a prefix) that are not installed or installed at
    another version, so that apt runs only when a package is missing.
options:
  _input:
    description: The lines dpkg-query printed.
    type: list
    elements: str
    required: true
  names:
    description: The packages wanted, each C(NAME) or C(NAME=VERSION).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Install only what is missing
  ansible.builtin.apt:
    name: "{{ __pending }}"
  vars:
    __pending: "{{ probe.commands.dpkg.stdout_lines | scc.nlp_training.os_packages_pending(['gcc', 'perl']) }}"
  when: __pending | length > 0
"""

RETURN = r"""
_value:
  description: The names still to install, in the order given.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.os_packages import pending


def os_packages_pending(lines, names):
    """The names not installed at their pin."""
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise AnsibleFilterError("os_packages_pending expects the package names as a list")
    return pending([str(line) for line in lines or []], [str(n) for n in names])


class FilterModule(object):
    """scc.nlp_training.os_packages_pending"""

    def filters(self):
        return {"os_packages_pending": os_packages_pending}
