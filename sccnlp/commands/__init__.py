"""Sub-commands of the `sccnlp` CLI: one module each, exposing `register(subparsers)`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


def add_command(subparsers: Any, name: str, summary: str, examples: Sequence[str],
                details: str = "") -> argparse.ArgumentParser:
    """A sub-command parser: `summary` is its line in the parent's --help and the first line of its own; its own
    --help adds `details` (written with line breaks where they should be) and ends with the `examples`, each a
    whole command line that tests/unit/core/test_cli_help.py parses."""
    description = summary[:1].upper() + summary[1:] + "." + (f"\n\n{details.strip()}" if details else "")
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=summary, description=description, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser
