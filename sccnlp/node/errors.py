"""The error the node programs and the CLI turn into one clear line (never a traceback)."""

from __future__ import annotations


class SccError(Exception):
    """A user-facing error: the message says what is wrong, where, and the fix."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
