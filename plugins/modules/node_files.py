#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0 (see galaxy.yml)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: node_files
short_description: Put a role's files, marked blocks, folders, links and local facts on a node in one module run
description:
  - Brings every entry of O(files) to its state - a folder, a file with the given content, a marked block inside a
    file (the way M(ansible.builtin.blockinfile) edits one, so files it wrote are seen as unchanged), a symbolic
    link, or nothing - and writes the local facts of O(facts). Owner, group and mode are set where given.
  - A file or block is rewritten (atomically, in its folder) only when its text differs; a re-run that changes
    nothing reads each file once and writes nothing. Templates are rendered on the controller and passed as content.
  - One module run does what a task per file did (M(ansible.builtin.copy), M(ansible.builtin.template),
    M(ansible.builtin.blockinfile), M(ansible.builtin.file)); supports check mode and diff mode.
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
  files:
    description: The entries, applied in order.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The path on the node.
        type: path
        required: true
      state:
        description:
          - V(file) the whole file is O(files[].content); V(block) the marked block O(files[].block) in the file;
            V(block_absent) that block removed; V(directory) a folder; V(link) a symbolic link to O(files[].src);
            V(absent) nothing at the path (a folder is removed with what it holds).
        type: str
        choices: [file, block, block_absent, directory, link, absent]
        default: file
      content:
        description: The file's text (state V(file)).
        type: str
      secret_content:
        description: The file's text when it is a secret (a private key); never shown, logged or diffed.
        type: str
      block:
        description: The block's text (state V(block)).
        type: str
      marker:
        description: The block's marker line, C({mark}) replaced by C(BEGIN) and C(END).
        type: str
        default: "# {mark} ANSIBLE MANAGED BLOCK"
      src:
        description: The link's target (state V(link)).
        type: str
      mode:
        description: The mode, as a quoted octal string.
        type: raw
      owner:
        description: The owner.
        type: str
      group:
        description: The group.
        type: str
      unsafe_writes:
        description: Write the file in place when an atomic rename cannot replace it (a bind-mounted /etc/hosts).
        type: bool
        default: false
      backup:
        description: Keep a time-stamped copy of a file before replacing its text.
        type: bool
        default: false
  facts:
    description:
      - Local facts to record, name to dictionary, written to C(<facts_dir>/<name>.fact) when the recorded fact
        differs (compared as data), as M(scc.nlp_training.local_fact) does.
    type: dict
    default: {}
  facts_dir:
    description: The local facts folder.
    type: path
    default: /etc/ansible/facts.d
"""

EXAMPLES = r"""
- name: Write the cluster files
  scc.nlp_training.node_files:
    files:
      - path: /etc/hosts
        state: block
        marker: "# {mark} scc.nlp_training cluster"
        block: "10.0.0.11 node1\n10.0.0.12 node2"
      - path: /etc/scc
        state: directory
        mode: "0755"
      - path: /etc/scc/mpihosts
        content: "node1 slots=8\nnode2 slots=8\n"
        mode: "0644"
    facts:
      scc_cluster:
        nodes: [node1, node2]
"""

RETURN = r"""
results:
  description: One entry per file and fact, with C(path), C(state) and C(changed).
  returned: always
  type: list
  elements: dict
