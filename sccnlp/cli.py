"""`sccnlp` command line: one sub-command per module in `sccnlp.commands`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from sccnlp import __version__
from sccnlp.errors import SccError

# Sub-command modules, in the order `sccnlp --help` lists them. Each has `register(subparsers)` that adds its
# parser and sets `func` (a callable taking the parsed namespace and returning an exit code).
COMMANDS = ("up", "testbed", "deploy", "node", "validate", "train", "reboot", "bench", "monitor", "discover",
            "bundle")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sccnlp", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Turn bare GPU servers into a validated training cluster (the scc.nlp_training collection)\n"
                    "and run BERT pretraining on it; or try it all on a local Docker test cluster.",
        epilog="examples:\n  sccnlp up\n  sccnlp deploy -i inventory/static/hosts.yml\n"
               "  sccnlp validate -i inventory/static/hosts.yml\n  sccnlp deploy --help\n\n"
               "Ansible settings: your own configuration is kept (ANSIBLE_CONFIG, else ./ansible.cfg,\n"
               "~/.ansible.cfg, /etc/ansible/ansible.cfg; the collection's ansible.cfg only when you have\n"
               "none), and so are your ANSIBLE_* variables and PATH (this venv's bin/ is appended only when\n"
               "ansible-playbook is not on PATH). sccnlp adds only: ANSIBLE_COLLECTIONS_PATH (this collection\n"
               "first, then yours), ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default (its progress lines),\n"
               "ANSIBLE_INVENTORY_UNPARSED_FAILED=True, ANSIBLE_HOST_KEY_CHECKING=True and no colour.")
    parser.add_argument("--version", action="version", version=f"sccnlp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"sccnlp.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"sccnlp.commands.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SccError as exc:
        print(f"sccnlp: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("sccnlp: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
