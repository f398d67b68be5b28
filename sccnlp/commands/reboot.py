"""`sccnlp reboot`: rolling, validated reboots (playbooks/reboot.yml) of the nodes that need one, or of all."""

from __future__ import annotations

import argparse
import re

from sccnlp.commands import add_command
from sccnlp.commands.deploy import add_run_options
from sccnlp.errors import SccError
from sccnlp.extravars import parse_extra_vars
from sccnlp.runner import run_and_report

_BATCH = re.compile(r"^(?:[1-9][0-9]*|(?:[1-9][0-9]?|100)%)$")


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub, "reboot", "reboot nodes in validated batches (playbooks/reboot.yml)",
        details="Reboots the nodes that need it (a new GPU driver, the distribution's reboot-required) or, with\n"
                "--all, every node, in batches of --batch nodes. Each node is drained (a training run using it is\n"
                "refused unless --force), rebooted and validated before the next batch: the recorded kernel, every\n"
                "GPU, RDMA ports ACTIVE, the shared storage and its token, the NCCL settings. A failing node stops\n"
                "the rollout, naming the node and the check; the same command without --all continues it.",
        examples=["sccnlp reboot -i inventory/static/hosts.yml",
                  "sccnlp reboot -i inventory/static/hosts.yml --all --batch 25%",
                  "sccnlp reboot -i inventory/static/hosts.yml --all --check"])
    add_run_options(parser)
    parser.add_argument("--all", action="store_true", help="reboot every node, not only those that need it")
    parser.add_argument("--batch", default="1", help="nodes per batch: a count or a percentage [%(default)s]")
    parser.add_argument("--force", action="store_true",
                        help="stop a training run's processes on a node before its reboot (it resumes from its "
                             "last checkpoint) instead of refusing")
    parser.add_argument("--check", action="store_true", help="check mode: say what would be rebooted, reboot nothing")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not _BATCH.match(args.batch):
        raise SccError(f"--batch {args.batch}: a batch is a count of nodes (1, 2, ...) or a percentage of the cluster "
                       "(1% to 100%). Fix: e.g. --batch 1 or --batch 25%")
    variables = {**parse_extra_vars(args.extra_var), "node_reboot_batch": args.batch,
                 "node_reboot_all": str(args.all).lower(), "node_reboot_force": str(args.force).lower()}
    result = run_and_report("reboot", args.inventory, label="reboot.yml", extravars=variables, limit=args.limit,
                            check=args.check, verbose=args.verbose,
                            bad_hint="The rollout stopped there; later batches were not rebooted. Fix what the "
                                     "message names, then run the same command without --all to continue.")
    return 0 if result.ok else 1
