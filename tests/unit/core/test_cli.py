"""`sccnlp` command line: dispatch, help, and SccError as one line on stderr (exit 2, no traceback)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from sccnlp import cli
from sccnlp.errors import SccError

ROOT = Path(__file__).resolve().parents[3]


def test_help_lists_every_command_module(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    present = [name for name in cli.COMMANDS if (ROOT / "sccnlp" / "commands" / f"{name}.py").exists()]
    # The core commands are always there; the others as soon as their module exists.
    assert {"up", "testbed", "deploy"} <= set(present)
    for name in present:
        assert f"    {name} " in out, f"`sccnlp --help` does not list {name}:\n{out}"


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'frobnicate'" in err
    assert "Traceback" not in err


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2
    assert "COMMAND" in capsys.readouterr().err


def _parser_with(func) -> argparse.ArgumentParser:  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser(prog="sccnlp")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("boom").set_defaults(func=func)
    return parser


def test_scc_error_is_one_line_on_stderr(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def boom(_args: argparse.Namespace) -> int:
        raise SccError("node1: gpu_count 'x' is not a number: set gpu_count: 8 in the inventory")

    monkeypatch.setattr(cli, "build_parser", lambda: _parser_with(boom))
    rc = cli.main(["boom"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err == "sccnlp: error: node1: gpu_count 'x' is not a number: set gpu_count: 8 in the inventory\n"


def test_scc_error_keeps_its_own_exit_code(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    def boom(_args: argparse.Namespace) -> int:
        raise SccError("deploy failed on: node2 (see above)", exit_code=1)

    monkeypatch.setattr(cli, "build_parser", lambda: _parser_with(boom))
    assert cli.main(["boom"]) == 1
    assert capsys.readouterr().err == "sccnlp: error: deploy failed on: node2 (see above)\n"


def test_command_return_value_is_the_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "build_parser", lambda: _parser_with(lambda _: 3))
    assert cli.main(["boom"]) == 3
    monkeypatch.setattr(cli, "build_parser", lambda: _parser_with(lambda _: None))
    assert cli.main(["boom"]) == 0


def test_real_process_prints_one_line_without_traceback(tmp_path: Path) -> None:
    """The installed entry point as a user runs it: a missing inventory is one line, exit code 2."""
    missing = tmp_path / "nope.yml"
    proc = subprocess.run([sys.executable, "-m", "sccnlp.cli", "deploy", "-i", str(missing)],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert lines == [f"sccnlp: error: inventory {missing} does not exist: pass --inventory PATH "
                     "(or run `sccnlp testbed up`)"]
