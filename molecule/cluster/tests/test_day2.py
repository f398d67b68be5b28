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
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import testinfra
from conftest import (
    CLUSTER_FILES,
    HOSTFILE,
    MOUNTPOINT,
    REPO_ROOT,
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
    # ... and no known hosts at all, as on a re-imaged node: the others' keys come from the controller's record.
    node.check_output("rm -f /etc/ssh/ssh_known_hosts")
    assert file_hashes(node) != full[LIMITED]
    inv = write_inventory(tmp_path, NODES)
    run = _timed("limit_one_node_cluster_yml", playbook(inv, "cluster.yml", "--limit", LIMITED))
    assert run.rc == 0, run.tail()
    assert set(run.recap) == {LIMITED}, run.recap
    # it did repair the four files (one node_files run writes every cluster file)
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


def test_validation_blames_the_node_without_the_shared_storage_and_the_brick_that_is_down(tmp_path, hosts):
    node = CLIENTS[-1]   # a client-only node, not the first node
    brick = BRICKS[-1]   # its brick process stopped: the mount still works, the volume is degraded
    hosts[node].check_output(f"umount {MOUNTPOINT}")
    hosts[brick].check_output("kill $(pidof glusterfsd)")   # the brick process (the self-heal daemon is glusterfs)
    try:
        run = _timed("validate_yml", playbook(write_inventory(tmp_path, NODES), "validate.yml", *_report(tmp_path),
                                              "-e", "cpfs_client_glusterfs_settle_timeout=0"))
    finally:
        hosts[node].check_output(f"mount {MOUNTPOINT}")
        _brick_back(hosts)
    assert run.rc == 2, run.tail()
    # not the first node, which ran the cluster checks
    assert sorted(h for h, _unused in run.failures) == sorted([node, brick]), run.tail()
    msg = dict(run.failures)[node]["msg"]
    assert f"{node}: {MOUNTPOINT} is not a mount point: the shared storage is not mounted on this node. " \
           f"Fix: run playbooks/storage.yml --limit {node}" in msg
    assert f"{node}: did not see the file {NAMES[0]} wrote in {MOUNTPOINT}" in msg
    lost = " ".join(dict(run.failures)[brick]["msg"].split())
    assert f"{brick}: GlusterFS volume gv0: brick {brick}:/bricks/gv0 is missing from `gluster volume status` (its " \
           f"process does not run on {brick})" in lost, lost
    assert f"then on {NAMES[0]} `gluster --mode=script volume start gv0 force" in lost, lost
    report = json.loads((tmp_path / "report/fragments" / f"{NAMES[0]}.json").read_text())
    seen = next(c for c in report["cluster"]["checks"] if c["name"] == "shared_storage_visible")
    assert seen["status"] == "fail" and f"not seen (same size) by {node}" in seen["detail"], seen
    whole = next(c for c in report["cluster"]["checks"] if c["name"] == "shared_storage_volume_whole")
    assert whole["status"] == "fail" and f"brick {brick}:/bricks/gv0 is missing" in whole["detail"], whole


def _brick_back(hosts) -> None:
    """Every brick of gv0 running again and nothing left to heal (what the next cases' storage checks require)."""
    hosts[NAMES[0]].check_output("gluster --mode=script volume start gv0 force")
    for _attempt in range(60):
        summary = hosts[NAMES[0]].check_output("gluster volume heal gv0 info summary")
        pending = [int(n) for n in re.findall(r"heal pending: (\d+)", summary)]
        if pending and not any(pending) and "not connected" not in summary:
            return
        time.sleep(1)
    pytest.fail(f"gv0 still heals a minute after its bricks came back: {summary}")


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
    # The lost node may need nothing: the cluster role's boot hook (scc-hosts) put back the hosts block Docker rewrote
    # on its restart; its cluster files are compared byte for byte with the full run's below.
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


def _fresh_container(name: str, ip: str) -> testinfra.host.Host:
    """A container as the scenario makes its nodes (same image and options, from molecule.yml), on the cluster
    network, freshly made: nothing installed, new SSH host keys. Any container of that name goes first."""
    p = PLATFORMS[NAMES[0]]
    args = ["docker", "run", "-d", "--name", name, "--hostname", name, "--network", p["networks"][0]["name"],
            "--ip", ip, "--cgroupns", p["cgroupns_mode"]]
    for tmpfs in p["tmpfs"]:
        args += ["--tmpfs", tmpfs]
    for volume in p["volumes"]:
        args += ["-v", volume]
    for device in p["devices"]:
        args += ["--device", device]
    for cap in p["capabilities"]:
        args += ["--cap-add", cap]
    subprocess.run(["docker", "rm", "-f", name], check=False, capture_output=True)
    subprocess.run([*args, p["image"], p["command"]], check=True, capture_output=True)
    _wait_for_systemd(name)
    return testinfra.get_host(f"docker://{name}")


@pytest.fixture(scope="module")
def new_node():
    """A fresh node on the cluster network, removed after the add and remove cases."""
    try:
        yield _fresh_container(NEW, NEW_IP)
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


def _sccnlp(tmp_path: Path, *args: str) -> Run:
    """`sccnlp ARGS` as a user runs it, its runs recorded under the test's folder."""
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "sccnlp.cli", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          env={**os.environ, "SCCNLP_HOME": str(tmp_path / "sccnlp-home")}, timeout=1800, check=False)
    return Run(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0)


def _on_nodes(text: str) -> list[tuple[str, str]]:
    """(node, command) of every "on NODE" followed by a command in backquotes in a message, in order."""
    return re.findall(r"on (\S+) `([^`]+)`", text)


