"""Hash locks for every pip install the roles make (sccnlp/data/pip_lock.yml).

A lock holds named *sets*: the requirement specs a role installs (``requires``) and the full resolution of them for
the nodes' interpreter and platform (``pins``: name, version, file name, sha256). The roles write a set as a
requirements file with ``--hash`` lines and install it with ``--require-hashes``, online and offline alike.

The sets are resolved cumulatively in the order the runtime phase installs them (python36, pytorch, tensorflow,
horovod), so one package has one version in the whole venv and a later role never moves an earlier role's pin.

This module is the pure part (report parsing, rendering, matching) plus ``resolve``, which runs pip's own resolver
(``pip install --dry-run --report``) on the controller; it must run on the nodes' interpreter and platform
(Python 3.11, linux x86_64: a Debian 12 controller or a test-bed node). No URL is recorded: a private index URL can
carry credentials, and the hash is what identifies a file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sccnlp.errors import SccError
from sccnlp.node.filehash import sha256_file
from sccnlp.paths import collection_module

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class LockError(SccError):
    """A lock, a set or a report is unusable; the message names it and the fix."""


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    file: str
    sha256: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "file": self.file, "sha256": self.sha256}


def _lockutils() -> Any:
    """plugins/plugin_utils/pip_lock.py: the rendering and checks the roles' filter uses."""
    return collection_module("plugins.plugin_utils.pip_lock")


def parse_spec(spec: str) -> tuple[str, str]:
    """(normalised name, version) of an exact name==version spec; LockError otherwise."""
    try:
        result: tuple[str, str] = _lockutils().parse_spec(spec)
    except ValueError as exc:
        raise LockError(str(exc)) from exc
    return result


def pins_from_report(report: Mapping[str, Any]) -> list[Pin]:
    """The pins of a ``pip install --report`` document, sorted by name; LockError for an item without a sha256."""
    pins = []
    for item in report.get("install") or []:
        meta = item.get("metadata") or {}
        info = item.get("download_info") or {}
        hashes = (info.get("archive_info") or {}).get("hashes") or {}
        digest = hashes.get("sha256") or ""
        if not digest:
            legacy = (info.get("archive_info") or {}).get("hash") or ""
            digest = legacy.split("=", 1)[1] if legacy.startswith("sha256=") else ""
        name = _lockutils().normalize_name(str(meta.get("name", "")))
        file_name = str(info.get("url", "")).rsplit("/", 1)[-1].split("#", 1)[0]
        if not digest and file_name and str(info.get("url", "")).startswith("file://"):
            digest = sha256_file(Path(_file_url_path(str(info["url"]))))
        if not name or not _SHA256.match(digest):
            raise LockError(f"pip's report has no sha256 for {name or item!r} ({file_name}); resolve from an index "
                            "or a wheel directory that pip can hash")
        pins.append(Pin(name, str(meta.get("version", "")), _unquote(file_name), digest))
    return sorted(pins, key=lambda p: p.name)


def _unquote(text: str) -> str:
    from urllib.parse import unquote
    return unquote(text)


def _file_url_path(url: str) -> str:
    from urllib.parse import unquote, urlsplit
    return unquote(urlsplit(url).path)


def check_set(lock: Mapping[str, Any], set_name: str, specs: Sequence[str]) -> dict[str, Any]:
    """{ok, requirements, error} of a set for a role's specs (plugins/plugin_utils/pip_lock.py)."""
    result: dict[str, Any] = _lockutils().check_set(lock, set_name, list(specs))
    return result


