# Copyright: scc.nlp_training contributors
# Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils.data import DataFileError, load_data
from ansible_collections.scc.nlp_training.plugins.plugin_utils.pip_lock import check_set, read_installed, unmet


def pip_lock_set(set_name, specs, lock_file=""):
    """{ok, requirements, error} of a set of the collection's pip lock (or of lock_file on the controller)."""
    if not isinstance(specs, (list, tuple)):
        raise AnsibleFilterError("pip_lock_set expects a list of name==version specs, got %s" % type(specs).__name__)
    if lock_file:
        if not os.path.isfile(lock_file):
            return {"ok": False, "requirements": "",
                    "error": "the pip lock file %s is not a file on the controller; give the path of a lock "
                             "written by python -m sccnlp.piplock, or leave it empty for the collection's" % lock_file}
        try:
            with open(lock_file) as handle:
                lock = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError) as exc:
            return {"ok": False, "requirements": "",
                    "error": "the pip lock file %s is not readable YAML (%s)" % (lock_file, " ".join(str(exc).split()))}
    else:
        try:
            lock = load_data("pip_lock.yml")
        except DataFileError as exc:
            raise AnsibleFilterError(str(exc)) from exc
    return check_set(lock, set_name, list(specs))


def pip_lock_unmet(requirements, installed):
    """The pins of a hashed requirements file that the venv does not have at their version (empty: all there).
    installed: the venv's {name: version}, or the version read's output as printed (a JSON object); output that is
    not one (an interpreter that printed something else) counts as an empty venv: every pin unmet, pip runs."""
    if isinstance(installed, str):
        installed = read_installed(installed) or {}
    if not isinstance(installed, dict):
        raise AnsibleFilterError("pip_lock_unmet expects the venv's {name: version} mapping or its JSON text, got %s"
                                 % type(installed).__name__)
    return unmet(requirements, installed)


class FilterModule(object):
    def filters(self):
        return {"pip_lock_set": pip_lock_set, "pip_lock_unmet": pip_lock_unmet}
