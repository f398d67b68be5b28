# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `storage_mount_state`: whether the shared storage is mounted and in /etc/fstab as the role would make it
(thin wrapper over plugin_utils.shared_storage)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: storage_mount_state
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: Whether a node has the mount and the fstab line ansible.posix.mount would make
description:
  - Compares C(/etc/fstab) (its last line for the mount point) with C(SRC PATH FSTYPE OPTS 0 0), and what is mounted
    at the mount point with the source, so that the mount runs only when one of them differs.
options:
  _input:
    description: The text of C(/etc/fstab).
    type: str
    required: true
  mounted:
    description: What is mounted at the mount point (C(fstype), C(source)), none for nothing (node_probe's mounts).
    type: dict
    required: true
  path:
    description: The mount point.
    type: str
    required: true
  src:
    description: The source.
    type: str
    required: true
  fstype:
    description: The file system type.
    type: str
    required: true
  opts:
    description: The mount options of the fstab line.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Mount only when it is not in place
  ansible.posix.mount:
    path: /mnt/cpfs
    src: node1:/gv0
    fstype: glusterfs
    opts: defaults,_netdev
    state: mounted
  when: not (__state.fstab and __state.mounted)
  vars:
    __state: >-
      {{ fstab_text | scc.nlp_training.storage_mount_state(mounted, '/mnt/cpfs', 'node1:/gv0', 'glusterfs',
         'defaults,_netdev') }}
"""

RETURN = r"""
_value:
  description: C(fstab) (the line is there) and C(mounted) (the source is mounted there).
  type: dict
"""

from ansible_collections.scc.nlp_training.plugins.plugin_utils.shared_storage import mount_state


def storage_mount_state(fstab, mounted, path, src, fstype, opts):
    """{fstab, mounted}."""
    return mount_state(str(fstab or ""), dict(mounted) if mounted else None, str(path), str(src), str(fstype),
                       str(opts))


class FilterModule(object):
    """scc.nlp_training.storage_mount_state"""

    def filters(self):
        return {"storage_mount_state": storage_mount_state}