def resolve(specs: Sequence[str], binary_only: bool = True, python: str = sys.executable,
            local_wheels: bool = True) -> list[Pin]:
    """Resolve specs with pip's resolver on this interpreter (no install): the pins with their sha256.

    local_wheels false hides the configured find-links directories (a CPU torch there would satisfy torch==X of a
    CUDA set: a public version matches any local label)."""
    for spec in specs:
        parse_spec(spec)
    with tempfile.TemporaryDirectory(prefix="sccnlp-lock-") as tmp:
        report = Path(tmp) / "report.json"
        argv = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                "--disable-pip-version-check", "--report", str(report),
                *(["--only-binary=:all:"] if binary_only else []), *specs]
        env = dict(os.environ)
        if not local_wheels:
            empty = Path(tmp) / "no-wheels"
            empty.mkdir()
            env["PIP_FIND_LINKS"] = str(empty)
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
        if proc.returncode != 0:
            tail = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")] or proc.stderr.splitlines()
            raise LockError(f"pip could not resolve {' '.join(specs)}: {' '.join(tail[-2:])}")
        return pins_from_report(json.loads(report.read_text()))


def build_lock(plan: Sequence[tuple[str, Sequence[str], bool]]) -> dict[str, Any]:
    """Resolve each (set, specs, binary_only) of the plan; a set's specs include the earlier sets' it builds on.
    CUDA sets (named *-cuda*) are resolved without the local wheel directories."""
    sets: dict[str, Any] = {}
    unresolved: dict[str, str] = {}
    for name, specs, binary_only in plan:
        try:
            pins = resolve(specs, binary_only, local_wheels="cuda" not in name)
        except LockError as exc:
            unresolved[name] = str(exc)
            continue
        sets[name] = {"requires": list(specs), "pins": [p.as_dict() for p in pins]}
    return {"target": {"python": f"{sys.version_info.major}.{sys.version_info.minor}", "platform": sys.platform
                       + "_" + _machine(), "release": "debian-12"}, "sets": sets, "unresolved": unresolved}


def _machine() -> str:
    import platform
    return platform.machine()


# What the roles install with their defaults, in the runtime phase's order (roles/*/defaults/main.yml).
_PYTHON36 = ["PyYAML==6.0.2"]
_TRAINER = ["numpy==2.0.2", "transformers==4.57.6", "tokenizers==0.22.2"]
_CPU = [*_PYTHON36, "torch==2.13.0+cpu", *_TRAINER]
_CUDA = [*_PYTHON36, "torch==2.13.0", *_TRAINER]
DEFAULT_PLAN: list[tuple[str, list[str], bool]] = [
    ("python36", _PYTHON36, True),
    ("pytorch-cpu", _CPU, True),
    ("tensorflow-cpu", [*_CPU, "tensorflow-cpu==2.18.1"], True),
    ("pytorch-cuda", _CUDA, True),
    ("tensorflow-cuda", [*_CUDA, "tensorflow[and-cuda]==2.18.1"], True),
    ("horovod-pytorch-cpu", [*_CPU, "horovod==0.28.1"], False),
]


def _indented_dumper() -> Any:
    import yaml

    class Dumper(yaml.SafeDumper):
        """Block sequences indented under their key (yamllint's indentation rule)."""

        def increase_indent(self, flow: bool = False, indentless: bool = False) -> Any:
            return super().increase_indent(flow, False)

    return Dumper


def main(argv: Sequence[str] | None = None) -> int:
    """python -m sccnlp.piplock OUT.yml: resolve the default plan and write the lock."""
    import yaml
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m sccnlp.piplock OUT.yml", file=sys.stderr)
        return 2
    lock = build_lock(DEFAULT_PLAN)
    header = ("---\n# Hash lock of the runtime roles' pip installs (python -m sccnlp.piplock), resolved for the\n"
              "# nodes' Python 3.11 on linux x86_64 (Debian 12). Sets are cumulative in the runtime phase's order.\n")
    Path(args[0]).write_text(header + yaml.dump(lock, Dumper=_indented_dumper(), sort_keys=False, width=118))
    for name, why in lock["unresolved"].items():
        print(f"unresolved {name}: {why}", file=sys.stderr)
    return 1 if lock["unresolved"] else 0


if __name__ == "__main__":
    sys.exit(main())
