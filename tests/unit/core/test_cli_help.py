"""Every sub-command's --help: a one-line summary (its line in the parent's list, the first line of its own help)
and examples that are real command lines of this parser; tags named in an example exist in its playbook."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sccnlp import cli, runner
from sccnlp.paths import collection_root


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], str, argparse.ArgumentParser]]:
    """(command path, summary, parser) of every sub-command, nested ones included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), str(summaries.get(name) or ""), sub
                yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(cli.build_parser()))


def _examples(parser: argparse.ArgumentParser) -> list[str]:
    epilog = parser.epilog or ""
    assert epilog.startswith("examples:\n"), f"{parser.prog}: no examples in --help"
    return [line.strip() for line in epilog.splitlines()[1:] if line.strip()]


def test_every_top_level_command_is_covered() -> None:
    top = {path[0] for path, _summary, _parser in COMMANDS}
    assert top == set(cli.COMMANDS)
    assert {" ".join(p) for p, _s, _x in COMMANDS} >= {"testbed up", "testbed down", "monitor rdma", "bench bert"}


@pytest.mark.parametrize(("path", "summary", "parser"), COMMANDS, ids=[" ".join(c[0]) for c in COMMANDS])
def test_summary_and_examples(path: tuple[str, ...], summary: str, parser: argparse.ArgumentParser) -> None:
    assert summary and "\n" not in summary, f"sccnlp {' '.join(path)}: no one-line summary"
    text = parser.format_help()
    assert f"\n{summary[:1].upper()}{summary[1:]}.\n" in text, text
    examples = _examples(parser)
    prefix = "sccnlp " + " ".join(path)
    assert any(e == prefix or e.startswith(prefix + " ") for e in examples), (prefix, examples)
    for example in examples:
        argv = shlex.split(example)
        assert argv[0] == "sccnlp", example
        cli.build_parser().parse_args(argv[1:])  # a usage error exits (SystemExit 2) and fails the test


def test_top_level_help_has_examples_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "--version" in out and "examples:\n  sccnlp up\n" in out


def test_tags_named_in_examples_exist() -> None:
    """The deploy help once showed `-t cluster,storage`: no play or task has the tag `storage`."""
    env = {"ANSIBLE_COLLECTIONS_PATH": runner._collections_path(),
           "ANSIBLE_CONFIG": str(collection_root() / "ansible.cfg"),
           "PATH": os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", "")))}
    checked = 0
    for _path, _summary, parser in COMMANDS:
        for example in _examples(parser):
            args = cli.build_parser().parse_args(shlex.split(example)[1:])
            if getattr(args, "tags", None):
                book = runner.resolve_playbook(args.playbook)
                missing = set(args.tags.split(",")) - runner.playbook_tags(book, env)
                assert not missing, f"`{example}` names tags {sorted(missing)} that {book.name} does not have"
                checked += 1
    assert checked >= 1, "no example uses -t: the check above checked nothing"
