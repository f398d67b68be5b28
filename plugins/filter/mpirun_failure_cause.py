# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filter `mpirun_failure_cause`: what a failed mpirun printed -> one line with its cause and fix (thin wrapper over
plugin_utils.mpirun_output)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: mpirun_failure_cause
author: scc.nlp_training maintainers (!UNKNOWN)
version_added: 0.4.0
short_description: The cause of an mpirun failure, found in its output
description:
  - Open MPI ends most failures with paragraphs of generic help text. This filter finds the line that says why
    (host key verification, a name that does not resolve, a refused or impossible SSH connection, a missing
    C(orted), a lost daemon, a program that cannot be executed, too few slots, a rank that exited or died on a
    signal, with that rank's own error line) and returns it first, with the fix where one is known.
options:
  _input:
    description: What mpirun printed, stdout and stderr together, as one text or as a list of texts or lines (for
      example C([run.stderr, run.stdout]), or the lines of a log).
    type: raw
    required: true
  rc:
    description: The exit status of mpirun (124 when C(timeout) stopped it).
    type: raw
  rank_hosts:
    description: The node of each rank, in rank order, to name the node of a failed rank.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Say why mpirun failed
  ansible.builtin.debug:
    msg: "mpirun failed: {{ [run.stderr, run.stdout] | scc.nlp_training.mpirun_failure_cause(rc=run.rc) }}"
"""

RETURN = r"""
_value:
  description: One line, the cause first (for example that node2 does not resolve), then C(Fix:) and what to do
    where that is known.
  type: str
"""

from ansible_collections.scc.nlp_training.plugins.plugin_utils.filter_input import tool_text
from ansible_collections.scc.nlp_training.plugins.plugin_utils.mpirun_output import failure_cause


def mpirun_failure_cause(output, rc=None, rank_hosts=None):
    """The cause line; raise AnsibleFilterError for input that is neither mpirun's text nor a list of its texts."""
    if isinstance(output, (list, tuple)):
        text = "\n".join(tool_text(part, "mpirun_failure_cause", "mpirun") for part in output)
    else:
        text = tool_text(output, "mpirun_failure_cause", "mpirun")
    return failure_cause(text, rc, [str(h) for h in rank_hosts or []])


class FilterModule(object):
    """scc.nlp_training.mpirun_failure_cause"""

    def filters(self):
        return {"mpirun_failure_cause": mpirun_failure_cause}
