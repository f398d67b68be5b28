"""The bundle manifest: one entry per artefact (name, version, source, sha256, size, role, file), the target it was
built for (release, architecture, Python), verification of a bundle directory against it, the refusal messages,
and the build summary. Pure logic with no network: `sccnlp bundle build` fills it, `deploy --bundle` checks it.

The manifest never records a URL with credentials: `source` is a kind (debian, pypi, url, corpus) plus, for `url`,
the URL with any user info and query removed."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sccnlp.errors import SccError
from sccnlp.node.filehash import sha256_file

SCHEMA = 1
MANIFEST = "manifest.json"
_REBUILD = "rebuild it with `sccnlp bundle build -i INVENTORY -o DIR` (it re-fetches only what does not verify)"


class BundleError(SccError):
    """A bundle that must not be used; the message names the file or setting and the fix."""


@dataclass(frozen=True)
class Entry:
    name: str
    version: str
    source: str
    sha256: str
    size: int
    role: str
    file: str  # relative to the bundle directory


def safe_source(url: str) -> str:
    """A URL as the manifest may show it: no user info, no query or fragment (signed URLs carry secrets there)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def entry_for(bundle: Path, rel: str, name: str, version: str, source: str, role: str) -> Entry:
    """The manifest entry of a file already in the bundle (hashed now)."""
    path = bundle / rel
    return Entry(name, version, source, sha256_file(path), path.stat().st_size, role, rel)


def manifest(entries: Iterable[Entry], target: Mapping[str, str],
             unfetched: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The manifest document: schema, target, sorted entries and what could not be fetched (name -> why)."""
    items = sorted(entries, key=lambda e: (e.role, e.file))
    files = [e.file for e in items]
    dupes = sorted({f for f in files if files.count(f) > 1})
    if dupes:
        raise BundleError(f"the bundle lists {', '.join(dupes)} twice; {_REBUILD}")
    return {"schema": SCHEMA, "target": dict(target), "entries": [asdict(e) for e in items],
            "unfetched": dict(unfetched or {})}


def summary(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Count, total size, per-role counts and the unfetched artefacts with the reason."""
    entries = doc.get("entries") or []
    roles: dict[str, int] = {}
    for e in entries:
        roles[e["role"]] = roles.get(e["role"], 0) + 1
    return {"count": len(entries), "total_bytes": sum(int(e["size"]) for e in entries), "by_role": roles,
            "unfetched": dict(doc.get("unfetched") or {})}


def load(bundle: Path) -> dict[str, Any]:
    """The manifest of a bundle directory; BundleError naming the path when missing or not a manifest."""
    path = bundle / MANIFEST
    if not path.is_file():
        raise BundleError(f"{bundle} has no {MANIFEST}: it is not a bundle; {_REBUILD}")
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BundleError(f"{path} is not readable JSON ({exc}); {_REBUILD}") from exc
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("entries"), list):
        raise BundleError(f"{path} is not a schema-{SCHEMA} bundle manifest; {_REBUILD}")
    return doc


def check_target(doc: Mapping[str, Any], node: str, release: str, arch: str, python: str) -> str:
    """'' when the bundle was built for this node's release, architecture and Python; else the refusal."""
    target = doc.get("target") or {}
    want = {"release": release, "arch": arch, "python": python}
    wrong = [f"{k} {target.get(k, '?')} (the node has {v})" for k, v in want.items() if str(target.get(k)) != v]
    if not wrong:
        return ""
    return (f"{node}: the bundle was built for {', '.join(wrong)}; nothing was changed. Build a bundle for the "
            f"nodes: sccnlp bundle build -i INVENTORY -o DIR (it resolves for the inventory's nodes)")


def verify(bundle: Path, doc: Mapping[str, Any], node: str = "controller",
           only: Sequence[str] | None = None) -> list[str]:
    """Every problem of the bundle's files against the manifest (missing, size, sha256), one message each, naming
    the file and the node; [] when all verify. `only` limits the check to those relative paths."""
    problems = []
    for e in doc.get("entries") or []:
        if only is not None and e["file"] not in only:
            continue
        path = bundle / e["file"]
        if not path.is_file():
            problems.append(f"{node}: bundle file {e['file']} ({e['name']} {e['version']}, for {e['role']}) is "
                            f"missing; {_REBUILD}")
            continue
        size = path.stat().st_size
        digest = sha256_file(path)
        if size != int(e["size"]) or digest != e["sha256"]:
            problems.append(f"{node}: bundle file {e['file']} ({e['name']} {e['version']}, for {e['role']}) does "
                            f"not match the manifest: sha256 {digest}, size {size}; expected sha256 {e['sha256']}, "
                            f"size {e['size']}. It was refused before anything was installed from it; {_REBUILD}")
    return problems


def reusable(bundle: Path, doc: Mapping[str, Any] | None, rel: str) -> Entry | None:
    """The entry of a file an earlier build fetched, when it is still there and verifies (a re-run reuses it)."""
    for e in (doc or {}).get("entries") or []:
        if e["file"] == rel and not verify(bundle, {"entries": [e]}):
            return Entry(**e)
    return None
