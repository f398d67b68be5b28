# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter openmpi_problems: the openmpi role's verify checks (thin wrapper over plugin_utils.openmpi)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Documented in openmpi_problems.yml beside this file: ansible-doc reads it.

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.openmpi import openmpi_problems as _problems


def openmpi_problems(version, node, expected, info_lines, params, mca_file, bin_dir, launch=None):
    if not isinstance(version, dict) or not isinstance(params, dict):
        raise AnsibleFilterError("openmpi_problems expects the registered mpirun --version result and the MCA "
                                 "settings as dictionaries")
    return _problems(str(node), version, str(expected), list(info_lines or []), params, str(mca_file), str(bin_dir),
                     None if launch is None else dict(launch))


class FilterModule(object):
    """scc.nlp_training.openmpi_problems"""

    def filters(self):
        return {"openmpi_problems": openmpi_problems}
