#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0 (see galaxy.yml)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: local_fact
short_description: Record what a role installed as a local fact of the node
description:
  - Writes O(fact) as JSON to C(<dir>/<name>.fact), which Ansible reads back as C(ansible_local.<name>) on the next
    fact gathering. The folder is created when missing.
  - The file is replaced (atomically) only when the recorded fact differs from O(fact) or is not valid JSON, so a
    re-run that records the same fact changes nothing; mode C(0644), owner and group root when run as root.
  - One module run does what a folder task and a copy task did; supports check mode and diff mode.
version_added: "0.4.0"
author: scc.nlp_training contributors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  name:
    description:
      - The fact's name, C(scc_<role>) by convention (letters, digits and underscores).
      - One of O(name) and O(path) is required.
    type: str
  path:
    description:
      - The fact file's full path instead of O(name) and O(dir); it ends in C(.fact).
    type: path
  fact:
    description: What to record.
    type: dict
    required: true
  dir:
    description: The local facts folder.
    type: path
    default: /etc/ansible/facts.d
"""

EXAMPLES = r"""
- name: Record the installed cuda as a local fact
  scc.nlp_training.local_fact:
    name: scc_cuda
    fact:
      method: pip
      version: "12.9.79"

- name: Record the venv at a configured path
  scc.nlp_training.local_fact:
    path: /etc/ansible/facts.d/scc_python36.fact
    fact:
      venv: /opt/scc/venv
"""

RETURN = r"""
path:
  description: The fact file.
  returned: always
  type: str
  sample: /etc/ansible/facts.d/scc_cuda.fact
fact:
  description: The fact as recorded.
  returned: always
  type: dict
"""

import json
import os
import re
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.scc.nlp_training.plugins.module_utils.scc_files import render_fact, same_fact

_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def _recorded(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


def main():
    module = AnsibleModule(
        argument_spec={"name": {"type": "str"}, "path": {"type": "path"}, "fact": {"type": "dict", "required": True},
                       "dir": {"type": "path", "default": "/etc/ansible/facts.d"}},
        required_one_of=[("name", "path")],
        mutually_exclusive=[("name", "path")],
        supports_check_mode=True,
    )
    fact = module.params["fact"]
    if module.params["path"]:
        folder, base = os.path.split(module.params["path"])
        name = base[:-len(".fact")] if base.endswith(".fact") else ""
    else:
        folder, name = module.params["dir"], module.params["name"]
    if not _NAME.match(name):
        module.fail_json(msg="local_fact: the fact name %r may hold only letters, digits and underscores and the "
                             "file must end in .fact (it becomes ansible_local.<name>)" % name)
    path = os.path.join(folder, name + ".fact")
    # Compare what a reader gets back: JSON round-trips the module's arguments the same way.
    wanted = json.loads(json.dumps(fact))
    before = _recorded(path)
    text = render_fact(wanted)
    changed = not same_fact(before, wanted)
    result = {"path": path, "fact": wanted, "changed": changed}
    if module._diff:
        result["diff"] = {"before": before or "", "after": text, "before_header": path, "after_header": path}
    if changed and not module.check_mode:
        try:
            if not os.path.isdir(folder):
                os.makedirs(folder, 0o755)
            handle, tmp = tempfile.mkstemp(dir=folder, prefix="." + name + ".")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(tmp, 0o644)
            module.atomic_move(tmp, path)
        except OSError as exc:
            module.fail_json(msg="local_fact: cannot write %s: %s" % (path, exc), path=path)
    if os.path.exists(path) and not module.check_mode:
        owner = {"owner": "root", "group": "root"} if os.geteuid() == 0 else {}
        file_args = module.load_file_common_arguments(dict(owner, path=path, mode="0644"))
        result["changed"] = module.set_fs_attributes_if_different(file_args, result["changed"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
