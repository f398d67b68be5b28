# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filters of the GPU stack roles' checks (thin wrappers over plugin_utils.gpu_stack)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Each filter is documented in its own file beside this one (<name>.yml): ansible-doc reads those.

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils import gpu_stack


def _mapping(value, name, what):
    if not isinstance(value, dict):
        raise AnsibleFilterError("%s expects %s as a dictionary, got %s" % (name, what, type(value).__name__))
    return value


def gpu_component_plan(settings, node, component):
    if component not in gpu_stack.COMPONENTS:
        raise AnsibleFilterError("gpu_component_plan: component must be one of %s, got %r"
                                 % (", ".join(gpu_stack.COMPONENTS), component))
    return gpu_stack.component_plan(str(node), component, _mapping(settings, "gpu_component_plan", "the settings"))


def gpu_library_problems(lib, node, component, method, version, venv, soname, search):
    return gpu_stack.library_problems(str(node), str(component), _mapping(lib, "gpu_library_problems", "the library"),
                                      str(method), str(version), str(venv), str(soname), list(search))


def cuda_problems(settings, node, toolkit, runtime, driver_cuda=""):
    return gpu_stack.cuda_problems(str(node), _mapping(settings, "cuda_problems", "the settings"),
                                   _mapping(toolkit, "cuda_problems", "toolkit"),
                                   _mapping(runtime, "cuda_problems", "runtime"), str(driver_cuda or ""))


def gpu_driver_problems(found, node, settings):
    return gpu_stack.driver_problems(str(node), _mapping(found, "gpu_driver_problems", "the GPU facts"),
                                     _mapping(settings, "gpu_driver_problems", "the settings"))


class FilterModule(object):
    """scc.nlp_training GPU stack checks"""

    def filters(self):
        return {
            "gpu_component_plan": gpu_component_plan,
            "gpu_library_problems": gpu_library_problems,
            "cuda_problems": cuda_problems,
            "gpu_driver_problems": gpu_driver_problems,
        }
