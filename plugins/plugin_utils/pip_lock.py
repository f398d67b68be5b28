# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The pip hash lock (sccnlp/data/pip_lock.yml, or a user's lock of the same form) as the roles use it: a named set
of pins rendered as a requirements file with --hash lines for `pip install --require-hashes`, and the check that
the set pins every spec a role asks for. Pure functions: the filter plugin and the sccnlp tool share them.

A lock: {target: {python, platform, release}, sets: {NAME: {requires: [name==version, ...], pins: [{name, version,
file, sha256}, ...]}}, unresolved: {NAME: why}}."""

from __future__ import annotations

import json
import re

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SPEC = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<extras>\[[^\]]*\])?\s*==\s*(?P<version>[^\s;,]+)\s*$")
FIX = ("resolve a lock for these versions (python -m sccnlp.piplock OUT.yml on the nodes' Python, docs/RUNTIME.md) "
       "and set python36_pip_lock_file to it, or keep the pinned defaults")


def normalize_name(name):
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", str(name)).lower()


def parse_spec(spec):
    """(normalised name, version) of an exact `name==version` spec (extras allowed); ValueError otherwise."""
    match = _SPEC.match(str(spec))
    if not match:
        raise ValueError("requirement %r is not pinned as name==version; hash-checked installs need exact pins" % spec)
    return normalize_name(match.group("name")), match.group("version")


def requirements_text(pins):
    """A requirements file for `pip install --require-hashes -r`: one `name==version --hash=sha256:...` a line."""
    lines = sorted("%s==%s --hash=sha256:%s" % (p["name"], p["version"], p["sha256"]) for p in pins)
    return "\n".join(lines) + "\n"


def check_set(lock, set_name, specs):
    """What a role needs from a lock: {'ok', 'requirements', 'error'}; never raises.

    ok: the set exists, its pins are well formed and every spec is pinned at that version there. error: one
    sentence naming the set, the spec and the fix (the role prefixes the node and its setting)."""
    sets = (lock or {}).get("sets") if isinstance(lock, dict) else None
    if not isinstance(sets, dict):
        return _fail("the pip lock has no `sets` mapping; %s" % FIX)
    entry = sets.get(set_name)
    if not isinstance(entry, dict):
        why = (lock.get("unresolved") or {}).get(set_name)
        return _fail("the pip lock has no set %r (%s); %s"
                     % (set_name, ("not resolved: %s" % why) if why else
                        "it has: %s" % (", ".join(sorted(sets)) or "none"), FIX))
    pins = entry.get("pins") or []
    pinned = {}
    for pin in pins:
        if not (isinstance(pin, dict) and pin.get("name") and pin.get("version")
                and _SHA256.match(str(pin.get("sha256", "")))):
            return _fail("the pip lock's set %r has a malformed pin %r (name, version and a sha256 of 64 hex "
                         "digits); %s" % (set_name, pin, FIX))
        pinned[normalize_name(pin["name"])] = str(pin["version"])
    if not pinned:
        return _fail("the pip lock's set %r pins nothing; %s" % (set_name, FIX))
    for spec in specs:
        try:
            name, version = parse_spec(spec)
        except ValueError as exc:
            return _fail(str(exc))
        if pinned.get(name) != version:
            have = pinned.get(name)
            return _fail("%s is not in the pip lock's set %r (%s); %s"
                         % (spec, set_name, ("it pins %s==%s" % (name, have)) if have else "it has no %s" % name, FIX))
    return {"ok": True, "requirements": requirements_text(pins), "error": ""}


def unmet(requirements, installed):
    """What a venv lacks of a requirements file written by requirements_text: `name==version` lines (with or
    without --hash) against `installed`, {distribution name: version} as read in the venv. Returns the sorted
    `name==version (has X)` / `name==version (missing)` entries; empty when every pin is installed at its version.
    Names compare PEP 503-normalised, versions as written (a local label such as +cpu included); a line that is not
    a `name==version` pin (a wheel's path) is always unmet, so its install runs."""
    have = {normalize_name(name): str(version) for name, version in (installed or {}).items()}
    out = []
    for line in str(requirements or "").splitlines():
        spec = line.split(" --hash", 1)[0].strip()
        if not spec or spec.startswith("#"):
            continue
        try:
            name, version = parse_spec(spec)
        except ValueError:
            out.append("%s (not a name==version pin)" % spec)
            continue
        if have.get(name) != version:
            out.append("%s==%s (%s)" % (name, version, ("has %s" % have[name]) if name in have else "missing"))
    return sorted(out)


def read_installed(stdout):
    """The venv's {distribution name: version} from the JSON object the version read prints, or None when its output
    is not one (an interpreter that printed something else): the caller then treats every pin as unmet."""
    try:
        got = json.loads(str(stdout or ""))
    except ValueError:
        return None
    if not isinstance(got, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in got.items()):
        return None
    return got


def _fail(message):
    return {"ok": False, "requirements": "", "error": message}
