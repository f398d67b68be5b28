"""Bring the local test cluster up and down: Debian 12 nodes (systemd + sshd) as Docker containers on a private
network, SSH access for the controller with verified host keys, GlusterFS as the shared-storage stand-in for CPFS,
and an inventory describing it all."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from sccnlp.errors import SccError
from sccnlp.paths import collection_root
from sccnlp.testbed import docker as dk
from sccnlp.testbed.image import IMAGE_REPO, SUITE, build_image

Log = Callable[[str], None]
# A test bed's name prefixes its containers and network and names its state folder: Docker's name rules, no paths.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")


def state_root() -> Path:
    return Path(os.environ.get("SCCNLP_HOME", Path.home() / ".sccnlp")) / "testbed"


@dataclass
class TestbedSpec:
    name: str = "scc-tb"
    nodes: int = 3
    subnet: str = "10.88.0.0/24"
    wheel_dir: str | None = "/opt/wheels"
    ca_bundle: str = "/etc/ssl/certs/ca-certificates.crt"
    shared_dir: str = "/mnt/shared"
    volume: str = "gv0"
    # False: nothing from the nodes is forwarded beyond their network (they reach each other and the controller).
    # The GlusterFS service (the cloud side, there before any deploy) is installed first, then egress is taken away.
    egress: bool = True
    # An offline bundle on the controller (sccnlp bundle build) the inventory deploys from: scc_bundle_src.
    bundle: str = ""
    # TensorFlow CPU in the nodes' training venv as well (tensorflow_enabled), for `sccnlp train --framework
    # tensorflow`; an offline bundle then carries its wheels.
    tensorflow: bool = False


@dataclass
class Node:
    name: str
    container: str
    ip: str


@dataclass
class Testbed:
    spec: TestbedSpec
    nodes: list[Node] = field(default_factory=list)

    @property
    def dir(self) -> Path:
        return state_root() / self.spec.name

    @property
    def inventory(self) -> Path:
        return self.dir / "inventory.yml"

    @property
    def key(self) -> Path:
        return self.dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        data = {"spec": asdict(self.spec), "nodes": [asdict(n) for n in self.nodes]}
        (self.dir / "state.json").write_text(json.dumps(data, indent=2))

    @classmethod
    def load(cls, name: str) -> Testbed:
        _check_name(name)
        path = state_root() / name / "state.json"
        if not path.exists():
            raise SccError(f"no test bed named {name!r} (nothing at {path}): run `sccnlp testbed up --name {name}`")
        data = json.loads(path.read_text())
        return cls(TestbedSpec(**data["spec"]), [Node(**n) for n in data["nodes"]])


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise SccError(f"--name {name!r}: use 1 to 40 letters, digits, '_', '.' or '-', starting with a letter or "
                       "digit (e.g. scc-tb)")


def _validate(spec: TestbedSpec) -> ipaddress.IPv4Network:
    _check_name(spec.name)
    if not 1 <= spec.nodes <= 32:
        raise SccError(f"--nodes {spec.nodes}: the test bed runs 1 to 32 nodes")
    try:
        net = ipaddress.ip_network(spec.subnet)
    except ValueError as exc:
        raise SccError(f"--subnet {spec.subnet!r} is not a network ({exc}); use e.g. 10.88.0.0/24") from exc
    if not isinstance(net, ipaddress.IPv4Network):
        raise SccError(f"--subnet {spec.subnet}: the test bed needs an IPv4 network; use e.g. 10.88.0.0/24")
    if net.num_addresses < spec.nodes + 16:
        raise SccError(f"--subnet {spec.subnet} is too small for {spec.nodes} nodes; use a /24")
    if not net.is_private or net.is_loopback or net.is_link_local or net.is_multicast:
        raise SccError(f"--subnet {spec.subnet} is not a private range; use e.g. 10.88.0.0/24")
    return net


def _ensure_network(name: str, net: ipaddress.IPv4Network, log: Log) -> None:
    if dk.run(["network", "inspect", name], check=False).returncode == 0:
        return
    log(f"creating network {name} ({net})")
    gateway = str(net.network_address + 1)
    dk.run(["network", "create", "--driver", "bridge", "--subnet", str(net), "--gateway", gateway, name])


def _egress_rule(net: ipaddress.IPv4Network) -> list[str]:
    """Docker's hook chain for forwarded traffic: anything from the nodes to an address outside their network is
    refused at once (no route out; nothing to wait for), while the nodes still reach each other and the controller
    (the host's address on their bridge is not forwarded)."""
    return ["DOCKER-USER", "-s", str(net), "!", "-d", str(net), "-j", "REJECT", "--reject-with",
            "icmp-net-unreachable"]


def _set_egress(net: ipaddress.IPv4Network, allowed: bool, log: Log) -> None:
    if shutil.which("iptables") is None:
        if allowed:
            return
        raise SccError("iptables is not installed: the test bed cannot take egress away (apt-get install -y iptables)")
    rule = _egress_rule(net)
    present = subprocess.run(["iptables", "-C", *rule], capture_output=True, check=False).returncode == 0
    if not allowed and not present:
        proc = subprocess.run(["iptables", "-I", *rule], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SccError(f"iptables refused the no-egress rule for {net}: {proc.stderr.strip()} (run as root, with "
                           "Docker's iptables chains in place)")
        log(f"egress taken away: {net} reaches only itself and the controller")
    elif allowed and present:
        subprocess.run(["iptables", "-D", *rule], capture_output=True, check=False)


def _forwarding_rule(net: ipaddress.IPv4Network) -> list[str]:
    return ["FORWARD", "-s", str(net), "-d", str(net), "-j", "ACCEPT"]


def _allow_forwarding(net: ipaddress.IPv4Network) -> None:
    """A fresh daemon sets the FORWARD policy to DROP; keep traffic of the test-bed bridge flowing."""
    if shutil.which("iptables") is None:
        return
    rule = _forwarding_rule(net)
    if subprocess.run(["iptables", "-C", *rule], capture_output=True, check=False).returncode != 0:
        subprocess.run(["iptables", "-I", *rule], capture_output=True, check=False)


def _remove_rules(net: ipaddress.IPv4Network) -> None:
    """Every rule `up` added for this subnet (forwarding, no egress), each as often as it is there."""
    if shutil.which("iptables") is None:
        return
    for rule in (_forwarding_rule(net), _egress_rule(net)):
        for _unused in range(16):
            if subprocess.run(["iptables", "-C", *rule], capture_output=True, check=False).returncode != 0:
                break
            subprocess.run(["iptables", "-D", *rule], capture_output=True, check=False)


def _network_subnet(network: str) -> ipaddress.IPv4Network | None:
    proc = dk.run(["network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}} {{end}}", network], check=False)
    for word in proc.stdout.split() if proc.returncode == 0 else []:
        try:
            found = ipaddress.ip_network(word)
        except ValueError:
            continue
        if isinstance(found, ipaddress.IPv4Network):
            return found
    return None


def _start_node(tb: Testbed, node: Node, image: str, network: str) -> None:
    if dk.run(["container", "inspect", node.container], check=False).returncode == 0:
        state = dk.run(["container", "inspect", "-f", "{{.State.Running}}", node.container]).stdout.strip()
        if state != "true":
            dk.run(["start", node.container])
        return
    pip_cache = Path(os.environ.get("SCCNLP_CACHE", "/var/cache/sccnlp")) / "pip"
    pip_cache.mkdir(parents=True, exist_ok=True)
    args = [
        "run", "-d", "--name", node.container, "--hostname", node.name,
        "--network", network, "--ip", node.ip,
        "--tmpfs", "/run", "--tmpfs", "/run/lock", "--cgroupns=host",
        "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
        "-v", f"{pip_cache}:/root/.cache/pip:rw",
        "--device", "/dev/fuse", "--cap-add", "SYS_ADMIN",
        "--label", f"sccnlp.testbed={tb.spec.name}",
        # `systemctl reboot` in a node ends its systemd; Docker starts the container again (a real reboot of the
        # node's userspace). `docker stop`/`kill` (a lost node in the tests) is not restarted.
        "--restart", "unless-stopped",
    ]
    if _wheel_dir(tb.spec):
        args += ["-v", f"{tb.spec.wheel_dir}:{tb.spec.wheel_dir}:ro"]
    dk.run([*args, image])


def _wheel_dir(spec: TestbedSpec) -> str | None:
    """The controller's wheel folder lent to the nodes; none without egress (everything comes from the bundle)."""
    return spec.wheel_dir if spec.egress and spec.wheel_dir and Path(spec.wheel_dir).is_dir() else None


def _exec(container: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return dk.run(["exec", container, *cmd], check=check)


def _wait_ssh_ready(node: Node, timeout: float = 60.0) -> str:
    """Wait for systemd to bring sshd up; return the node's ed25519 host key."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        proc = _exec(node.container, "sh", "-c",
                     "systemctl is-active -q ssh && cat /etc/ssh/ssh_host_ed25519_key.pub", check=False)
        if proc.returncode == 0 and proc.stdout.startswith("ssh-ed25519"):
            return proc.stdout.split()[0] + " " + proc.stdout.split()[1]
        time.sleep(0.5)
    raise SccError(f"{node.name}: sshd did not come up within {timeout:.0f} s (docker logs {node.container})")


def _controller_key(tb: Testbed) -> str:
    tb.dir.mkdir(parents=True, exist_ok=True)
    os.chmod(tb.dir, 0o700)
    if not tb.key.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"sccnlp-testbed-{tb.spec.name}",
                        "-f", str(tb.key)], check=True)
    return tb.key.with_suffix(".pub").read_text().strip()


# A node's sysfs as node_exporter reads it (monitoring_node_exporter_sysfs_path): every entry of the real /sys and of
# /sys/class linked in, and an empty class/infiniband of its own, where the tests put an RDMA test double's devices
# (a container's /sys is read-only and has no RDMA device).
SYSFS_DOUBLE = "/var/lib/scc-testbed/sys"


def _sysfs_double(node: Node) -> None:
    script = (f"d={SYSFS_DOUBLE}; mkdir -p $d/class/infiniband && "
              "for e in /sys/*; do [ \"${e##*/}\" = class ] || ln -sfn \"$e\" $d/; done && "
              "for c in /sys/class/*; do [ \"${c##*/}\" = infiniband ] || ln -sfn \"$c\" $d/class/; done")
    _exec(node.container, "sh", "-c", script)


def _authorize(node: Node, pubkey: str) -> None:
    script = ("install -d -m 0700 /root/.ssh && touch /root/.ssh/authorized_keys && chmod 0600 "
              f"/root/.ssh/authorized_keys && (grep -qxF '{pubkey}' /root/.ssh/authorized_keys || "
              f"echo '{pubkey}' >> /root/.ssh/authorized_keys)")
    _exec(node.container, "sh", "-c", script)


def write_inventory(tb: Testbed) -> Path:
    wheel_dir = _wheel_dir(tb.spec)
    group_vars: dict[str, object] = {
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(tb.key),
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={tb.known_hosts} -o StrictHostKeyChecking=yes",
        "ansible_python_interpreter": "/usr/bin/python3",
        # What a test-bed node is: no GPU, no RDMA, Docker's bind-mounted /etc/hosts.
        "gpu_count": 0,
        "rdma": False,
        "scc_unsafe_writes": True,
        "scc_shared_dir": tb.spec.shared_dir,
        # The shared storage: the GlusterFS volume the test bed serves, standing in for CPFS.
        "cpfs_client_backend": "glusterfs",
        "cpfs_client_glusterfs_volume": f"{tb.nodes[0].name}:/{tb.spec.volume}",
        # pip inside the nodes trusts the controller's CA bundle and takes wheels from its wheel directory.
        "python36_pip_ca_bundle_src": tb.spec.ca_bundle,
        "python36_pip_find_links": [wheel_dir] if wheel_dir else [],
        "ib_check_required": False,
        # node_exporter reads a copy of the node's sysfs whose class/infiniband the tests fill with an RDMA double;
        # scrapes every 5 s, so that the tests wait less for Prometheus to see a change.
        "monitoring_node_exporter_sysfs_path": SYSFS_DOUBLE,
        "monitoring_server_scrape_interval": "5s",
        # A container's boot_id is the host's; systemd's start time changes on every container restart (a reboot:
        # systemd exits, Docker's restart policy starts the container again).
        "node_reboot_boot_time_command": "systemctl show -p UserspaceTimestampMonotonic --value",
    }
    if tb.spec.bundle:
        # Every run on this inventory (deploy, reboot, train) installs only from the bundle.
        group_vars["scc_bundle_src"] = tb.spec.bundle
    if tb.spec.tensorflow:
        group_vars["tensorflow_enabled"] = True
    inventory = {
        "all": {
            "children": {
                "scc_cluster": {
                    "hosts": {n.name: {"ansible_host": n.ip} for n in tb.nodes},
                    "vars": group_vars,
                }
            }
        }
    }
    header = (f"# Written by `sccnlp testbed up --name {tb.spec.name}`: the local test cluster.\n"
              "# Regenerated on every `up`; edit the test bed's options instead.\n")
    tb.inventory.write_text(header + yaml.safe_dump(inventory, sort_keys=False))
    return tb.inventory


def _storage_service(tb: Testbed, log: Log) -> None:
    """Serve a replicated GlusterFS volume across the nodes (the cloud-side CPFS stand-in)."""
    from sccnlp.runner import run_playbook

    book = collection_root() / "molecule" / "resources" / "glusterfs_server.yml"
    log(f"serving GlusterFS volume {tb.spec.volume} across {len(tb.nodes)} nodes")
    with open(os.devnull, "w") as quiet:
        result = run_playbook(str(book), tb.inventory, extravars={
            "glusterfs_server_group": "scc_cluster", "glusterfs_server_volume": tb.spec.volume}, stream=quiet)
    if not result.ok:
        bad = ", ".join(f"{h}: {'; '.join(s.messages[:1])}" for h, s in result.bad_hosts().items())
        raise SccError(f"the GlusterFS storage service did not come up: {bad or result.status}")


def up(spec: TestbedSpec, log: Log = print, storage: bool = True) -> Testbed:
    net = _validate(spec)
    dk.ensure_daemon(log)
    t0 = time.monotonic()
    image = build_image(log=log)
    tb = Testbed(spec)
    # Node i gets the (10 + i)-th address of the subnet (10.88.0.11, .12, ... on a /24); _validate made room for it.
    tb.nodes = [Node(f"node{i}", f"{spec.name}-node{i}", str(net.network_address + 10 + i))
                for i in range(1, spec.nodes + 1)]
    network = f"{spec.name}-net"
    _ensure_network(network, net, log)
    _allow_forwarding(net)
    log(f"starting {spec.nodes} nodes from {image}")
    for node in tb.nodes:
        _start_node(tb, node, image, network)
    pubkey = _controller_key(tb)
    lines = []
    for node in tb.nodes:
        hostkey = _wait_ssh_ready(node)
        _authorize(node, pubkey)
        _sysfs_double(node)
        lines.append(f"{node.ip},{node.name} {hostkey}")
    tb.known_hosts.write_text("\n".join(lines) + "\n")
    tb.save()
    write_inventory(tb)
    # The storage service (the cloud side, there before any deploy) is installed first; then egress goes.
    _set_egress(net, True, log)
    if storage:
        _storage_service(tb, log)
    if not spec.egress:
        _set_egress(net, False, log)
    log(f"test bed {spec.name} up in {time.monotonic() - t0:.0f} s; inventory: {tb.inventory}")
    return tb


def down(name: str, log: Log = print) -> None:
    _check_name(name)
    if not dk.daemon_answers():
        log("no Docker daemon answers: nothing to remove")
        return
    ids = dk.run(["ps", "-aq", "--filter", f"label=sccnlp.testbed={name}"]).stdout.split()
    if ids:
        log(f"removing {len(ids)} containers of {name}")
        dk.run(["rm", "-f", "-v", *ids])
    # The subnet from the saved state, else from the network itself (a test bed whose state is gone).
    subnet = ipaddress.IPv4Network(Testbed.load(name).spec.subnet) if (state_root() / name / "state.json").exists() \
        else _network_subnet(f"{name}-net")
    if dk.run(["network", "inspect", f"{name}-net"], check=False).returncode == 0:
        dk.run(["network", "rm", f"{name}-net"])
    if subnet is not None:
        _remove_rules(subnet)
    state = state_root() / name
    if state.exists():
        shutil.rmtree(state)
    log(f"test bed {name} is down")


def status(name: str) -> list[dict[str, str]]:
    tb = Testbed.load(name)
    rows = []
    for node in tb.nodes:
        proc = dk.run(["container", "inspect", "-f", "{{.State.Status}}", node.container], check=False)
        state = proc.stdout.strip() if proc.returncode == 0 else "missing"
        ssh = "-"
        if state == "running":
            probe = subprocess.run(
                ["ssh", "-i", str(tb.key), "-o", f"UserKnownHostsFile={tb.known_hosts}", "-o",
                 "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                 f"root@{node.ip}", "hostname"], capture_output=True, text=True, check=False)
            ssh = "ok" if probe.returncode == 0 and probe.stdout.strip() == node.name else "FAILED"
        rows.append({"node": node.name, "container": node.container, "ip": node.ip, "state": state, "ssh": ssh})
    return rows


__all__ = ["IMAGE_REPO", "SUITE", "Testbed", "TestbedSpec", "down", "status", "up", "write_inventory"]
