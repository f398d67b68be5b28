"""What a person checks by hand on a freshly wired cluster (molecule scenarios `cluster`, 3 nodes; `cluster8`, 8)."""

from __future__ import annotations

import json
import re
import secrets
import shlex
import subprocess

import pytest
from conftest import ENV_FILE, HOSTFILE, MOUNTPOINT, REPO_ROOT, platforms, playbook, write_inventory

NODES = {name: p["networks"][0]["ipv4_address"] for name, p in platforms().items()}
NAMES = list(NODES)
PAIRS = [(a, b) for a in NAMES for b in NAMES if a != b]


@pytest.mark.parametrize(("src", "dst"), PAIRS)
def test_every_node_resolves_every_other_node(hosts, src, dst):
    out = hosts[src].check_output(f"getent hosts {dst}")
    assert out.split()[0] == NODES[dst], out


def test_hosts_block_lists_every_node_once(hosts):
    for name in NAMES:
        text = hosts[name].file("/etc/hosts").content_string
        block = text.split("# BEGIN scc.nlp_training cluster")[1].split("# END scc.nlp_training cluster")[0]
        lines = [line.split() for line in block.strip().splitlines()]
        assert lines == [[ip, node] for node, ip in NODES.items()], block


@pytest.mark.parametrize(("src", "dst"), PAIRS)
def test_ssh_between_nodes_with_strict_host_key_checking(hosts, src, dst):
    cmd = hosts[src].run(f"ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=10 {dst} hostname")
    assert cmd.rc == 0, cmd.stderr
    assert cmd.stdout.strip() == dst


def test_ssh_client_keeps_host_key_checking_on(hosts):
    for src, dst in PAIRS:
        effective = hosts[src].check_output(f"ssh -G {dst}")
        assert re.search(r"^stricthostkeychecking true$", effective, re.M), effective
    for name in NAMES:
        configs = hosts[name].check_output(
            "for f in /etc/ssh/ssh_config /etc/ssh/ssh_config.d/* /root/.ssh/config /etc/openmpi/*.conf; "
            "do if [ -f \"$f\" ]; then cat \"$f\"; fi; done")
        assert "StrictHostKeyChecking yes" in configs  # the cluster's own settings were read
        off = r"(?im)^\s*[^#\n]*(StrictHostKeyChecking[\s=]+(?:no|off)|UserKnownHostsFile[\s=]+/dev/null)"
        disabled = re.findall(off, configs)
        assert disabled == [], f"{name}: host key checking disabled: {disabled}"


def test_ssh_refuses_an_unknown_host_key(hosts):
    node1 = hosts[NAMES[0]]
    empty = node1.run(f"ssh -o BatchMode=yes -o GlobalKnownHostsFile=/dev/null -o UserKnownHostsFile=/dev/null "
                      f"-o ConnectTimeout=10 {NAMES[1]} hostname")
    assert empty.rc == 255
    assert "Host key verification failed" in empty.stderr
    # A known_hosts that gives node2's name the key of node3: ssh must refuse, not connect.
    node3_key = hosts[NAMES[2]].check_output("cat /etc/ssh/ssh_host_ed25519_key.pub").split()[:2]
    node1.check_output(f"echo '{NAMES[1]} {' '.join(node3_key)}' > /tmp/clu-wrong-known-hosts")
    wrong = node1.run(f"ssh -o BatchMode=yes -o HostKeyAlgorithms=ssh-ed25519 "
                      f"-o GlobalKnownHostsFile=/tmp/clu-wrong-known-hosts -o UserKnownHostsFile=/dev/null "
                      f"-o ConnectTimeout=10 {NAMES[1]} hostname")
    node1.run("rm -f /tmp/clu-wrong-known-hosts")
    assert wrong.rc == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in wrong.stderr


