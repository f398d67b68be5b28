"""What the cluster scenario's tests share: the nodes (from molecule.yml), testinfra hosts, and running the
collection's playbooks against the converged containers with an inventory the test writes (extra or fewer nodes).

The nodes are reached with testinfra's docker backend by container name: the scenario's inventory sets ansible_host
to the management IP (what /etc/hosts and the SSH trust are built from), which testinfra's ansible backend would take
for the container name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest
import testinfra
import yaml

SCENARIO_DIR = Path(os.environ.get("MOLECULE_SCENARIO_DIRECTORY", Path(__file__).resolve().parents[1]))
REPO_ROOT = SCENARIO_DIR.parents[1]
# The group settings live with these tests (molecule/cluster/inventory); molecule/cluster8 links to them.
GROUP_VARS = Path(__file__).resolve().parents[1] / "inventory" / "group_vars" / "scc_cluster.yml"
HOSTFILE = "/etc/scc/mpihosts"
ENV_FILE = "/etc/scc/scc.env"
MOUNTPOINT = "/mnt/cpfs"
# The files the cluster role renders on every node (README "Adding and removing a node").
CLUSTER_FILES = ("/etc/hosts", "/etc/ssh/ssh_known_hosts", "/root/.ssh/authorized_keys", HOSTFILE,
                 "/etc/ssh/ssh_config.d/50-scc-cluster.conf", "/etc/ansible/facts.d/scc_cluster.fact")


def platforms() -> dict[str, dict]:
    """Node name -> its molecule platform (management IP under networks[0], groups)."""
    molecule = yaml.safe_load((SCENARIO_DIR / "molecule.yml").read_text())
    return {p["name"]: p for p in molecule["platforms"]}


@pytest.fixture(scope="session")
def hosts() -> dict[str, testinfra.host.Host]:
    return {name: testinfra.get_host(f"docker://{name}") for name in platforms()}


@dataclass
class Run:
    """One ansible-playbook run: exit status, output (stdout and stderr together), wall time."""

    rc: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def recap(self) -> dict[str, dict[str, int]]:
        rows = re.findall(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", self.stdout, re.M)
        return {host: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)} for host, counts in rows}

    @property
    def failures(self) -> list[tuple[str, dict]]:
        """(host, result) of every `fatal: [host]: FAILED! => {...}`, the JSON read whole even over several lines."""
        output = self.stdout + "\n" + self.stderr
        decoder = json.JSONDecoder()
        found = []
        for m in re.finditer(r"^fatal: \[(\S+)\]: FAILED! => ", output, re.M):
            result, _unused = decoder.raw_decode(output, m.end())
            found.append((m.group(1), result))
        return found

    def tail(self, n: int = 4000) -> str:
        return self.stdout[-n:] + "\n" + self.stderr[-n // 2:]


def tool(name: str) -> str:
    """An Ansible command from the environment running these tests (the project's .venv), else from PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    assert found, f"{name} is not installed next to {sys.executable} nor on PATH"
    return found


def write_inventory(tmp_path: Path, nodes: dict[str, str], bricks: Optional[list[str]] = None,
                    silent: tuple[str, ...] = (), over_ssh: Optional[dict[str, dict[str, str]]] = None) -> Path:
    """The scenario's group and host settings for these nodes (name -> management IP), as a static inventory.
    Nodes in `silent` are reached over ssh at their address, where nothing answers: UNREACHABLE, as on a real
    cluster. Nodes in `over_ssh` (name -> host settings, from ssh_access) are reached over ssh, so that a node that
    stops answering is UNREACHABLE as on a real cluster: the docker connection, which pipelines, reports a stopped
    container as a FAILED task instead."""
    inv = tmp_path / "inventory"
    (inv / "group_vars").mkdir(parents=True)
    (inv / "group_vars/scc_cluster.yml").write_text(GROUP_VARS.read_text())
    hosts = {name: {"ansible_connection": "community.docker.docker", "ansible_host": ip, "ansible_docker_host": name}
             for name, ip in nodes.items()}
    for name in silent:
        hosts[name] = {"ansible_connection": "ssh", "ansible_host": nodes[name],
                       "ansible_ssh_common_args": "-o ConnectTimeout=5"}
    for name, settings in (over_ssh or {}).items():
        hosts[name] = {"ansible_host": nodes[name], **settings}
    groups = {"scc_cluster": {"hosts": hosts}}
    if bricks is not None:
        groups["clu_bricks"] = {"hosts": {b: {} for b in bricks}}
    (inv / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": groups}}, sort_keys=False))
    return inv


def playbook(inv: Path, book: str, *args: str, timeout: int = 1800, on_start=None) -> Run:
    """ansible-playbook BOOK (playbooks/<book>, or a path) with one known output format whatever molecule's
    environment sets; on_start(process, output_so_far) is called as output arrives (to act during the run);
    env: extra environment settings."""
    import time

    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default",
           "ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_CALLBACK_FORMAT_PRETTY": "false",
           "ANSIBLE_DISPLAY_FAILED_STDERR": "false", "ANSIBLE_DISPLAY_OK_HOSTS": "true"}
    path = Path(book) if book.endswith(".yml") and "/" in book else REPO_ROOT / "playbooks" / book
    cmd = [tool("ansible-playbook"), "-i", str(inv), str(path), *args]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        out.append(line)
        if on_start is not None and on_start(proc, "".join(out[-50:])):
            on_start = None
    rc = proc.wait(timeout=timeout)
    return Run(rc, "".join(out), "", time.monotonic() - t0)


@contextlib.contextmanager
def ssh_access(tmp_path: Path, host: testinfra.host.Host, ip: str):
    """Root ssh from the controller to one node for the length of a test: a key pair of the test's own in the node's
    authorized_keys (removed afterwards, leaving the file as it was), the node's real host key in a known_hosts file
    of the test (strict checking), and no connection sharing (a stopped node must fail the next task at once, not
    hang on a shared connection). Yields the inventory host settings."""
    key = tmp_path / "controller_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "day2-test", "-f", str(key)], check=True)
    public = key.with_suffix(".pub").read_text().strip()
    (tmp_path / "known_hosts").write_text(
        f"{ip} {' '.join(host.check_output('cat /etc/ssh/ssh_host_ed25519_key.pub').split()[:2])}\n")
    saved = host.file("/root/.ssh/authorized_keys").content_string
    host.check_output(f"echo {shlex.quote(public)} >> /root/.ssh/authorized_keys")
    try:
        yield {"ansible_connection": "ssh", "ansible_user": "root", "ansible_ssh_private_key_file": str(key),
               "ansible_ssh_args": "-o ControlMaster=no -o ServerAliveInterval=5 -o ServerAliveCountMax=2",
               "ansible_ssh_common_args": f"-o UserKnownHostsFile={tmp_path / 'known_hosts'} "
                                          "-o StrictHostKeyChecking=yes -o ConnectTimeout=5"}
    finally:
        host.check_output(f"printf %s {shlex.quote(saved)} > /root/.ssh/authorized_keys")


def file_hashes(host: testinfra.host.Host, paths=CLUSTER_FILES) -> dict[str, str]:
    """sha256 of each file on the node ('' for a missing one)."""
    out = {}
    for path in paths:
        f = host.file(path)
        out[path] = hashlib.sha256(f.content).hexdigest() if f.exists else ""
    return out


def mpirun_hostname(host: testinfra.host.Host) -> list[str]:
    """Host names printed by mpirun -np <slots of the hostfile> hostname, run from this node."""
    slots = sum(int(line.split("slots=")[1]) for line in host.file(HOSTFILE).content_string.splitlines()
                if "slots=" in line and not line.startswith("#"))
    run = host.run(f". {ENV_FILE} && timeout 120 mpirun --hostfile {HOSTFILE} -np {slots} hostname")
    assert run.rc == 0, run.stdout + run.stderr
    return sorted(run.stdout.split())
