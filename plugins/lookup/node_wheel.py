# Copyright: scc.nlp_training contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
name: node_wheel
short_description: Builds the node-side wheel (sccnlp-node) on the controller and returns its path and sha256
version_added: "0.2.0"
author: scc.nlp_training contributors (!UNKNOWN)
description:
  - Builds C(sccnlp-node), the node-side package C(sccnlp/node) (data preparation, trainer, validation gates, the
    RDMA counter reader) with a stub C(sccnlp/__init__.py) holding the version, with setuptools through
    C(pip wheel --no-build-isolation --no-index) of the controller's Python, from the collection's own sources (a
    checkout or an installed collection alike). The controller side of C(sccnlp) is not in it.
  - The build is reproducible (fixed timestamps); the same sources give the same bytes and sha256, and an unchanged
    wheel already in O(dir) is left untouched.
  - Used by the C(_node_programs) role, the one way node programs reach the nodes.
options:
  dir:
    description: Controller directory the wheel is written to.
    type: path
    default: ~/.sccnlp/build
"""

EXAMPLES = r"""
- name: Build the node wheel once
  ansible.builtin.set_fact:
    wheel: "{{ lookup('scc.nlp_training.node_wheel') }}"
  run_once: true
"""

RETURN = r"""
_raw:
  description: One dictionary with C(path), C(name), C(sha256) (hex) and C(version) of the wheel.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.scc.nlp_training.plugins.plugin_utils.node_wheel import NodeWheelError, build


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        try:
            return [build(self.get_option("dir"))]
        except NodeWheelError as exc:
            raise AnsibleLookupError(str(exc)) from exc
