"""Day-2 operations on the converged cluster (three nodes in `cluster`, eight in `cluster8`), in the order a
cluster sees them; the tests run in file order and each leaves the cluster as it found it (asserted by the cluster
files' hashes): a run limited to one node, a new node nobody can reach, validation blaming the node without the
mount, a node lost in the middle of a deploy and the re-run that completes it, refusing to remove a node that holds a
brick, adding a node and removing it again. Each asserts on the nodes' files (hashes), the recap and mpirun.

Every run's wall time goes to $MOLECULE_EPHEMERAL_DIRECTORY/day2-times.json (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import testinfra
from conftest import (
    CLUSTER_FILES,
    HOSTFILE,
    MOUNTPOINT,
    SCENARIO_DIR,
    Run,
    file_hashes,
    mpirun_hostname,
    platforms,
    playbook,
    ssh_access,
    write_inventory,
)

PLATFORMS = platforms()
NODES = {name: p["networks"][0]["ipv4_address"] for name, p in PLATFORMS.items()}
NAMES = list(NODES)
BRICKS = [name for name, p in PLATFORMS.items() if "clu_bricks" in p.get("groups", [])]
CLIENTS = [name for name in NAMES if name not in BRICKS]
LIMITED, LOST = CLIENTS[0], CLIENTS[-1]   # client-only nodes: clu-node4 and clu-node8
NEW, NEW_IP = "clu-node9", "10.91.0.19"
# The cluster files before the day-2 cases: every case ends with them (a case that fails may leave them changed).
ORIGINAL: dict[str, dict[str, str]] = {}
CONVERGE = str(SCENARIO_DIR / "converge.yml")
# Files a node's installs change (packages, mounts, MPI and NCCL settings), beside its cluster files.
INSTALLED = ("/var/lib/dpkg/status", "/etc/fstab", "/etc/nccl.conf", "/etc/openmpi/openmpi-mca-params.conf")


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


def _block(text: str) -> list[str]:
    return text.split("# BEGIN scc.nlp_training cluster\n")[1].split("# END scc.nlp_training cluster")[0].splitlines()


def test_limit_to_one_node_writes_what_a_full_run_writes(tmp_path, hosts):
    full = _everywhere(hosts, NAMES)
    node = hosts[LIMITED]
    # What a half-done node looks like: the hosts block and the hostfile gone, the authorized key of another cluster.
    # /etc/hosts is Docker's bind mount: rewritten in place (sed -i would rename over it).
    node.check_output("sed '/# BEGIN scc.nlp_training cluster/,/# END scc.nlp_training cluster/d' /etc/hosts "
                      "> /tmp/hosts && cat /tmp/hosts > /etc/hosts")
    node.check_output(f"rm -f {HOSTFILE}")
    node.check_output("sed -i 's/from=\"[^\"]*\"/from=\"10.0.0.1\"/' /root/.ssh/authorized_keys")
    assert file_hashes(node) != full[LIMITED]
    inv = write_inventory(tmp_path, NODES)
    run = _timed("limit_one_node_cluster_yml", playbook(inv, "cluster.yml", "--limit", LIMITED))
    assert run.rc == 0, run.tail()
    assert set(run.recap) == {LIMITED}, run.recap
    # One node_files run writes the cluster files (the hosts block, the hostfile and the authorized key among them):
    # it reports the repair once; the comparison below proves each of the three is back.
    assert run.recap[LIMITED]["changed"] >= 1, run.recap
    assert _everywhere(hosts, NAMES) == full   # byte-identical to the full run's, on it and (untouched) on the others


def test_a_new_node_nobody_can_reach_is_not_written_into_the_cluster_files(tmp_path, hosts):
    before = _everywhere(hosts, NAMES)
    ghost = "clu-ghost"   # nothing answers on its address
    inv = write_inventory(tmp_path, {**NODES, ghost: "10.91.0.99"}, silent=(ghost,))
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


def test_a_node_lost_mid_deploy_is_named_and_a_rerun_completes_it(tmp_path, hosts):
    """site.yml's chain limited to three nodes (the first node, which runs the cluster-wide checks, a client and the
    node that is lost) and the controller's plays, so that the two runs fit in make test; a limited run wires, mounts
    and validates its nodes against the whole cluster's files, and the nodes outside it must come out untouched."""
    run_on = list(dict.fromkeys([NAMES[0], *CLIENTS[:-1][:1], LOST]))   # 8 nodes: three of them; 3 nodes: two
    before = _everywhere(hosts, NAMES)
    with ssh_access(tmp_path, hosts[LOST], NODES[LOST]) as lost_over_ssh:
        inv = write_inventory(tmp_path, NODES, over_ssh={LOST: lost_over_ssh})
        _lose_a_node_and_rerun(tmp_path, hosts, run_on, inv)
    assert _everywhere(hosts, NAMES) == before
    assert mpirun_hostname(hosts[NAMES[0]]) == sorted(NAMES)


