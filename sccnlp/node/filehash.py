"""The one file-hash helper of sccnlp: node programs (data manifests, vocabularies) and the controller (pip locks,
offline bundles) hash files the same way."""

from __future__ import annotations

import hashlib
import os

CHUNK = 1 << 22  # read 4 MiB at a time: corpora and wheels are large, memory stays flat


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()