"""

import os
import re
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.scc.nlp_training.plugins.module_utils.scc_files import edit_block, render_fact, same_fact

_FACT = re.compile(r"^[A-Za-z0-9_]+$")


def _read(path):
    try:
        with open(path, "rb") as handle:
            return to_text(handle.read(), errors="surrogate_or_strict")
    except (OSError, IOError):
        return None


def _write(module, path, text, unsafe):
    folder = os.path.dirname(path)
    if folder and not os.path.isdir(folder):
        os.makedirs(folder, 0o755)
    handle, tmp = tempfile.mkstemp(dir=folder or ".", prefix=".scc-")
    with os.fdopen(handle, "wb") as out:
        out.write(to_bytes(text, errors="surrogate_or_strict"))
    if os.path.exists(path):
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)
    module.atomic_move(tmp, path, unsafe_writes=unsafe)


def _attributes(module, entry, changed):
    if module.check_mode and not os.path.lexists(entry["path"]):
        return changed or any(entry.get(k) is not None for k in ("mode", "owner", "group"))
    args = module.load_file_common_arguments({"path": entry["path"], "mode": entry.get("mode"),
                                              "owner": entry.get("owner"), "group": entry.get("group")})
    return module.set_fs_attributes_if_different(args, changed)


def _apply(module, entry, diffs):
    path, state = entry["path"], entry["state"]
    changed = False
    if state == "directory":
        if not os.path.isdir(path):
            changed = True
            if not module.check_mode:
                os.makedirs(path, 0o755)
        return _attributes(module, entry, changed)
    if state == "absent":
        if os.path.lexists(path):
            changed = True
            if not module.check_mode:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
        return changed
    if state == "link":
        if os.path.islink(path) and os.readlink(path) == entry["src"]:
            return False
        if not module.check_mode:
            if os.path.lexists(path):
                os.remove(path)
            os.symlink(entry["src"], path)
        return True
    before = _read(path)
    if state == "file":
        secret = entry.get("secret_content") is not None
        after = entry["secret_content"] if secret else entry.get("content") or ""
    else:
        if state == "block_absent" and before is None:
            return False
        after = edit_block(before, entry.get("block") or "", entry["marker"], present=state == "block")
    if after != before:
        changed = True
        if not (state == "file" and secret):
            diffs.append({"before": before or "", "after": after, "before_header": path, "after_header": path})
        if not module.check_mode:
            if entry.get("backup") and before is not None:
                module.backup_local(path)
            _write(module, path, after, entry.get("unsafe_writes"))
    return _attributes(module, entry, changed)


def main():
    module = AnsibleModule(
        argument_spec={
            "files": {"type": "list", "elements": "dict", "default": [], "options": {
                "path": {"type": "path", "required": True},
                "state": {"type": "str", "default": "file",
                          "choices": ["file", "block", "block_absent", "directory", "link", "absent"]},
                "content": {"type": "str"}, "secret_content": {"type": "str", "no_log": True}, "block": {"type": "str"},
                "marker": {"type": "str", "default": "# {mark} ANSIBLE MANAGED BLOCK"},
                "src": {"type": "str"}, "mode": {"type": "raw"}, "owner": {"type": "str"},
                "group": {"type": "str"}, "unsafe_writes": {"type": "bool", "default": False},
                "backup": {"type": "bool", "default": False}}},
            "facts": {"type": "dict", "default": {}},
            "facts_dir": {"type": "path", "default": "/etc/ansible/facts.d"},
        },
        supports_check_mode=True,
    )
    results, diffs = [], []
    for entry in module.params["files"]:
        if entry["state"] == "link" and not entry.get("src"):
            module.fail_json(msg="node_files: %s: state link needs src" % entry["path"])
        try:
            changed = _apply(module, entry, diffs)
        except (OSError, IOError) as exc:
            module.fail_json(msg="node_files: cannot bring %s to state %s: %s" % (entry["path"], entry["state"], exc),
                             results=results)
        results.append({"path": entry["path"], "state": entry["state"], "changed": changed})
    for name, fact in sorted(module.params["facts"].items()):
        if not _FACT.match(name) or not isinstance(fact, dict):
            module.fail_json(msg="node_files: fact %r must be a dictionary named with letters, digits and "
                                 "underscores (it becomes ansible_local.%s)" % (name, name))
        path = os.path.join(module.params["facts_dir"], name + ".fact")
        before = _read(path)
        changed = not same_fact(before, fact)
        if changed:
            diffs.append({"before": before or "", "after": render_fact(fact), "before_header": path,
                          "after_header": path})
            if not module.check_mode:
                try:
                    _write(module, path, render_fact(fact), False)
                except (OSError, IOError) as exc:
                    module.fail_json(msg="node_files: cannot write the local fact %s: %s" % (path, exc))
        entry = {"path": path, "mode": "0644"}
        if os.geteuid() == 0:
            entry.update(owner="root", group="root")
        if os.path.exists(path) or module.check_mode:
            changed = _attributes(module, entry, changed)
        results.append({"path": path, "state": "fact", "changed": changed})
    result = {"changed": any(r["changed"] for r in results), "results": results}
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
