# Copyright: scc.nlp_training contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
name: data
short_description: The collection's data files (compatibility matrix, floors, instance types), parsed
version_added: "0.2.0"
author: scc.nlp_training contributors (!UNKNOWN)
description:
  - Returns C(sccnlp/data/<name>) of this collection parsed as YAML, found the same way from a checkout and from an
    installed collection (never by a path relative to a role).
options:
  _terms:
    description: Data file names, for example C(compat_matrix.yml).
    required: true
    type: list
    elements: str
  path:
    description: Return the file's path instead of its content.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Read the compatibility matrix
  ansible.builtin.set_fact:
    matrix: "{{ lookup('scc.nlp_training.data', 'compat_matrix.yml') }}"
"""

RETURN = r"""
_raw:
  description: One parsed document (or path) per term.
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.scc.nlp_training.plugins.plugin_utils.data import DataFileError, data_path, load_data


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        want_path = self.get_option("path")
        try:
            return [data_path(term) if want_path else load_data(term) for term in terms]
        except DataFileError as exc:
            raise AnsibleLookupError(str(exc)) from exc