def test_known_hosts_hold_the_real_host_keys(hosts):
    for name in NAMES:
        known = hosts[name].file("/etc/ssh/ssh_known_hosts").content_string
        for other in NAMES:
            key = hosts[other].check_output("cat /etc/ssh/ssh_host_ed25519_key.pub").split()[1]
            assert f"{other},{NODES[other]} ssh-ed25519 {key}" in known


def test_authorized_key_is_limited_to_the_cluster(hosts):
    for name in NAMES:
        keys = hosts[name].file("/root/.ssh/authorized_keys")
        assert keys.mode == 0o600
        entries = [line for line in keys.content_string.splitlines() if line and not line.startswith("#")]
        assert len(entries) == 1, entries
        assert entries[0].startswith('from="' + ",".join(NODES.values()) + '" ssh-ed25519 ')
        assert hosts[name].file("/root/.ssh/id_ed25519").mode == 0o600


def test_mpihosts_lists_every_node_with_its_slots(hosts):
    for name in NAMES:
        lines = [line for line in hosts[name].file(HOSTFILE).content_string.splitlines()
                 if line and not line.startswith("#")]
        assert lines == [f"{node} slots=1" for node in NAMES]


def test_openmpi_version_and_mca_settings(hosts):
    for name in NAMES:
        assert "mpirun (Open MPI) 4.1.4" in hosts[name].check_output("mpirun --version")
        info = hosts[name].check_output("ompi_info --all --parsable")
        assert "param:btl_tcp_if_include:value:10.91.0.0/24" in info
        assert "param:oob_tcp_if_include:value:10.91.0.0/24" in info
        env = hosts[name].file(ENV_FILE).content_string
        assert "export OMPI_ALLOW_RUN_AS_ROOT=1" in env and "export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" in env


def test_mpirun_allreduce_across_all_nodes(hosts):
    node1 = hosts[NAMES[0]]
    work = f"{MOUNTPOINT}/scc-mpi-test"
    source = (REPO_ROOT / "tests/fixtures/mpi/allreduce.c").read_text()
    node1.check_output(f"mkdir -p {work}")
    subprocess.run(["docker", "exec", "-i", NAMES[0], "sh", "-c", f"cat > {work}/allreduce.c"],
                   input=source, text=True, check=True)
    node1.check_output(f"mpicc -O2 -o {work}/allreduce {work}/allreduce.c")
    slots = sum(int(line.split("slots=")[1]) for line in node1.file(HOSTFILE).content_string.splitlines()
                if "slots=" in line and not line.startswith("#"))
    run = node1.run(f". {ENV_FILE} && mpirun --hostfile {HOSTFILE} -np {slots} {work}/allreduce")
    assert run.rc == 0, run.stdout + run.stderr
    ranks = re.findall(r"^allreduce rank=(\d+) size=(\d+) host=(\S+) sum=(\d+) expected=(\d+) vector=(\w+)$",
                       run.stdout, re.M)
    assert sorted(int(r[0]) for r in ranks) == list(range(slots))
    assert {r[2] for r in ranks} == set(NAMES), "every node runs a rank"
    want = slots * (slots + 1) // 2
    for _rank, size, _host, total, expected, vector in ranks:
        assert (int(size), int(total), int(expected), vector) == (slots, want, want, "ok")


def test_file_written_on_node3_is_read_on_node1(hosts):
    token = secrets.token_hex(16)
    path = f"{MOUNTPOINT}/clu-verify-{token}"
    hosts[NAMES[2]].check_output(f"echo {token} > {path}")
    try:
        assert hosts[NAMES[0]].check_output(f"cat {path}") == token
    finally:
        hosts[NAMES[2]].run(f"rm -f {path}")


def test_shared_storage_is_mounted_from_fstab_with_netdev(hosts):
    for name in NAMES:
        node = hosts[name]
        fields = [line.split() for line in node.file("/etc/fstab").content_string.splitlines()
                  if not line.startswith("#") and len(line.split()) >= 4]
        mine = [f for f in fields if f[1] == MOUNTPOINT]
        assert len(mine) == 1, fields
        assert mine[0][0] == "clu-node1:/gv0" and mine[0][2] == "glusterfs"
        assert "_netdev" in mine[0][3].split(",")
        assert node.check_output(f"findmnt -n -o FSTYPE --mountpoint {MOUNTPOINT}") == "fuse.glusterfs"


