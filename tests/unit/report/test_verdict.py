"""One verdict for the summary line, the nodes without results and the exit status: the contradictory summaries of
issue 26 (PASS with nodes missing and exit 1; FAIL with 0 failed nodes) cannot be written any more."""

from __future__ import annotations

import re

from sccnlp.report.summary import text_summary
from sccnlp.report.verdict import PlayedHost, decide


def _all_pass(results):
    for node in results["nodes"].values():
        for check in node["checks"]:
            check["status"] = "pass"
    return results


def test_nodes_without_fragments_fail_the_run_by_name(results):
    """Issue 26: `Overall: PASS (1 nodes, 0 failed)` / `No results from: node1, node3` with exit 1."""
    results = _all_pass(results)
    del results["nodes"]["gpu2"]
    played = {"gpu1": PlayedHost(), "gpu2": PlayedHost(last_task="Train a tiny BERT: skipped"),
              "gpu3": PlayedHost(failed=True, last_task="Run the GPU gate: failed (nvidia-smi not found)")}
    verdict = decide(results, played)
    assert verdict.status == "fail" and verdict.exit_code == 1
    assert [n.name for n in verdict.failed] == ["gpu2", "gpu3"]
    line = text_summary(results, verdict).splitlines()[-1]
    assert line.startswith("Overall: FAIL (3 nodes, 2 failed: gpu2 (no results; last task: Train a tiny BERT: "
                           "skipped), gpu3 (no results; failed at: Run the GPU gate: failed (nvidia-smi not found)); "
                           "run ")
    assert verdict.missing_line() == ("No results from: gpu2 (no results; last task: Train a tiny BERT: skipped), "
                                      "gpu3 (no results; failed at: Run the GPU gate: failed (nvidia-smi not found))")


def test_cluster_failure_is_named_when_no_node_failed(results):
    """Issue 26: `Overall: FAIL (4 nodes, 0 failed; ...)` said nothing of why."""
    results = _all_pass(results)
    results["cluster"]["checks"][0]["status"] = "fail"
    line = text_summary(results).splitlines()[-1]
    assert line.startswith("Overall: FAIL (2 nodes, 0 failed; 1 cluster check failed; run ")


def test_failed_playbook_never_reads_pass(results):
    verdict = decide(_all_pass(results), {"gpu1": PlayedHost(), "gpu2": PlayedHost()}, playbook_rc=2)
    assert verdict.status == "fail" and verdict.exit_code == 1
    assert "the playbook ended with exit 2" in verdict.overall_line()


def test_unreachable_node_is_a_failed_node(results):
    results = _all_pass(results)
    verdict = decide(results, {"gpu1": PlayedHost(), "gpu2": PlayedHost(), "gpu9": PlayedHost(unreachable=True)})
    assert verdict.overall_line().startswith("Overall: FAIL (3 nodes, 1 failed: gpu9 (unreachable)")
    assert verdict.missing_line() == "Unreachable (no results): gpu9"


def test_counts_agree_with_the_status_in_every_case(results):
    """Whatever the inputs: FAIL exactly when something failed, and the failed count is the nodes named."""
    cases = [({}, 0), ({"gpu3": PlayedHost()}, 0), ({}, 2)]
    for played, rc in cases:
        for status in ("pass", "fail", "skip"):
            data = _all_pass(results)
            data["nodes"]["gpu1"]["checks"][0]["status"] = status
            verdict = decide(data, {**{n: PlayedHost() for n in data["nodes"]}, **played}, rc)
            line = verdict.overall_line()
            count = int(re.search(r"(\d+) failed", line).group(1))
            assert count == len(verdict.failed)
            something_failed = count > 0 or verdict.cluster_failed > 0 or rc != 0
            assert (verdict.status == "fail") == something_failed, line
            assert verdict.exit_code == int(something_failed)


def test_all_pass(results):
    verdict = decide(_all_pass(results), {"gpu1": PlayedHost(), "gpu2": PlayedHost()})
    assert (verdict.status, verdict.exit_code, verdict.missing_line()) == ("pass", 0, "")


def test_runner_records_each_hosts_last_task():
    """What the verdict names for a node without results: its last task and that task's result, from the events."""
    from types import SimpleNamespace

    from sccnlp.runner import _summarise

    events = [
        {"event": "runner_on_ok", "event_data": {"host": "n1", "task": "Gather facts", "res": {}}},
        {"event": "runner_on_skipped", "event_data": {"host": "n1", "task": "Write the fragment", "res": {}}},
        {"event": "runner_on_failed", "event_data": {"host": "n2", "task": "Run the gate",
                                                     "res": {"msg": "nvidia-smi not found"}}},
    ]
    stats = {"ok": {"n1": 1, "n2": 0}, "skipped": {"n1": 1}, "failures": {"n2": 1}}
    hosts = _summarise(SimpleNamespace(stats=stats, events=events))
    assert hosts["n1"].last_task == "Write the fragment: skipped"
    assert hosts["n2"].last_task == "Run the gate: failed (nvidia-smi not found)"
