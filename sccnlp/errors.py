"""Errors the CLI turns into one clear line (never a traceback).

`SccError` is defined in the node package, because the node programs raise it too; this is its public name on the
controller side (`sccnlp.errors.SccError`)."""

from __future__ import annotations

from sccnlp.node.errors import SccError

__all__ = ["SccError"]