def test_local_facts_record_the_setup(hosts):
    for name in NAMES:
        cluster = json.loads(hosts[name].file("/etc/ansible/facts.d/scc_cluster.fact").content_string)
        assert cluster["nodes"] == NAMES and int(cluster["total_slots"]) == len(NAMES)
        storage = json.loads(hosts[name].file("/etc/ansible/facts.d/scc_cpfs_client.fact").content_string)
        assert (storage["backend"], storage["mountpoint"]) == ("glusterfs", MOUNTPOINT)
        openmpi = json.loads(hosts[name].file("/etc/ansible/facts.d/scc_openmpi.fact").content_string)
        assert openmpi["version"] == "4.1.4"


def test_unreachable_mount_source_fails_with_mount_error_and_fstab_untouched(tmp_path, hosts):
    inv = write_inventory(tmp_path, NODES)
    before = hosts[NAMES[1]].file("/etc/fstab").content_string
    run = playbook(inv, "storage.yml", "--limit", NAMES[1], "-e", "cpfs_client_glusterfs_volume=clu-node1:/nosuchvol",
                   "-e", "scc_shared_dir=/mnt/clu-bad")
    assert run.rc == 2, run.tail()
    assert [h for h, _unused in run.failures] == [NAMES[1]], run.tail()
    msg = run.failures[0][1]["msg"]
    assert "cannot mount clu-node1:/nosuchvol (glusterfs, cpfs_client_glusterfs_volume)" in msg
    assert re.search(r"Mounting glusterfs on /tmp/scc-cpfs-probe\.\w+ failed", msg)  # the mount's own error
    assert "/etc/fstab was not changed" in msg and "Fix:" in msg
    assert hosts[NAMES[1]].file("/etc/fstab").content_string == before
    assert hosts[NAMES[1]].run("findmnt /mnt/clu-bad").rc == 1


def test_verify_names_a_wrong_address_and_a_node_without_sshd(tmp_path, hosts):
    """The cluster role's own checks can fail: a stale /etc/hosts line ahead of the block on one node, sshd stopped
    on another; each node's failure names the pair and what it saw."""
    stale, wrong, silent = NAMES[0], NAMES[1], NAMES[-1]
    node = hosts[stale]
    saved = node.file("/etc/hosts").content_string
    # /etc/hosts is Docker's bind mount: rewritten in place.
    node.check_output(f"{{ echo '10.91.0.99 {wrong}'; cat /etc/hosts; }} > /tmp/hosts && cat /tmp/hosts > /etc/hosts")
    hosts[silent].check_output("systemctl stop ssh.socket ssh.service 2>/dev/null; systemctl stop ssh")
    try:
        run = playbook(write_inventory(tmp_path, NODES), "cluster.yml", "--tags", "cluster_verify")
    finally:
        node.check_output(f"printf %s {shlex.quote(saved)} > /etc/hosts")
        hosts[silent].check_output("systemctl start ssh")
    assert run.rc == 2, run.tail()
    failed = dict(run.failures)
    assert sorted(failed) == sorted(n for n in NAMES if n != silent), run.tail()
    assert f"cluster on {stale}: {wrong} resolves to 10.91.0.99, not {NODES[wrong]}" in failed[stale]["msg"]
    for name in NAMES:
        if name in (stale, silent):
            continue
        msg = " ".join(failed[name]["msg"].split())
        assert msg.startswith(f"cluster: ssh from {name} failed: to {silent} (rc 255, printed \"\", expected "
                              f"\"{silent}\"): ssh: connect to host {silent}"), msg
        assert "Fix: check that sshd runs on those nodes" in msg
    assert node.file("/etc/hosts").content_string == saved
