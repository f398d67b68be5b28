# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filters of the framework roles' checks (thin wrappers over plugin_utils.frameworks)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Each filter is documented in its own file beside this one (<name>.yml): ansible-doc reads those.

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils import frameworks


def _mapping(value, name):
    if not isinstance(value, dict):
        raise AnsibleFilterError("%s expects a dictionary, got %s" % (name, type(value).__name__))
    return value


def pytorch_settings_problems(version, node, requirements, compat):
    return frameworks.pytorch_settings_problems(str(node), str(version), list(requirements or []),
                                                _mapping(compat, "pytorch_settings_problems"))


def pytorch_adopt_problems(probe, node, python, exists, adopt_version=""):
    return frameworks.pytorch_adopt_problems(str(node), str(python), bool(exists), dict(probe or {}),
                                             str(adopt_version or ""))


def pytorch_problems(info, node, settings):
    return frameworks.pytorch_problems(str(node), _mapping(info, "pytorch_problems"),
                                       _mapping(settings, "pytorch_problems"))


def tensorflow_problems(probe, node, venv, version, gpus):
    try:
        return frameworks.tensorflow_problems(str(node), _mapping(probe, "tensorflow_problems"), str(venv),
                                              str(version), int(gpus))
    except ValueError as exc:
        raise AnsibleFilterError("tensorflow_problems: the probe's last line is not JSON (%s)" % exc) from None


class FilterModule(object):
    """scc.nlp_training framework checks"""

    def filters(self):
        return {
            "pytorch_settings_problems": pytorch_settings_problems,
            "pytorch_adopt_problems": pytorch_adopt_problems,
            "pytorch_problems": pytorch_problems,
            "tensorflow_problems": tensorflow_problems,
        }
