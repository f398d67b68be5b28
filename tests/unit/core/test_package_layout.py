"""The import rules of the sccnlp package: the node programs (sccnlp/node, the node wheel) import nothing of the
controller side, and library modules never import the CLI (sccnlp.cli, sccnlp.commands)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "sccnlp"
# Top-level imports a node program must not make: the controller side of sccnlp (everything outside sccnlp.node)
# and the controller's libraries, which the nodes do not have.
CONTROLLER_TOPS = ("ansible", "ansible_collections", "ansible_runner", "plugins")
CLI_MODULES = ("sccnlp.cli", "sccnlp.commands")


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts and "_collection" not in p.parts)


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """(line, name) for every import in a file, at any depth, importlib.import_module("...") included; `from M
    import N` gives M.N (a submodule or a name of M)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise AssertionError(f"{path}:{node.lineno}: relative import; write the absolute module")
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in
              ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def node_violations(folder: Path) -> list[str]:
    out = []
    for path in _modules(folder):
        for line, module in imported(path):
            if ((_within(module, "sccnlp") and not _within(module, "sccnlp.node"))
                    or any(_within(module, top) for top in CONTROLLER_TOPS)):
                out.append(f"{path.relative_to(folder.parent)}:{line} imports {module}")
    return out


def library_violations(package: Path) -> list[str]:
    out = []
    for path in _modules(package):
        rel = path.relative_to(package)
        if rel.parts[0] in ("cli.py", "commands"):
            continue
        out += [f"sccnlp/{rel}:{line} imports {module}" for line, module in imported(path)
                if any(_within(module, cli) for cli in CLI_MODULES)]
    return out


def test_node_programs_import_no_controller_code() -> None:
    assert len(_modules(PACKAGE / "node")) > 20
    assert node_violations(PACKAGE / "node") == []


def test_library_modules_import_no_cli_module() -> None:
    assert library_violations(PACKAGE) == []


@pytest.mark.parametrize(("source", "why"), [
    ("from sccnlp.runner import run_playbook\n", "sccnlp.runner"),
    ("def f():\n    from sccnlp import report\n", "sccnlp.report"),
    ("import importlib\nimportlib.import_module('sccnlp.testbed.cluster')\n", "sccnlp.testbed.cluster"),
    ("import ansible_runner\n", "ansible_runner"),
    ("from ansible_collections.scc.nlp_training.plugins.plugin_utils import data\n", "ansible_collections"),
])
def test_the_node_rule_catches_a_controller_import(tmp_path: Path, source: str, why: str) -> None:
    (tmp_path / "node").mkdir()
    (tmp_path / "node" / "mod.py").write_text("from sccnlp.node.errors import SccError\n" + source)
    found = node_violations(tmp_path / "node")
    assert len(found) == 1 and why in found[0], found


def test_the_library_rule_catches_a_cli_import(tmp_path: Path) -> None:
    (tmp_path / "monitor").mkdir()
    (tmp_path / "monitor" / "rdma.py").write_text("def f():\n    from sccnlp.commands.discover import plain\n")
    (tmp_path / "commands").mkdir()
    (tmp_path / "commands" / "discover.py").write_text("from sccnlp.commands import add_command\n")
    assert library_violations(tmp_path) == ["sccnlp/monitor/rdma.py:2 imports sccnlp.commands.discover.plain"]
