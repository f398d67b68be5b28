"""`sccnlp deploy`: run site.yml (preflight → cluster → storage → gpu_stack → runtime → validate) on an inventory."""

from __future__ import annotations

import argparse
from pathlib import Path

from sccnlp.commands import add_command, add_extra_vars_option
from sccnlp.extravars import parse_extra_vars
from sccnlp.runner import run_and_report


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Options every playbook-running sub-command shares."""
    parser.add_argument("-i", "--inventory", required=True,
                        help="inventory: a static file, a *.scc.yml discovery config, or the test bed's")
    parser.add_argument("-l", "--limit", help="limit to these hosts (Ansible pattern)")
    add_extra_vars_option(parser, "-e scc_shared_dir=/mnt/cpfs")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every task and ok result")


def bundle_src(path: str) -> str:
    """The controller's bundle for --bundle: checked here (every file against the manifest) before the run; the
    sources phase copies it to the nodes, which check it again before anything is installed from it."""
    from sccnlp.bundle import manifest
    from sccnlp.errors import SccError

    local = Path(path).expanduser().resolve()
    if not (local / manifest.MANIFEST).is_file():
        raise SccError(f"--bundle {path}: no bundle there on this machine (no {manifest.MANIFEST}). Build one with "
                       "`sccnlp bundle build -i INVENTORY -o DIR`; for a bundle already on the nodes (e.g. the shared "
                       "storage) set -e scc_bundle_dir=PATH instead")
    problems = manifest.verify(local, manifest.load(local))
    if problems:
        raise manifest.BundleError("\n".join(problems))
    return str(local)


def bundle_dir(path: str, option: str = "-e scc_bundle_dir=") -> str:
    """A bundle already on the nodes (`option` is how the user gave it). When the controller sees it too, it is
    checked here first (the nodes check it again before they install anything from it)."""
    from pathlib import PurePosixPath

    from sccnlp.bundle import manifest
    from sccnlp.errors import SccError

    if not PurePosixPath(path).is_absolute():
        raise SccError(f"{option}{path}: give the bundle's absolute path as the nodes see it (e.g. on the shared "
                       "storage: /mnt/cpfs/scc-bundle)")
    local = Path(path)
    if (local / manifest.MANIFEST).is_file():
        problems = manifest.verify(local, manifest.load(local))
        if problems:
            raise manifest.BundleError("\n".join(problems))
    return path


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub, "deploy", "take the nodes from bare to training-ready (site.yml)",
        details="Runs playbooks/site.yml (preflight, cluster, storage, gpu_stack, runtime, monitoring, validate,\n"
                "monitoring_verify), or one phase with --playbook, and prints a per-host summary. Tags are those of\n"
                "the playbook's roles "
                "(`ansible-playbook --list-tags site.yml`: cluster, cpfs_client, nccl, pytorch, ...); a tag the\n"
                "playbook does not have is refused before anything runs, with the list of its tags.",
        examples=["sccnlp deploy -i inventory/static/hosts.yml", "sccnlp deploy -i inventory/static/hosts.yml --check",
                  "sccnlp deploy -i inventory/static/hosts.yml -t cluster,cpfs_client",
                  "sccnlp deploy -i inventory/static/hosts.yml --playbook gpu_stack -l node3",
                  "sccnlp deploy -i inventory/discovery.scc.yml -e scc_shared_dir=/mnt/cpfs",
                  "sccnlp deploy -i inventory/static/hosts.yml --bundle ./scc-bundle",
                  "sccnlp deploy -i inventory/static/hosts.yml -e scc_bundle_dir=/mnt/cpfs/scc-bundle"])
    add_run_options(parser)
    parser.add_argument("--check", action="store_true", help="check mode: report what would change, change nothing")
    parser.add_argument("-t", "--tags", help="only these tags, comma-separated (e.g. cluster,cpfs_client)")
    parser.add_argument("--playbook", default="site",
                        help="playbook under playbooks/ (site, preflight, cluster, storage, gpu_stack, runtime, "
                             "monitoring, validate, bert, ...) or a path to a .yml file [%(default)s]")
    parser.add_argument("--bundle", metavar="DIR",
                        help="install only from this offline bundle (sccnlp bundle build) on this machine: it is "
                             "checked here, copied to every node (/var/lib/scc-bundle) and checked there; sets "
                             "scc_bundle_src")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    variables = parse_extra_vars(args.extra_var)
    if args.bundle:
        variables["scc_bundle_src"] = bundle_src(args.bundle)
    elif variables.get("scc_bundle_dir"):
        variables["scc_bundle_dir"] = bundle_dir(variables["scc_bundle_dir"], "-e scc_bundle_dir=")
    label = args.playbook if args.playbook.endswith((".yml", ".yaml")) else f"{args.playbook}.yml"
    result = run_and_report(args.playbook, args.inventory, label=label, extravars=variables, limit=args.limit,
                            tags=args.tags, check=args.check, verbose=args.verbose)
    return 0 if result.ok else 1
