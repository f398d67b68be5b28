"""The error the node programs and the CLI turn into one clear line (never a traceback), and how a node program
that answers in JSON reports it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


class SccError(Exception):
    """A user-facing error: the message says what is wrong, where, and the fix."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


def json_command(prog: str, run: Callable[[], Any]) -> int:
    """Run one command of a node program: its result as one JSON line on stdout and exit 0, or its SccError as one
    line `<prog>: error: <message>` on stderr (what the roles show) with the error's exit status."""
    try:
        result = run()
    except SccError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(json.dumps(result))
    return 0
