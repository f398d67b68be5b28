# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filters over the GPU stack compatibility matrix (thin wrappers over module_utils.scc_compat)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Each filter is documented in its own file beside this one (compat_<name>.yml): ansible-doc reads those.

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.module_utils import scc_compat


def _matrix(matrix):
    if not isinstance(matrix, dict) or matrix.get("schema") != 1:
        raise AnsibleFilterError("the compatibility matrix must be the loaded sccnlp/data/compat_matrix.yml "
                                 "(schema 1); check compat_check_matrix_file")
    return matrix


def compat_check_plan(plan, matrix):
    if not isinstance(plan, dict):
        raise AnsibleFilterError("compat_check_plan expects a dictionary plan, got %s" % type(plan).__name__)
    return scc_compat.check_plan(_matrix(matrix), plan)


def compat_check_kernels(kernels):
    return scc_compat.check_kernels(dict(kernels or {}))


def compat_arch(value, matrix, model="", chip=""):
    return scc_compat.resolve_arch(_matrix(matrix), pci_device_id=value or "", model=model, chip=chip)


def compat_version_matches(actual, pin):
    return scc_compat.version_matches(pin, actual)


def compat_package_repo(matrix, distribution, version):
    return scc_compat.package_repo(_matrix(matrix), distribution, version)


class FilterModule(object):
    def filters(self):
        return {
            "compat_check_plan": compat_check_plan,
            "compat_check_kernels": compat_check_kernels,
            "compat_arch": compat_arch,
            "compat_version_matches": compat_version_matches,
            "compat_package_repo": compat_package_repo,
        }