def _lose_a_node_and_rerun(tmp_path, hosts, run_on, inv) -> None:

    def lose_the_node(_proc, out: str) -> bool:
        if "PLAY [Mount the shared storage]" not in out:
            return False
        subprocess.run(["docker", "stop", "-t", "1", LOST], check=True, capture_output=True)
        return True

    limit = ("--limit", ",".join([*run_on, "localhost"]))   # localhost: the inventory check and the report
    try:
        lost = _timed("site_node_lost", playbook(inv, CONVERGE, *limit, *_report(tmp_path), on_start=lose_the_node))
    finally:
        subprocess.run(["docker", "start", LOST], check=True, capture_output=True)
    assert lost.rc == 4, lost.tail()
    assert lost.recap[LOST]["unreachable"] == 1, lost.recap
    assert set(lost.recap) == {*run_on, "localhost"}, lost.recap
    for name in run_on[:-1]:
        assert (lost.recap[name]["failed"], lost.recap[name]["unreachable"]) == (0, 0), lost.recap
    # The other nodes finished: their validation fragments came back; the cluster checks name the missing node.
    flat = " ".join(lost.stdout.split())
    assert flat.count("every check passed or was skipped with a reason") == len(run_on) - 1, lost.tail()
    assert f"not reached in this run: {LOST} (start the node or fix its connection, then run again)" in flat
    # Back again: systemd up, then the same command completes it and changes nothing on the others.
    _wait_for_systemd(LOST)
    again = _timed("site_rerun_after_lost", playbook(inv, CONVERGE, *limit, *_report(tmp_path)))
    assert again.rc == 0, again.tail()
    for name in run_on[:-1]:
        assert again.recap[name]["changed"] == 0, again.recap
    assert again.recap[LOST]["changed"] > 0, again.recap   # what it missed (Docker also rewrote its /etc/hosts)
    assert hosts[LOST].check_output(f"findmnt -n -o FSTYPE --mountpoint {MOUNTPOINT}") == "fuse.glusterfs"


def _wait_for_systemd(name: str) -> None:
    for _attempt in range(60):
        state = subprocess.run(["docker", "exec", name, "systemctl", "is-system-running"], capture_output=True,
                               text=True, check=False).stdout.strip()
        if state in ("running", "degraded"):
            return
        time.sleep(1)
    pytest.fail(f"{name}: systemd did not come up after docker start (state {state!r})")


def test_removing_a_node_that_holds_a_brick_is_refused(tmp_path, hosts):
    before = _everywhere(hosts, NAMES)
    brick = BRICKS[-1]
    inv = write_inventory(tmp_path, {n: ip for n, ip in NODES.items() if n != brick})
    run = _timed("remove_brick_node_refused", playbook(inv, "cluster.yml"))
    assert run.rc == 2, run.tail()
    msg = " ".join(run.failures[0][1]["msg"].split())
    assert (f"cpfs_client: {brick} still holds brick(s) {brick}:/bricks/gv0 of GlusterFS volume gv0 but is not in "
            "group 'scc_cluster' of the inventory; nothing was changed. Fix: migrate the brick(s) first") in msg, msg
    assert f"gluster volume replace-brick gv0 {brick}:/bricks/gv0 NEWNODE:/bricks/gv0 commit force" in msg
    assert _everywhere(hosts, NAMES) == before


@pytest.fixture(scope="module")
def new_node():
    """A fresh container like the scenario's (same image and options, from molecule.yml), on the cluster network;
    removed after the add and remove cases."""
    p = PLATFORMS[NAMES[0]]
    args = ["docker", "run", "-d", "--name", NEW, "--hostname", NEW, "--network", p["networks"][0]["name"],
            "--ip", NEW_IP, "--cgroupns", p["cgroupns_mode"]]
    for tmpfs in p["tmpfs"]:
        args += ["--tmpfs", tmpfs]
    for volume in p["volumes"]:
        args += ["-v", volume]
    for device in p["devices"]:
        args += ["--device", device]
    for cap in p["capabilities"]:
        args += ["--cap-add", cap]
    subprocess.run(["docker", "rm", "-f", NEW], check=False, capture_output=True)   # left by an interrupted run
    subprocess.run([*args, p["image"], p["command"]], check=True, capture_output=True)
    try:
        _wait_for_systemd(NEW)
        yield testinfra.get_host(f"docker://{NEW}")
    finally:
        subprocess.run(["docker", "rm", "-f", NEW], check=False, capture_output=True)


