# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filters of the aiacc role's decisions and checks (thin wrappers over plugin_utils.aiacc)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Each filter is documented in its own file beside this one (<name>.yml): ansible-doc reads those.

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils import aiacc


def _mapping(value, name):
    if not isinstance(value, dict):
        raise AnsibleFilterError("%s expects a dictionary, got %s" % (name, type(value).__name__))
    return value


def aiacc_plan(settings, node):
    return aiacc.aiacc_plan(str(node), _mapping(settings, "aiacc_plan"))


def aiacc_select(probe, requested, fallback, source, framework):
    return aiacc.aiacc_select(str(requested), str(fallback), str(source), str(framework),
                              None if probe is None else _mapping(probe, "aiacc_select"))


def aiacc_env(knobs, backend):
    try:
        return aiacc.aiacc_env(str(backend), _mapping(knobs, "aiacc_env"))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from None


def horovod_build_problems(text, node, framework, gpus):
    return aiacc.horovod_build_problems(str(text or ""), str(node), str(framework), int(gpus))


def aiacc_backend_problems(probe, node, backend, python, gpus):
    result = _mapping(probe, "aiacc_backend_problems")
    info, problems = aiacc.backend_problems(str(node), str(backend), result.get("rc"),
                                            list(result.get("stdout_lines") or []),
                                            list(result.get("stderr_lines") or []), str(python), int(gpus))
    return {"info": info, "problems": problems}


class FilterModule(object):
    """scc.nlp_training aiacc decisions"""

    def filters(self):
        return {
            "aiacc_plan": aiacc_plan,
            "aiacc_select": aiacc_select,
            "aiacc_env": aiacc_env,
            "horovod_build_problems": horovod_build_problems,
            "aiacc_backend_problems": aiacc_backend_problems,
        }
