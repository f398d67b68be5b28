#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0 (see galaxy.yml)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: node_probe
short_description: Everything a role phase reads on a node, in one module run
description:
  - Runs the read-only commands of O(commands), looks at the paths of O(files) (and reads them where asked), lists
    the paths O(globs) match, and says what is mounted at each of O(mounts); returns all of it for the role's checks
    (pure functions in the collection's C(plugin_utils), behind filters) to judge.
  - Never changes anything; runs in check mode too. A command that cannot start is reported with rc 127 and the
    reason, not as a failure of the module.
version_added: "0.4.0"
author: scc.nlp_training contributors (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  commands:
    description: Name to the command to run, C(argv) (a list), with optional C(env) (a dictionary added to the
      environment), C(stdin) and C(timeout) (seconds, default 300).
    type: dict
    default: {}
  files:
    description: Name to C(path), with optional C(read) (return the text, up to 1 MiB) and C(checksum) (sha256).
    type: dict
    default: {}
  globs:
    description: Name to a shell pattern, or to C(pattern) (one or a list) with C(read) (return each file's text as
      well); the sorted paths they match.
    type: dict
    default: {}
  mounts:
    description: Mount points; for each, what is mounted there (from C(/proc/self/mountinfo)).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Read what the verify phase needs
  scc.nlp_training.node_probe:
    commands:
      version: {argv: [mpirun, --version]}
    files:
      hostfile: {path: /etc/scc/mpihosts, read: true}
    globs:
      host_keys: /etc/ssh/ssh_host_*_key.pub
    mounts: [/mnt/cpfs]
  register: probe
"""

RETURN = r"""
commands:
  description: Name to C(rc), C(stdout), C(stderr) (and C(stdout_lines)).
  returned: always
  type: dict
files:
  description: Name to C(path), C(exists), C(isdir), C(size), C(mode), C(owner), C(group) (names, else ids), C(content)
    (when read), C(sha256) (when asked).
  returned: always
  type: dict
globs:
  description: Name to the sorted list of paths, or of C(path), C(content) entries when C(read) was asked.
  returned: always
  type: dict
mounts:
  description: Mount point to C(fstype) and C(source), or none when nothing is mounted there.
  returned: always
  type: dict
"""

import glob
import grp
import hashlib
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text

MAX_READ = 1048576


def _command(module, spec):
    """Run one command: its own timeout through coreutils' timeout (rc 124 when it ran out), its stdin and
    environment additions; the result as the command module gives it."""
    argv = [str(a) for a in spec.get("argv") or []]
    if not argv:
        return {"rc": 2, "stdout": "", "stderr": "no argv", "stdout_lines": []}
    timeout = int(spec.get("timeout") or 300)
    env = {str(k): str(v) for k, v in (spec.get("env") or {}).items()}
    try:
        rc, out, err = module.run_command(["timeout", "-k", "5", str(timeout), *argv], data=spec.get("stdin"),
                                          binary_data=True, environ_update=env, handle_exceptions=False)
    except OSError as exc:
        return {"rc": 127, "stdout": "", "stderr": str(exc), "stdout_lines": []}
    out, err = to_text(out), to_text(err)
    if rc == 124:
        err = ("timed out after %ss. %s" % (timeout, err)).strip()
    return {"rc": rc, "stdout": out.rstrip("\n"), "stderr": err.rstrip("\n"), "stdout_lines": out.splitlines()}


def _name(lookup, number):
    """The user or group name of an id, else the id as text (an id without an entry)."""
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def _file(spec):
    path = spec["path"]
    out = {"path": path, "exists": False, "isdir": False, "size": -1, "mode": ""}
    try:
        info = os.stat(path)
    except OSError as exc:
        out["error"] = str(exc)
        return out
    out.update(exists=True, isdir=stat.S_ISDIR(info.st_mode), size=info.st_size,
               mode="%04o" % stat.S_IMODE(info.st_mode), owner=_name(pwd.getpwuid, info.st_uid),
               group=_name(grp.getgrgid, info.st_gid))
    if out["isdir"]:
        return out
    try:
        if spec.get("read"):
            with open(path, "rb") as handle:
                out["content"] = to_text(handle.read(MAX_READ), errors="surrogate_or_replace")
        if spec.get("checksum"):
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for chunk in iter(lambda: handle.read(MAX_READ), b""):
                    digest.update(chunk)
            out["sha256"] = digest.hexdigest()
    except OSError as exc:
        out["error"] = str(exc)
    return out


def _glob(spec):
    pattern, read = (spec.get("pattern"), spec.get("read")) if isinstance(spec, dict) else (spec, False)
    patterns = pattern if isinstance(pattern, list) else [pattern]
    paths = sorted({path for one in patterns for path in glob.glob(str(one))})
    if not read:
        return paths
    return [dict(_file({"path": path, "read": True}), path=path) for path in paths]


def _mounts(points):
    wanted = {os.path.realpath(p): p for p in points}
    found = dict.fromkeys(points)
    try:
        with open("/proc/self/mountinfo") as handle:
            for line in handle:
                left, _sep, right = line.partition(" - ")
                fields, tail = left.split(), right.split()
                where = fields[4].replace("\\040", " ") if len(fields) > 4 else ""
                if where in wanted and len(tail) > 1:
                    found[wanted[where]] = {"fstype": tail[0], "source": tail[1]}
    except OSError:
        pass
    return found


def main():
    module = AnsibleModule(
        argument_spec={"commands": {"type": "dict", "default": {}}, "files": {"type": "dict", "default": {}},
                       "globs": {"type": "dict", "default": {}},
                       "mounts": {"type": "list", "elements": "str", "default": []}},
        supports_check_mode=True,
    )
    p = module.params
    for name, spec in p["files"].items():
        if not isinstance(spec, dict) or not spec.get("path"):
            module.fail_json(msg="node_probe: files.%s needs a path" % name)
    module.exit_json(
        changed=False,
        commands={name: _command(module, spec or {}) for name, spec in p["commands"].items()},
        files={name: _file(spec) for name, spec in p["files"].items()},
        globs={name: _glob(spec) for name, spec in p["globs"].items()},
        mounts=_mounts(p["mounts"]),
    )


if __name__ == "__main__":
    main()
