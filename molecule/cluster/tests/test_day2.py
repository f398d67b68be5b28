"""Day-2 cases on the converged cluster, three nodes in `cluster`, eight in `cluster8` (the tests run in file order
and each leaves the cluster as it found it): a new node nobody can reach is not written into the healthy nodes'
cluster files, and validation blames the node without the shared storage, not the first node. They assert on the
nodes' files (hashes) and the recap.
The other day-2 cases (--limit, a node lost mid-deploy, remove, add) are in the history of this file
(commit "Day-2 tests for --limit, lost node, remove and add"), not yet run to the end on this machine.

Every run's wall time goes to $MOLECULE_EPHEMERAL_DIRECTORY/day2-times.json (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import (
    CLUSTER_FILES,
    MOUNTPOINT,
    Run,
    file_hashes,
    platforms,
    playbook,
    write_inventory,
)

PLATFORMS = platforms()
NODES = {name: p["networks"][0]["ipv4_address"] for name, p in PLATFORMS.items()}
NAMES = list(NODES)
BRICKS = [name for name, p in PLATFORMS.items() if "clu_bricks" in p.get("groups", [])]
CLIENTS = [name for name in NAMES if name not in BRICKS]


def _timed(name: str, run: Run) -> Run:
    path = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/tmp")) / "day2-times.json"
    times = json.loads(path.read_text()) if path.exists() else {}
    times[name] = round(run.seconds, 1)
    path.write_text(json.dumps(times, indent=1) + "\n")
    return run


def _report(tmp_path: Path) -> tuple[str, str]:
    """Validation report of a run into the test's directory (not the checkout's validate-report/)."""
    return ("-e", f"validate_report_dir={tmp_path}/report")


def _everywhere(hosts, names, paths=CLUSTER_FILES) -> dict[str, dict[str, str]]:
    return {name: file_hashes(hosts[name], paths) for name in names}


def test_a_new_node_nobody_can_reach_is_not_written_into_the_cluster_files(tmp_path, hosts):
    before = _everywhere(hosts, NAMES)
    ghost = "clu-ghost"   # no such container: the docker connection cannot reach it
    inv = write_inventory(tmp_path, {**NODES, ghost: "10.91.0.99"})
    run = _timed("unreachable_new_node_cluster_yml", playbook(inv, "cluster.yml"))
    assert run.rc == 4, run.tail()
    assert run.recap[ghost]["unreachable"] == 1, run.recap
    for name in NAMES:
        assert (run.recap[name]["failed"], run.recap[name]["unreachable"], run.recap[name]["changed"]) == (0, 0, 0), \
            run.recap
    flat = " ".join(run.stdout.split())
    assert (f"cluster: {ghost} did not answer or failed before the cluster wiring, so the cluster files of "
            f"{', '.join(NAMES)} do not list them. Fix: make them reachable") in flat
    assert _everywhere(hosts, NAMES) == before
    for name in NAMES:
        for path in CLUSTER_FILES:
            text = hosts[name].file(path).content_string
            assert ghost not in text and "10.91.0.99" not in text, (name, path)


def test_validation_blames_the_node_without_the_shared_storage(tmp_path, hosts):
    node = CLIENTS[-1]   # a client-only node, not the first node
    hosts[node].check_output(f"umount {MOUNTPOINT}")
    try:
        run = _timed("validate_yml", playbook(write_inventory(tmp_path, NODES), "validate.yml",
                                              *_report(tmp_path)))
    finally:
        hosts[node].check_output(f"mount {MOUNTPOINT}")
    assert run.rc == 2, run.tail()
    assert [h for h, _unused in run.failures] == [node], run.tail()   # not the first node, which ran the cluster checks
    msg = run.failures[0][1]["msg"]
    assert f"{node}: {MOUNTPOINT} is not a mount point: the shared storage is not mounted on this node. " \
           f"Fix: run playbooks/storage.yml --limit {node}" in msg
    assert f"{node}: did not see the file {NAMES[0]} wrote in {MOUNTPOINT}" in msg
    report = json.loads((tmp_path / "report/fragments" / f"{NAMES[0]}.json").read_text())
    seen = next(c for c in report["cluster"]["checks"] if c["name"] == "shared_storage_visible")
    assert seen["status"] == "fail" and f"not seen (same size) by {node}" in seen["detail"], seen
