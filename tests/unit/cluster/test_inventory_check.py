"""Bad inventories are refused by inventory_check with one message naming host, setting and fix, and nothing
runs on the nodes."""

from __future__ import annotations

import json
import re

import pytest

GOOD = {
    "n1": {"ansible_host": "10.91.0.11"},
    "n2": {"ansible_host": "10.91.0.12"},
    "n3": {"ansible_host": "10.91.0.13"},
}


def assert_refused(run, *needles: str) -> str:
    assert run.rc != 0, run.output
    assert "Traceback" not in run.output
    failures = re.findall(r"^fatal: \[(\S+)\]: FAILED! => (\{.*\})$", run.output, re.M)
    assert [host for host, _unused in failures] == ["localhost"], run.output
    text = json.loads(failures[0][1])["msg"]
    for needle in needles:
        assert needle in text, text
    assert "Fix:" in text
    # Nothing ran on the nodes: the play that changes them never started and no host reports a change.
    assert "Wire the cluster and install Open MPI" not in run.output
    assert "Mount the shared storage" not in run.output
    assert all(counts.get("changed", 0) == 0 for counts in run.recap().values()), run.recap()
    return text


def hosts_with(**overrides: dict) -> dict[str, dict]:
    return {name: {**GOOD[name], **overrides.get(name, {})} for name in GOOD}


def test_missing_cluster_group(run_playbook):
    assert_refused(run_playbook("cluster.yml", None), "the cluster group 'scc_cluster' does not exist")


def test_empty_cluster_group(run_playbook):
    run = run_playbook("cluster.yml", {})
    assert_refused(run, "the cluster group 'scc_cluster' has no hosts")


def test_duplicate_host_names(run_playbook):
    hosts = {**GOOD, "N1": {"ansible_host": "10.91.0.21"}}
    assert_refused(run_playbook("cluster.yml", hosts), "hosts N1, n1: the same host name 'n1'")


def test_duplicate_management_ip(run_playbook):
    hosts = hosts_with(n3={"ansible_host": "10.91.0.11"})
    assert_refused(run_playbook("cluster.yml", hosts),
                   "hosts n1 (ansible_host), n3 (ansible_host): the same IP address 10.91.0.11")


def test_duplicate_rdma_ip(run_playbook):
    hosts = hosts_with(n1={"rdma_ip": "10.92.0.1"}, n2={"rdma_ip": "10.92.0.1"})
    assert_refused(run_playbook("cluster.yml", hosts),
                   "hosts n1 (rdma_ip), n2 (rdma_ip): the same IP address 10.92.0.1")


def test_ansible_host_not_an_ip(run_playbook):
    hosts = hosts_with(n2={"ansible_host": "node-two.example"})
    assert_refused(run_playbook("cluster.yml", hosts),
                   "host 'n2': ansible_host 'node-two.example' is not an IP address")


@pytest.mark.parametrize("slots", [0, -2, "four", True, 1.5])
def test_mpi_slots_not_a_positive_integer(run_playbook, slots):
    hosts = hosts_with(n2={"mpi_slots": slots})
    assert_refused(run_playbook("cluster.yml", hosts), "host 'n2': mpi_slots", "is not a positive integer")


@pytest.mark.parametrize("gpus", [-1, "many"])
def test_gpu_count_not_a_count(run_playbook, gpus):
    hosts = hosts_with(n3={"gpu_count": gpus})
    assert_refused(run_playbook("cluster.yml", hosts), "host 'n3': gpu_count", "is not a non-negative integer")


def test_unknown_storage_backend(run_playbook):
    hosts = hosts_with(n1={"cpfs_client_backend": "ceph"})
    text = assert_refused(run_playbook("storage.yml", hosts), "host 'n1': cpfs_client_backend 'ceph' is unknown")
    assert "cpfs_lustre, cpfs_nfs, nfs, glusterfs" in text


BAD_BUNDLE_DIRS = [("scc-bundle", "'scc-bundle'"), (["/mnt/b"], "'['/mnt/b']'"), (None, "'None'"), (True, "'True'")]


@pytest.mark.parametrize(("value", "shown"), BAD_BUNDLE_DIRS)
def test_bundle_dir_not_an_absolute_path(run_playbook, value, shown):
    """A relative path or a non-string scc_bundle_dir is refused by the sources phase (and the preflight) before
    bundle_source's own argument check, whose message would name neither scc_bundle_dir nor the fix."""
    text = assert_refused(run_playbook("sources.yml", hosts_with(n2={"scc_bundle_dir": value})),
                          f"host 'n2': scc_bundle_dir {shown} is not an absolute path", "/mnt/cpfs/scc-bundle",
                          "--bundle DIR")
    assert "with 1 problem(s)" in text


def test_all_problems_in_one_message(run_playbook):
    hosts = hosts_with(n1={"mpi_slots": 0}, n2={"ansible_host": "10.91.0.11"}, n3={"cpfs_client_backend": "x"})
    text = assert_refused(run_playbook("cluster.yml", hosts), "with 3 problem(s)")
    assert "host 'n1': mpi_slots" in text and "cpfs_client_backend 'x'" in text and "10.91.0.11" in text


def test_good_inventory_passes_the_check(run_playbook):
    # A valid inventory gets past the check; its nodes do not exist, so the next play ends 'unreachable'.
    run = run_playbook("cluster.yml", GOOD)
    assert "Inventory check failed" not in run.output and "Traceback" not in run.output
    recap = run.recap()
    assert recap["localhost"]["failed"] == 0
    assert all(recap[h]["unreachable"] == 1 for h in GOOD), recap


@pytest.mark.parametrize("playbook", ["cluster.yml", "storage.yml", "sources.yml"])
def test_playbooks_pass_syntax_check(run_playbook, playbook):
    run = run_playbook(playbook, GOOD, "scc_cluster", "--syntax-check")
    assert run.rc == 0, run.output
