"""`sccnlp validate`: run playbooks/validate.yml, merge the per-node fragments, write the report, print a summary.

Exit status: 0 when every check passed or was skipped with a reason; 1 when a check failed, a node was
unreachable or did not finish, or no fragment came back for a node of the run.
``--from-fragments DIR`` skips the playbook and (re)builds the report from DIR/fragments/*.json.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from sccnlp.commands import add_command, add_extra_vars_option
from sccnlp.errors import SccError
from sccnlp.extravars import parse_extra_vars
from sccnlp.report.verdict import PlayedHost, Verdict, decide

if TYPE_CHECKING:
    from sccnlp.runner import HostSummary

FRAGMENTS = "fragments"


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub, "validate", "check GPUs, RDMA/NCCL, MPI and shared storage; write the report",
        details="Runs playbooks/validate.yml, merges the per-node results into REPORT_DIR/report.json and\n"
                "report.html, and prints a summary. Exit status 0 when every check passed or was skipped with a\n"
                "reason; 1 when a check failed or a node was unreachable or sent no results.",
        examples=["sccnlp validate -i inventory/static/hosts.yml",
                  "sccnlp validate -i inventory/static/hosts.yml -l node2 -e validate_gpu_quick=true",
                  "sccnlp validate --from-fragments --report-dir validate-report"])
    _add_options(parser)
    parser.set_defaults(func=run)


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--inventory", help="inventory (static file, *.scc.yml, or the test bed's)")
    parser.add_argument("-l", "--limit", help="limit to these hosts (Ansible pattern)")
    parser.add_argument("--report-dir", default="validate-report",
                        help="where fragments/, raw/, report.json and report.html go [%(default)s]")
    add_extra_vars_option(parser, "-e validate_gpu_quick=true")
    parser.add_argument("--from-fragments", action="store_true",
                        help="do not run the playbook; rebuild the report from REPORT_DIR/fragments/")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every task")


def fragment_files(report_dir: Path) -> list[Path]:
    return sorted((report_dir / FRAGMENTS).glob("*.json"))


def clear_fragments(report_dir: Path) -> None:
    """Remove the fragments of an earlier run so they cannot be merged into this one."""
    for path in fragment_files(report_dir):
        path.unlink()


def build_report(report_dir: Path, stream: TextIO, played: Mapping[str, PlayedHost] | None = None,
                 playbook_rc: int = 0) -> Verdict:
    """Merge the fragments, write report.json/html, print the summary and the nodes without results; return the
    verdict (sccnlp.report.verdict.decide) the summary and the exit status share."""
    from sccnlp.report.collect import merge
    from sccnlp.report.render import write_report
    from sccnlp.report.summary import stack_summary, text_summary

    files = fragment_files(report_dir)
    if not files:
        if played:  # every node ran and none sent results: the verdict names them
            verdict = decide({"nodes": {}}, played, playbook_rc)
            print(verdict.overall_line(), file=stream)
            print(verdict.missing_line(), file=stream)
            return verdict
        raise SccError(f"no result fragments in {report_dir / FRAGMENTS}: the validate playbook reached no node "
                       "(see its output above), or --report-dir points elsewhere", exit_code=1)
    results = merge(files)
    results["run"].setdefault("finished", datetime.now(timezone.utc).isoformat())
    verdict = decide(results, played, playbook_rc)
    json_path, html_path = write_report(results, report_dir)
    print(text_summary(results, verdict), file=stream)
    print(stack_summary(results), file=stream)
    print(f"Report: {json_path} and {html_path}", file=stream)
    if verdict.missing_line():
        print(verdict.missing_line(), file=stream)
    return verdict


def played_hosts(hosts: Mapping[str, HostSummary]) -> dict[str, PlayedHost]:
    """The hosts that ran something (a controller play's skipped localhost is not a node), as the verdict takes them."""
    return {name: PlayedHost(unreachable=bool(h.unreachable), failed=bool(h.failed), last_task=h.last_task)
            for name, h in hosts.items() if h.ok or h.changed or h.failed or h.unreachable}


def run(args: argparse.Namespace, stream: TextIO | None = None) -> int:
    stream = stream or sys.stdout
    report_dir = Path(args.report_dir).resolve()
    if args.from_fragments:
        return build_report(report_dir, stream).exit_code
    if not args.inventory:
        raise SccError("sccnlp validate needs -i INVENTORY (or --from-fragments to rebuild a report)")
    from sccnlp.runner import run_and_report

    report_dir.mkdir(parents=True, exist_ok=True)
    clear_fragments(report_dir)
    extra: dict[str, Any] = {"validate_report_dir": str(report_dir), "validate_merge_report": False}
    extra.update(parse_extra_vars(args.extra_var))
    result = run_and_report("validate", args.inventory, extravars=extra, limit=args.limit, verbose=args.verbose,
                            stream=stream)
    print("", file=stream)
    if not result.hosts and not fragment_files(report_dir):
        raise SccError(f"the validate playbook matched no node of {args.inventory} (limit {args.limit!r}); "
                       "check the group scc_cluster and --limit", exit_code=1)
    return build_report(report_dir, stream, played_hosts(result.hosts), result.rc).exit_code


def main(argv: list[str] | None = None) -> int:
    """`python -m sccnlp.commands.validate ...`: the same options without the `sccnlp` front end (used by
    playbooks/validate.yml to write the report when run with ansible-playbook, and by scripts/device/)."""
    parser = argparse.ArgumentParser(prog="python -m sccnlp.commands.validate", description=__doc__.splitlines()[0])
    _add_options(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except SccError as exc:
        print(f"sccnlp validate: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
