# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `cluster_ssh_problems`: SSH login results on a node -> the peers that failed (thin wrapper over
plugin_utils.cluster_verify)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: cluster_ssh_problems
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.3.0
short_description: The cluster peers a node could not log in to, or that printed another host name
description:
  - Judges the SSH logins C(ssh PEER hostname) run from one node - each peer must answer with exit status 0 and
    print its own host name.
options:
  _input:
    description: The lines C(NAME<TAB>exit status<TAB>printed<TAB>stderr), one per login.
    type: list
    elements: str
    required: true
  peers:
    description: The peers that were logged in to.
    type: list
    elements: str
    required: true
  hostnames:
    description: The host name each peer reported of itself, by peer.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check that every other node answered with its own host name
  ansible.builtin.assert:
    that: __bad | length == 0
    fail_msg: "{{ __bad | join('; ') }}"
  vars:
    __bad: "{{ ssh.stdout_lines | scc.nlp_training.cluster_ssh_problems(peers=['n2'], hostnames={'n2': 'n2'}) }}"
"""

RETURN = r"""
_value:
  description: >-
    One line per failed peer, C(to PEER (rc STATUS, printed "NAME", expected "NAME"): STDERR) (rc C(none) when no
    answer was recorded).
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.cluster_verify import ssh_problems


def cluster_ssh_problems(lines, peers, hostnames):
    """The failed peers; raise AnsibleFilterError for input that is not a list of lines."""
    if isinstance(lines, str) or not isinstance(lines, (list, tuple)):
        raise AnsibleFilterError("cluster_ssh_problems expects the login output as a list of lines "
                                 "(register.stdout_lines), got %s" % type(lines).__name__)
    return ssh_problems(lines, list(peers), dict(hostnames))


class FilterModule(object):
    """scc.nlp_training.cluster_ssh_problems"""

    def filters(self):
        return {"cluster_ssh_problems": cluster_ssh_problems}
