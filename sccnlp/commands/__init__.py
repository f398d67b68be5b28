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


def add_group(subparsers: Any, name: str, summary: str, examples: Sequence[str], metavar: str = "ACTION") -> Any:
    """A sub-command made of sub-commands (`sccnlp testbed up|down|...`): its own subparsers, one of them required."""
    parser = add_command(subparsers, name, summary, examples=examples)
    sub = parser.add_subparsers(dest=f"{name}_command", metavar=metavar)
    sub.required = True
    return sub


def add_extra_vars_option(parser: argparse.ArgumentParser, example: str) -> None:
    """`-e` as ansible-playbook has it, read by sccnlp.extravars.parse_extra_vars."""
    parser.add_argument("-e", "--extra-var", action="append", default=[], metavar="VARS",
                        help="extra variables as ansible-playbook's -e takes them: KEY=VALUE (strings), a YAML/JSON "
                             f"mapping or @FILE; repeatable, a later one wins (e.g. {example})")
