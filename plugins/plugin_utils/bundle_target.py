# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The offline bundle's target (manifest.json) against the node it is about to be used on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KEYS = ("release", "arch", "python")


def mismatch(target: Mapping[str, Any], node: Mapping[str, Any]) -> list[str]:
    """'KEY WANT (the node has HAVE)' for each of release, arch and python the bundle was built for differently."""
    out = []
    for key in KEYS:
        want = str(target.get(key, "?"))
        if want != str(node.get(key)):
            out.append("%s %s (the node has %s)" % (key, want, node.get(key)))
    return out