def test_adding_a_node(tmp_path, hosts, new_node):
    ORIGINAL.update(_everywhere(hosts, NAMES))
    files_before = {n: {p: hosts[n].file(p).content_string for p in CLUSTER_FILES[:4]} for n in NAMES}
    installed_before = _everywhere(hosts, NAMES, INSTALLED)
    inv = write_inventory(tmp_path, {**NODES, NEW: NEW_IP})
    # README "Adding and removing a node": the cluster playbook on every node, then the chain on the new node only.
    wired = _timed("add_node_cluster_yml", playbook(inv, "cluster.yml"))
    assert wired.rc == 0, wired.tail()
    joined = _timed("add_node_site_limit_new", playbook(inv, CONVERGE, "--limit", NEW, *_report(tmp_path)))
    assert joined.rc == 0, joined.tail()
    assert set(joined.recap) == {NEW}, joined.recap
    assert joined.recap[NEW]["changed"] > 0, joined.recap
    new_key = new_node.check_output("cat /etc/ssh/ssh_host_ed25519_key.pub").split()[1]
    for name in NAMES:
        node = hosts[name]
        assert _everywhere(hosts, [name], INSTALLED)[name] == installed_before[name], f"{name} got installs"
        hosts_now = _block(node.file("/etc/hosts").content_string)
        assert hosts_now == [*_block(files_before[name]["/etc/hosts"]), f"{NEW_IP} {NEW}"], hosts_now
        mpi_now = node.file(HOSTFILE).content_string.splitlines()
        mpi_old = files_before[name][HOSTFILE].splitlines()
        assert [line for line in mpi_now if not line.startswith("#")] == \
            [line for line in mpi_old if not line.startswith("#")] + [f"{NEW} slots=1"]
        known_now = _block(node.file("/etc/ssh/ssh_known_hosts").content_string)
        known_old = _block(files_before[name]["/etc/ssh/ssh_known_hosts"])
        assert known_now[:len(known_old)] == known_old
        assert all(line.startswith(f"{NEW},{NEW_IP} ") for line in known_now[len(known_old):])
        assert any(line.endswith(new_key) for line in known_now[len(known_old):])
        assert NEW_IP in node.file("/root/.ssh/authorized_keys").content_string
    assert new_node.check_output(f"findmnt -n -o FSTYPE --mountpoint {MOUNTPOINT}") == "fuse.glusterfs"
    first = hosts[NAMES[0]]
    assert _block(new_node.file("/etc/hosts").content_string) == _block(first.file("/etc/hosts").content_string)
    assert new_node.file(HOSTFILE).content_string == first.file(HOSTFILE).content_string
    assert mpirun_hostname(hosts[NAMES[0]]) == sorted([*NAMES, NEW])
    assert mpirun_hostname(new_node) == sorted([*NAMES, NEW])


def test_removing_a_node_leaves_no_stale_entry(tmp_path, hosts, new_node):
    """The node added above leaves again: its container stopped, out of the inventory, one cluster run."""
    assert ORIGINAL, "runs after test_adding_a_node"
    subprocess.run(["docker", "stop", "-t", "1", NEW], check=True, capture_output=True)
    run = _timed("remove_node_cluster_yml", playbook(write_inventory(tmp_path, NODES), "cluster.yml"))
    assert run.rc == 0, run.tail()
    assert set(run.recap) == {*NAMES, "localhost"}, run.recap   # localhost: the inventory check
    for name in NAMES:
        for path in CLUSTER_FILES:
            text = hosts[name].file(path).content_string
            assert NEW not in text and NEW_IP not in text, (name, path)
        assert [line.split()[1] for line in _block(hosts[name].file("/etc/hosts").content_string)] == NAMES
    assert mpirun_hostname(hosts[NAMES[0]]) == sorted(NAMES)
    assert _everywhere(hosts, NAMES) == ORIGINAL   # the cluster as it was before the node came
