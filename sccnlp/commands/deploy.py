"""`sccnlp deploy`: run site.yml (preflight → cluster → storage → gpu_stack → runtime → validate) on an inventory."""

from __future__ import annotations

import argparse
import time

from sccnlp.runner import print_summary, run_playbook


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Options every playbook-running sub-command shares."""
    parser.add_argument("-i", "--inventory", required=True,
                        help="inventory: a static file, a *.scc.yml discovery config, or the test bed's")
    parser.add_argument("-l", "--limit", help="limit to these hosts (Ansible pattern)")
    parser.add_argument("-e", "--extra-var", action="append", default=[], metavar="KEY=VALUE",
                        help="extra variable (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every task and ok result")


def extravars(args: argparse.Namespace) -> dict[str, str]:
    from sccnlp.errors import SccError

    out: dict[str, str] = {}
    for item in args.extra_var:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SccError(f"-e {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("deploy", help="take the nodes from bare to training-ready (site.yml)")
    add_run_options(parser)
    parser.add_argument("--check", action="store_true", help="check mode: report what would change, change nothing")
    parser.add_argument("-t", "--tags", help="only these tags (e.g. cluster,storage)")
    parser.add_argument("--playbook", default="site", help="playbook under playbooks/ [%(default)s]")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    result = run_playbook(args.playbook, args.inventory, extravars=extravars(args), limit=args.limit,
                          tags=args.tags, check=args.check, verbose=args.verbose)
    print_summary(result)
    changed = sum(h.changed for h in result.hosts.values())
    label = args.playbook if args.playbook.endswith((".yml", ".yaml")) else f"{args.playbook}.yml"
    print(f"\n{label}: {'OK' if result.ok else 'FAILED'} in {time.monotonic() - t0:.0f} s, {changed} changes")
    bad = result.bad_hosts()
    if bad:
        print("Nodes that did not finish: " + ", ".join(sorted(bad)))
    return 0 if result.ok else 1
