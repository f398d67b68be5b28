"""`sccnlp up`: the main job on the built-in local test cluster — test bed up, deploy, validate, a short BERT run."""

from __future__ import annotations

import argparse
import time

from sccnlp.commands import add_command
from sccnlp.errors import SccError
from sccnlp.runner import run_and_report
from sccnlp.testbed import cluster


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub, "up", "local test cluster end to end: test bed, deploy, validate, a short BERT run",
        details="What `make demo` runs: `sccnlp testbed up`, `sccnlp deploy` (site.yml), `sccnlp validate`, then\n"
                "`sccnlp train` with a tiny model for 30 steps. Prints the time of each phase and the inventory.",
        examples=["sccnlp up", "sccnlp up --nodes 2 --skip-bert",
                  "sccnlp up --name demo2 --subnet 10.89.0.0/24 --report-dir /tmp/demo2-report"])
    parser.add_argument("--name", default="scc-tb", help="test bed name [%(default)s]")
    parser.add_argument("--nodes", type=int, default=3, help="number of nodes [%(default)s]")
    parser.add_argument("--subnet", default="10.88.0.0/24", help="private network of the nodes [%(default)s]")
    parser.add_argument("--skip-bert", action="store_true", help="stop after validation")
    parser.add_argument("--report-dir", default=None, help="where the validation report goes")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.set_defaults(func=run)


def _phase(title: str) -> float:
    print(f"\n##### {title}", flush=True)
    return time.monotonic()


def run(args: argparse.Namespace) -> int:
    times: dict[str, float] = {}
    t = _phase("test bed")
    tb = cluster.up(cluster.TestbedSpec(name=args.name, nodes=args.nodes, subnet=args.subnet))
    times["testbed"] = time.monotonic() - t

    t = _phase("deploy (site.yml)")
    result = run_and_report("site", tb.inventory, verbose=args.verbose)
    times["deploy"] = time.monotonic() - t
    if not result.ok:
        raise SccError("deploy failed on: " + ", ".join(sorted(result.bad_hosts())) + " (see above)", exit_code=1)

    # The demo's short BERT run: a tiny model for a few dozen steps on a slice of the Debian-docs corpus, across
    # every slot of the hostfile (CPU ranks with gloo on the test bed).
    steps = [
        ("validate", ["validate", "-i", str(tb.inventory)]
         + (["--report-dir", args.report_dir] if args.report_dir else [])),
        ("train", ["train", "-i", str(tb.inventory), "--model", "tiny", "--steps", "30", "--batch-size", "8",
                   "--run-name", "demo", "-e", "bert_corpus_max_mb=2"]),
    ]
    from sccnlp.cli import main as cli_main

    rc = 0
    for name, argv in steps:
        if name == "train" and args.skip_bert:
            continue
        t = _phase(f"{name}: sccnlp {' '.join(argv)}")
        rc = cli_main(argv)
        times[name] = time.monotonic() - t
        if rc:
            break
    print("\nTimes: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
    print(f"Inventory of the test cluster: {tb.inventory}")
    return rc
