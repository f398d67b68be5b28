# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `shared_storage_verdict`: the shared-storage probe -> measurements and blame (thin wrapper over
plugin_utils.shared_storage)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: shared_storage_verdict
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.3.0
short_description: Judge the shared-storage probe of the validate role
description:
  - One node writes a probe file of O(probe_mib) MiB with C(dd conv=fsync) in the shared directory; every node looks
    for it. Returns the measurements C(shared_storage_visible) (nodes that saw the whole file) and
    C(shared_storage_write_mbps), and the nodes to blame.
options:
  _input:
    description: The registered result of the C(dd) task (C(rc), C(stderr), C(skipped)).
    type: dict
    required: true
  hosts:
    description: The nodes of the check.
    type: list
    elements: str
    required: true
  sizes:
    description: The size of the probe file each of O(hosts) saw, C(-1) for none.
    type: list
    elements: int
    required: true
  probe_mib:
    description: The size of the probe file in MiB.
    type: int
    required: true
  unreached:
    description: The nodes not reached in this run.
    type: list
    elements: str
    required: true
  first:
    description: The node that wrote the probe file.
    type: str
    required: true
  shared_dir:
    description: The shared directory.
    type: str
    required: true
  write_floor:
    description: The floor of C(shared_storage_write_mbps), if any.
    type: float
"""

EXAMPLES = r"""
- name: Judge the shared-storage probe
  ansible.builtin.set_fact:
    __verdict: >-
      {{ dd_result | scc.nlp_training.shared_storage_verdict(hosts=hosts, sizes=sizes, probe_mib=64, unreached=[],
                                                             first=hosts[0], shared_dir='/mnt/shared') }}
"""

RETURN = r"""
_value:
  description: >-
    Dictionary with C(measurements) (C(name), C(value), C(unit), C(floor), C(detail)) and C(blame) (C(host),
    C(msg)).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.shared_storage import shared_storage_verdict as _verdict


def shared_storage_verdict(dd, hosts, sizes, probe_mib, unreached, first, shared_dir, write_floor=None):
    """{measurements, blame}; raise AnsibleFilterError for a dd result that is not a dictionary."""
    if not isinstance(dd, dict):
        raise AnsibleFilterError("shared_storage_verdict expects the registered dd result, got %s" % type(dd).__name__)
    if len(list(hosts)) != len(list(sizes)):
        raise AnsibleFilterError("shared_storage_verdict: one size per host expected (%d hosts, %d sizes)"
                                 % (len(list(hosts)), len(list(sizes))))
    return _verdict(dd, list(hosts), list(sizes), probe_mib, list(unreached), str(first), str(shared_dir), write_floor)


class FilterModule(object):
    """scc.nlp_training.shared_storage_verdict"""

    def filters(self):
        return {"shared_storage_verdict": shared_storage_verdict}