def test_a_reimaged_brick_server_joins_again_with_one_command(tmp_path, hosts):
    """README "Re-imaging a node": the node comes back under its name and address with new host keys and nothing
    installed (its container made again). The controller refuses it until `sccnlp node reimaged` is run, which trusts
    its new keys, refreshes every node's cluster files and sets it up; its lost GlusterFS brick fails the storage
    check with the commands that add it back, which, run as written, make the volume whole. Runs last: the node is
    left with the cluster and storage phases only."""
    node, ip, first = BRICKS[-1], NODES[BRICKS[-1]], NAMES[0]
    hosts[first].check_output(f"echo before > {MOUNTPOINT}/written-before-reimage")
    old_key = " ".join(hosts[node].check_output("cat /etc/ssh/ssh_host_ed25519_key.pub").split()[:2])
    known = tmp_path / "known_hosts"   # the controller's record of the node, as before the re-image
    known.write_text(f"{ip} {old_key}\n")
    fresh = _fresh_container(node, ip)
    key = tmp_path / "controller_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    fresh.check_output(f"install -d -m 0700 /root/.ssh && echo {key.with_suffix('.pub').read_text().strip()!r} "
                       ">> /root/.ssh/authorized_keys")   # what provisioning does for the new install
    settings = {"ansible_connection": "ssh", "ansible_user": "root", "ansible_ssh_private_key_file": str(key),
                "ansible_ssh_args": "-o ControlMaster=no",
                "ansible_ssh_common_args": f"-o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes "
                                           "-o ConnectTimeout=5"}
    inv = str(write_inventory(tmp_path, NODES, over_ssh={node: settings}))

    refused = _timed("reimaged_refused", _sccnlp(tmp_path, "deploy", "-i", inv, "--playbook", "cluster", "-l", node))
    assert refused.rc == 1, refused.tail()
    flat = " ".join(refused.stdout.split())
    assert f"{node}: its SSH host key is not the one this controller recorded (ED25519 key in {known}:1): REMOTE " \
           f"HOST IDENTIFICATION HAS CHANGED" in flat, flat[-3000:]
    assert f"Fix: if {node} was re-imaged, run `sccnlp node reimaged {node} -i {inv}`" in flat

    joined = _timed("reimaged_node_command", _sccnlp(
        tmp_path, "node", "reimaged", node, "-i", inv, "--playbook", "storage",
        "-e", "cpfs_client_glusterfs_settle_timeout=0"))
    flat = " ".join(joined.stdout.split())
    new_key = " ".join(fresh.check_output("cat /etc/ssh/ssh_host_ed25519_key.pub").split()[:2])
    assert f"{ip} {new_key}" in known.read_text().splitlines() and old_key not in known.read_text(), flat[:2000]
    assert f"{node}: removed 1 old key line(s) of {ip} from {known}" in flat, flat[:2000]
    assert "cluster.yml: OK" in flat, flat[-4000:]
    # Every node's cluster files are those of a full run: the node's own known hosts list every node's keys.
    first_files = file_hashes(hosts[first])
    for name in NAMES:
        assert file_hashes(hosts[name])["/etc/ssh/ssh_known_hosts"] == first_files["/etc/ssh/ssh_known_hosts"], name
        assert _block(hosts[name].file("/etc/hosts").content_string) == \
            _block(hosts[first].file("/etc/hosts").content_string), name
    assert f"{node},{ip} {new_key}" in hosts[first].file("/etc/ssh/ssh_known_hosts").content_string
    assert mpirun_hostname(hosts[first]) == sorted(NAMES)
    # Its brick went with the old install: the storage check names it, with the commands that add it back.
    assert joined.rc == 1, joined.tail()
    assert f"brick {node}:/bricks/gv0 is missing from `gluster volume status` (its server {node} is disconnected " \
           "from the trusted pool, state Peer in Cluster)" in flat, flat[-4000:]
    reimaged = flat.split(f"if {node} was re-imaged (its brick and GlusterFS state are gone): ", 1)[1]
    steps = _on_nodes(reimaged.split("volume heal gv0 full`", 1)[0] + "volume heal gv0 full`")
    assert [n for n, _cmd in steps] == [first, node, first, first], steps
    assert steps[0][1] == f"gluster --mode=script volume remove-brick gv0 replica {len(BRICKS) - 1} " \
                          f"{node}:/bricks/gv0 force && gluster --mode=script peer detach {node} force"
    t0 = time.monotonic()
    for i, (where, command) in enumerate(steps):
        if i == 3:   # "once gluster peer status on FIRST shows NODE in state Peer in Cluster"
            _wait_until(hosts[first], f"gluster peer status | grep -A2 'Hostname: {node}$' | grep -q 'Peer in Cluster'")
        hosts[where].check_output(command)
    _wait_until(hosts[first], "gluster volume heal gv0 info summary | grep 'heal pending' | grep -qv ': 0$' && exit 1 "
                              "|| exit 0")
    _record_time("reimaged_brick_fix_commands", time.monotonic() - t0)
    again = _timed("reimaged_storage_rerun", _sccnlp(tmp_path, "deploy", "-i", inv, "--playbook", "storage", "-l",
                                                     f"{node},localhost"))
    assert again.rc == 0, again.tail()
    assert fresh.check_output("cat /bricks/gv0/written-before-reimage") == "before"   # healed onto the new brick
    assert fresh.check_output(f"findmnt -n -o FSTYPE --mountpoint {MOUNTPOINT}") == "fuse.glusterfs"


def _wait_until(host: testinfra.host.Host, check: str, seconds: int = 60) -> None:
    for _attempt in range(seconds):
        if host.run(check).rc == 0:
            return
        time.sleep(1)
    pytest.fail(f"{check!r} did not succeed within {seconds} s")


def _record_time(name: str, seconds: float) -> None:
    _timed(name, Run(0, "", "", seconds))
