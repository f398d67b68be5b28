# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `shared_storage_check`: the shared-storage check of every node (thin wrapper over
plugin_utils.shared_storage)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: shared_storage_check
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: Judge the shared-storage check of roles/_shared_storage
description:
  - One node wrote a probe file holding a token in the shared directory; every node looked for it. A node passes
    when the mount point (if given) is mounted, from the given source (if given), and the file is there with the
    token and the size written.
  - With O(volume) and O(volume_probe), a GlusterFS volume is judged too (a mount keeps working with a replica
    missing) - every brick online on a connected peer and nothing waiting to be healed, as
    P(scc.nlp_training.glusterfs_volume_verdict#filter) says.
  - Returns the problems by node (messages naming the node, what it saw and the fix), the mount state by node, the
    report's measurements (C(shared_storage_visible), C(shared_storage_write_mbps)) and blame, and the volume's
    verdict.
options:
  _input:
    description: The node that wrote the probe file.
    type: str
    required: true
  written:
    description: What the write printed (C(rc), C(bytes), C(seconds), C(error)); empty when the token was written
      earlier (a rolling reboot's).
    type: dict
    required: true
  seen:
    description: Each node's registered read of the probe (C(rc), C(stdout)), by node.
    type: dict
    required: true
  hosts:
    description: The nodes that must see the file.
    type: list
    elements: str
    required: true
  unreached:
    description: The nodes not reached in this run.
    type: list
    elements: str
    required: true
  token:
    description: The token the file starts with.
    type: str
    required: true
  shared_dir:
    description: The directory the file is in.
    type: str
    required: true
  mountpoint:
    description: The mount point every node must have mounted; empty to leave it unchecked.
    type: str
    default: ""
  source:
    description: The source that mount must come from; empty for any.
    type: str
    default: ""
  fix:
    description: The fix for the messages; C({node}) becomes the node.
    type: str
    default: ""
  situation:
    description: Said after what the node saw (for example C( after the reboot)).
    type: str
    default: ""
  stop:
    description: Said before the fix (for example C(the rollout stops here.)).
    type: str
    default: ""
  write_floor:
    description: The floor of C(shared_storage_write_mbps), if any.
    type: float
  probe:
    description: Whether a probe file was written; false judges the mount alone.
    type: bool
    default: true
  volume:
    description: The GlusterFS volume (C(SERVER:/NAME)) asked whether it is whole; empty for none.
    type: str
    default: ""
  volume_probe:
    description: What the volume's probe printed (roles/_shared_storage/files/glusterfs_probe.sh); none when the volume
      was not asked.
    type: str
"""

EXAMPLES = r"""
- name: Judge the shared-storage check
  ansible.builtin.set_fact:
    __verdict: >-
      {{ 'node1' | scc.nlp_training.shared_storage_check(written=written, seen=seen, hosts=['node1', 'node2'],
         unreached=[], token=token, shared_dir='/mnt/shared', mountpoint='/mnt/shared', fix='mount it on {node}') }}
"""

RETURN = r"""
_value:
  description: >-
    Dictionary with C(problems) (node to message), C(mounted) (node to the check C(shared_storage_mounted)),
    C(measurements), C(blame) (C(host), C(msg)) and C(volume) (none when no volume was asked, else its C(problems),
    C(blame), C(detail) and the check C(shared_storage_volume_whole)).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.shared_storage import storage_check


def shared_storage_check(writer, written, seen, hosts, unreached, token, shared_dir, mountpoint="", source="", fix="",
                         situation="", stop="", write_floor=None, probe=True, volume="", volume_probe=None):
    """{problems, mounted, measurements, blame, volume}; raise AnsibleFilterError for input of the wrong kind."""
    if not isinstance(written, dict) or not isinstance(seen, dict):
        raise AnsibleFilterError("shared_storage_check expects `written` and `seen` as dictionaries")
    if volume_probe is not None and not isinstance(volume_probe, str):
        raise AnsibleFilterError("shared_storage_check expects `volume_probe` as the probe's text (register.stdout), "
                                 "got %s" % type(volume_probe).__name__)
    return storage_check(str(writer), written, {str(k): dict(v or {}) for k, v in seen.items()}, list(hosts),
                         list(unreached or []), str(token), str(shared_dir), str(mountpoint or ""),
                         str(source or ""), str(fix or ""), str(situation or ""), str(stop or ""), write_floor,
                         bool(probe), str(volume or ""), volume_probe)


class FilterModule(object):
    """scc.nlp_training.shared_storage_check"""

    def filters(self):
        return {"shared_storage_check": shared_storage_check}
