"""The wheels of a bundle: the pins of the pip lock sets the plan names, fetched with `pip download` for the nodes'
interpreter and platform (not the controller's), each file's sha256 checked against the lock. A file already in the
bundle that matches the lock is reused without running pip.

pip runs with the controller's own pip configuration (index, find-links), which can carry credentials: its output
is never shown as is, only its ERROR lines with every URL reduced to scheme, host and path."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sccnlp.bundle.manifest import safe_source
from sccnlp.errors import SccError
from sccnlp.node.filehash import sha256_file

WHEELS = "wheels"
# The newest glibc of each release the lock targets (manylinux_2_N tags up to it install there).
_GLIBC = {"debian-12": 36, "debian-11": 31}
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")


@dataclass(frozen=True)
class Wheel:
    name: str
    version: str
    file: str
    sha256: str
    role: str


def lock_target(lock: Mapping[str, Any], where: str) -> tuple[str, str, str]:
    """(python, platform, release) of a lock; SccError naming the lock when it does not say."""
    target = lock.get("target") or {}
    python, platform, release = (str(target.get(k, "")) for k in ("python", "platform", "release"))
    if not re.fullmatch(r"3\.\d+", python) or not platform.startswith("linux_") or release not in _GLIBC:
        raise SccError(f"the pip lock {where} has no usable target (python {python or '?'}, platform "
                       f"{platform or '?'}, release {release or '?'}); resolve it with python -m sccnlp.piplock")
    return python, platform, release


def wheels_for(lock: Mapping[str, Any], sets_by_role: Mapping[str, Sequence[str]], where: str) -> list[Wheel]:
    """Every file of the sets, each once (attributed to the first role, in the plan's order); SccError naming the
    set and the setting when the lock lacks it."""
    out: dict[str, Wheel] = {}
    sets = lock.get("sets") or {}
    for role, names in sets_by_role.items():
        for name in names:
            entry = sets.get(name)
            if not isinstance(entry, dict):
                raise SccError(f"the pip lock {where} has no set {name!r} (needed by {role}; it has "
                               f"{', '.join(sorted(sets)) or 'none'}): set {role}_pip_lock_set to one of them or "
                               "python36_pip_lock_file to a lock that has it")
            for pin in entry.get("pins") or []:
                wheel = Wheel(str(pin["name"]), str(pin["version"]), str(pin["file"]), str(pin["sha256"]), role)
                if not wheel.file.endswith(".whl") or "/" in wheel.file:
                    raise SccError(f"the pip lock {where}, set {name}: {wheel.file} is not a wheel file name; "
                                   "the bundle holds wheels only (resolve the lock with binary_only)")
                out.setdefault(wheel.file, wheel)
    return list(out.values())


def platform_tags(platform: str, release: str) -> list[str]:
    """pip --platform values for a lock platform such as linux_x86_64 on a release (manylinux up to its glibc)."""
    arch = platform.split("_", 1)[1]
    newest = _GLIBC[release]
    tags = [f"manylinux_2_{n}_{arch}" for n in range(newest, 4, -1)]
    legacy = {"manylinux2014": 17, "manylinux2010": 12, "manylinux1": 5}
    tags += [f"{name}_{arch}" for name, glibc in legacy.items() if glibc <= newest]
    return [*tags, platform]


def requirement_line(wheel: Wheel) -> str:
    return f"{wheel.name}=={wheel.version} --hash=sha256:{wheel.sha256}"


def pip_argv(python: str, platform: str, release: str, requirements: Path, dest: Path,
             pip: Sequence[str] = (sys.executable, "-m", "pip")) -> list[str]:
    """`pip download` of hash-pinned requirements for the target, wheels only, no dependency resolution (the lock
    has resolved them)."""
    nodot = python.replace(".", "")
    argv = [*pip, "download", "--only-binary=:all:", "--no-deps", "--require-hashes", "--disable-pip-version-check",
            "--quiet", "--python-version", python, "--implementation", "cp", "--abi", f"cp{nodot}"]
    for tag in platform_tags(platform, release):
        argv += ["--platform", tag]
    return [*argv, "--dest", str(dest), "-r", str(requirements)]


def redact(text: str) -> str:
    """Text with every URL reduced to scheme, host and path (no user info, query or fragment)."""
    return _URL.sub(lambda m: safe_source(m.group(0)), text)


def pip_error(stderr: str) -> str:
    """The gist of a failed pip run, one line, URLs redacted."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")] or lines[-2:]
    return redact(" ".join(errors))[:400] or "pip failed without a message"


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False)


def fetch(bundle: Path, wheels: Sequence[Wheel], python: str, platform: str, release: str,
          run: Any = None) -> tuple[list[Wheel], dict[str, str], int]:
    """Fetch what is missing or does not match the lock; (wheels present and verified, unfetched file -> why,
    how many were reused). One pip run for all, then one per file when it fails (to name the file)."""
    run = run or _run
    dest = bundle / WHEELS
    dest.mkdir(parents=True, exist_ok=True)
    reused = 0
    todo: list[Wheel] = []
    for wheel in wheels:
        path = dest / wheel.file
        if path.is_file() and sha256_file(path) == wheel.sha256:
            reused += 1
        else:
            path.unlink(missing_ok=True)
            todo.append(wheel)
    unfetched: dict[str, str] = {}
    if todo:
        work = bundle / ".work"
        work.mkdir(exist_ok=True)
        req = work / "requirements.txt"
        req.write_text("".join(requirement_line(w) + "\n" for w in todo))
        proc = run(pip_argv(python, platform, release, req, dest))
        if proc.returncode != 0:
            for wheel in todo:
                if (dest / wheel.file).is_file():
                    continue
                req.write_text(requirement_line(wheel) + "\n")
                one = run(pip_argv(python, platform, release, req, dest))
                if one.returncode != 0:
                    unfetched[wheel.file] = pip_error(one.stderr)
    done: list[Wheel] = []
    for wheel in wheels:
        path = dest / wheel.file
        if wheel.file in unfetched:
            continue
        if not path.is_file():
            unfetched[wheel.file] = ("pip did not save this file (another file of the same version was chosen: "
                                     "check the lock's file names against the index)")
            continue
        digest = sha256_file(path)
        if digest != wheel.sha256:
            path.unlink()
            unfetched[wheel.file] = (f"sha256 {digest} differs from the lock's {wheel.sha256}; the file was "
                                     "removed (a changed file on the index, or a proxy's substitute)")
            continue
        done.append(wheel)
    return done, unfetched, reused
