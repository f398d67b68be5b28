"""`sccnlp up`: the main job on the built-in local test cluster — test bed up, deploy, validate, a short BERT run."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sccnlp.commands import add_command
from sccnlp.commands.deploy import bundle_src
from sccnlp.commands.validate import build_report, clear_fragments, played_hosts
from sccnlp.errors import SccError
from sccnlp.runner import run_and_report
from sccnlp.testbed import cluster


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub, "up", "local test cluster end to end: test bed, deploy, validate, a short BERT run",
        details="What `make demo` runs: `sccnlp testbed up`, `sccnlp deploy` (site.yml, whose last phase validates;\n"
                "the report is printed as `sccnlp validate` prints it), then `sccnlp train` with a tiny model for\n"
                "30 steps. Prints the time of each phase and the inventory.\n"
                "--offline: the nodes get no route out (nothing is forwarded beyond their network); `sccnlp bundle\n"
                "build` collects what the deploy needs on this machine first, and the deploy installs only from it.",
        examples=["sccnlp up", "sccnlp up --nodes 2 --skip-bert",
                  "sccnlp up --name demo2 --subnet 10.89.0.0/24 --report-dir /tmp/demo2-report",
                  "sccnlp up --offline --bundle-dir /srv/scc-bundle"])
    parser.add_argument("--name", default="scc-tb", help="test bed name [%(default)s]")
    parser.add_argument("--nodes", type=int, default=3, help="number of nodes [%(default)s]")
    parser.add_argument("--subnet", default="10.88.0.0/24", help="private network of the nodes [%(default)s]")
    parser.add_argument("--skip-bert", action="store_true", help="stop after validation")
    parser.add_argument("--report-dir", default=None, help="where the validation report goes [./validate-report]")
    parser.add_argument("--offline", action="store_true",
                        help="nodes without egress, deployed from an offline bundle built here first")
    parser.add_argument("--tensorflow", action="store_true",
                        help="also install TensorFlow CPU on the nodes (tensorflow_enabled; the bundle carries its "
                             "wheels), so `sccnlp train --framework tensorflow` runs there")
    parser.add_argument("--bundle-dir", default=None,
                        help="where --offline builds (or reuses) the bundle [$SCCNLP_HOME/bundle, ~/.sccnlp/bundle]")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.set_defaults(func=run)


def _phase(title: str) -> float:
    print(f"\n##### {title}", flush=True)
    return time.monotonic()


def run(args: argparse.Namespace) -> int:
    if args.bundle_dir and not args.offline:
        raise SccError(f"--bundle-dir {args.bundle_dir}: only --offline builds and uses a bundle. Fix: add --offline, "
                       "or drop --bundle-dir")
    times: dict[str, float] = {}
    t = _phase("test bed")
    tb = cluster.up(cluster.TestbedSpec(name=args.name, nodes=args.nodes, subnet=args.subnet,
                                        egress=not args.offline, tensorflow=args.tensorflow))
    times["testbed"] = time.monotonic() - t
    from sccnlp.cli import main as cli_main

    if args.offline:
        bundle = Path(args.bundle_dir) if args.bundle_dir else cluster.state_root().parent / "bundle"
        t = _phase(f"bundle: sccnlp bundle build -i {tb.inventory} -o {bundle}")
        if cli_main(["bundle", "build", "-i", str(tb.inventory), "-o", str(bundle)]):
            return 1
        times["bundle"] = time.monotonic() - t
        # The inventory carries the bundle (scc_bundle_src): every later run on it installs from it too.
        tb.spec.bundle = bundle_src(str(bundle))
        tb.save()
        cluster.write_inventory(tb)

    # site.yml's last phase validates every node and the cluster: its fragments go to the report directory and the
    # report is built from them here (what `sccnlp validate` prints), without validating the cluster a second time.
    report_dir = Path(args.report_dir or "validate-report").resolve()
    report_dir.mkdir(parents=True, exist_ok=True)
    clear_fragments(report_dir)
    t = _phase("deploy (site.yml)" + (" from the bundle" if args.offline else "")
               + f"; its validation's report in {report_dir}")
    result = run_and_report("site", tb.inventory, verbose=args.verbose,
                            extravars={"validate_report_dir": str(report_dir), "validate_merge_report": False})
    times["deploy"] = time.monotonic() - t
    if not result.ok:
        raise SccError("deploy failed on: " + ", ".join(sorted(result.bad_hosts())) + " (see above)", exit_code=1)
    print("")
    # The nodes only: site.yml's controller plays (the inventory check) ran on localhost, which validates nothing.
    nodes = {node.name for node in tb.nodes}
    played = {name: host for name, host in played_hosts(result.hosts).items() if name in nodes}
    rc = build_report(report_dir, sys.stdout, played, result.rc).exit_code

    # The demo's short BERT run: a tiny model for a few dozen steps on a slice of the Debian-docs corpus, across
    # every slot of the hostfile (CPU ranks with gloo on the test bed).
    if rc == 0 and not args.skip_bert:
        argv = ["train", "-i", str(tb.inventory), "--model", "tiny", "--steps", "30", "--batch-size", "8",
                "--run-name", "demo", "-e", "bert_corpus_max_mb=2"]
        t = _phase(f"train: sccnlp {' '.join(argv)}")
        rc = cli_main(argv)
        times["train"] = time.monotonic() - t
    print("\nTimes: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
    print(f"Inventory of the test cluster: {tb.inventory}")
    return rc
