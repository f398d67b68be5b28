"""Rolling reboots and the kernel lock on the converged test bed (`sccnlp up`, inventory in SCCNLP_TESTBED_INVENTORY).

The test-bed containers run with Docker's restart policy `unless-stopped`: `systemctl reboot` inside a node ends its
systemd and Docker starts the container again, a real reboot of the node's userspace (fresh /run, services, fstab
mounts). The boot is told apart by systemd's start time (the test bed's node_reboot_boot_time_command: a container's
boot_id is the host's). Docker writes a fresh /etc/hosts into a container when it starts (a real node keeps its
file), so each node's file, with the cluster role's block, is put back after the tests.
Run: `pytest -m testbed tests/integration/reboot`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.bert.test_bert_testbed import _bin, _env

pytestmark = pytest.mark.testbed

MARK = "/run/scc-reboot-required"
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def containers(testbed_inventory: str) -> dict[str, str]:
    state = Path(testbed_inventory).parent / "state.json"
    if not state.is_file():
        pytest.fail(f"{testbed_inventory} is not a test bed inventory (no {state}): these tests reboot containers")
    return {n["name"]: n["container"] for n in json.loads(state.read_text())["nodes"]}


@pytest.fixture(scope="module")
def shared(testbed_inventory: str) -> str:
    got = subprocess.run([_bin("ansible-inventory"), "-i", testbed_inventory, "--host", "node1"],
                         capture_output=True, text=True, env=_env(), check=True)
    return str(json.loads(got.stdout).get("scc_shared_dir", "/mnt/cpfs"))


def in_node(container: str, cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    got = subprocess.run(["docker", "exec", container, "sh", "-c", cmd], capture_output=True, text=True,
                         timeout=120, check=False)
    if check:
        assert got.returncode == 0, f"{container}: {cmd}: {got.stderr}"
    return got


def boot_stamp(container: str) -> int:
    """systemd's start time in the container (monotonic µs since the host booted): new on every reboot."""
    return int(in_node(container, "systemctl show -p UserspaceTimestampMonotonic --value").stdout)


def stamps(containers: dict[str, str]) -> dict[str, int]:
    return {name: boot_stamp(c) for name, c in containers.items()}


def reboot(inventory: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`sccnlp reboot` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "sccnlp.cli", "reboot", "-i", inventory, "-v", *args],
                          capture_output=True, text=True, env=_env(), timeout=1800, check=False)


def playbook(inventory: str, book: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**_env(), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default",
           "ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_CALLBACK_FORMAT_PRETTY": "false",
           "ANSIBLE_DISPLAY_FAILED_STDERR": "false"}
    return subprocess.run([_bin("ansible-playbook"), "-i", inventory, str(REPO / "playbooks" / book), *args],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=1800, check=False)


def task_hosts(output: str, task: str, status: str = "ok") -> list[str]:
    """Hosts with `status` for every run of TASK in the output, in order (one entry per batch run)."""
    found = []
    for block in re.split(r"^TASK \[", output, flags=re.M)[1:]:
        if block.split("]", 1)[0].endswith(task):
            found += re.findall(rf"^{status}: \[([\w.-]+)\]", block, re.M)
    return found


def recap(output: str) -> dict[str, dict[str, int]]:
    rows = re.findall(r"^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$", output, re.M)
    return {h: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)} for h, counts in rows}


def wait_member(container: str, shared: str, timeout: float = 180) -> None:
    """After a reboot: systemd up, sshd active, the shared storage mounted."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if in_node(container, f"systemctl is-active -q ssh && findmnt -t fuse.glusterfs {shared} >/dev/null",
                   check=False).returncode == 0:
            return
        time.sleep(2)
    raise AssertionError(f"{container}: not back with ssh and {shared} within {timeout:.0f} s")


@pytest.fixture(scope="module", autouse=True)
def hosts_files_kept(containers: dict[str, str], shared: str) -> Iterator[None]:
    """Every node's /etc/hosts (with the cluster block) put back after the module, as a real node keeps it."""
    saved = {c: in_node(c, "cat /etc/hosts").stdout for c in containers.values()}
    yield
    for c, text in saved.items():
        if in_node(c, "true", check=False).returncode != 0:
            subprocess.run(["docker", "start", c], capture_output=True, check=False)
        wait_member(c, shared)
        put = subprocess.run(["docker", "exec", "-i", c, "sh", "-c", "cat > /etc/hosts"], input=text,
                             capture_output=True, text=True, timeout=30, check=False)
        assert put.returncode == 0, put.stderr


def test_a_bad_batch_is_refused_before_any_node_is_touched(testbed_inventory, containers):
    before = stamps(containers)
    cli = reboot(testbed_inventory, "--all", "--batch", "0")
    assert cli.returncode == 2, cli.stdout + cli.stderr
    assert "--batch 0: a batch is a count of nodes (1, 2, ...) or a percentage of the cluster (1% to 100%). " \
           "Fix: e.g. --batch 1 or --batch 25%" in cli.stderr, cli.stderr
    book = playbook(testbed_inventory, "reboot.yml", "-e", "node_reboot_all=true", "-e", "node_reboot_batch=half")
    assert book.returncode == 2, book.stdout[-3000:]
    flat = " ".join(book.stdout.split())
    assert 'node_reboot_batch is "half": it must be a count of nodes (1, 2, ...) or a percentage of the cluster ' \
           "(1% to 100%). Fix: run with -e node_reboot_batch=1" in flat, flat[-3000:]
    assert stamps(containers) == before
    for name, c in containers.items():
        assert in_node(c, f"test -e {MARK}", check=False).returncode == 1, f"{name} was marked"


def test_check_mode_reboots_nothing(testbed_inventory, containers):
    before = stamps(containers)
    cli = reboot(testbed_inventory, "--all", "--check")
    assert cli.returncode == 0, cli.stdout[-3000:] + cli.stderr
    assert stamps(containers) == before
    for name, c in containers.items():
        assert in_node(c, f"test -e {MARK}", check=False).returncode == 1, f"{name} was marked in check mode"


def hosts_file(container: str) -> str:
    return in_node(container, "sha256sum /etc/hosts").stdout.split()[0]


def test_rolling_reboot_in_batches_of_one_validates_each_node_before_the_next(testbed_inventory, containers, shared):
    before = stamps(containers)
    hosts_before = {name: hosts_file(c) for name, c in containers.items()}
    t0 = time.monotonic()
    book = playbook(testbed_inventory, "reboot.yml", "-e", "node_reboot_all=true", "-e", "node_reboot_batch=1")
    seconds = time.monotonic() - t0
    assert book.returncode == 0, book.stdout[-4000:]
    after = stamps(containers)
    names = list(containers)
    assert all(after[n] != before[n] for n in names), (before, after)
    # One node per batch, in inventory order, each validated before the next one's reboot began.
    assert task_hosts(book.stdout, "Reboot the node", "changed") == names, book.stdout[-4000:]
    # The shared storage: the shared-storage check's own assert (roles/_shared_storage, this batch's node only).
    for check in ("Check the kernel the GPU stack was built for", "Fail where the node does not see the shared storage",
                  "Check the NCCL settings", "Check that the node resolves and reaches every other node"):
        assert task_hosts(book.stdout, check) == names, (check, book.stdout[-4000:])
    # No GPU, no RDMA on the test bed: those checks are skipped, not passed.
    assert task_hosts(book.stdout, "Check that every GPU is back", "skipping") == names
    assert task_hosts(book.stdout, "Check that every RDMA port is ACTIVE", "skipping") == names
    order = sorted(names, key=lambda n: after[n])
    assert order == names, after
    for name, c in containers.items():
        assert in_node(c, f"test -e {MARK}", check=False).returncode == 1, f"{name} still marked"
        assert in_node(c, f"findmnt -n -o FSTYPE --mountpoint {shared}").stdout.strip() == "fuse.glusterfs"
    # Docker wrote a fresh /etc/hosts into every node as it started; scc-hosts.service put the cluster block back.
    assert {name: hosts_file(c) for name, c in containers.items()} == hosts_before
    _record("rolling_reboot_3_nodes_batch_1_s", round(seconds, 1))
    # One batch = one node's drain, reboot and validation: the time between two consecutive nodes' boots.
    for first, second in zip(names, names[1:]):
        _record(f"reboot_batch_{first}_to_{second}_s", round((after[second] - after[first]) / 1e6, 1))
    # Nothing is left to reboot: a second run leaves every node as it is.
    again = playbook(testbed_inventory, "reboot.yml")
    assert again.returncode == 0, again.stdout[-3000:]
    assert stamps(containers) == after


def test_a_node_back_without_its_storage_stops_the_rollout_and_a_rerun_continues(
        testbed_inventory, containers, shared):
    names = list(containers)
    bad, last = names[1], names[2]
    fstab = in_node(containers[bad], "cat /etc/fstab").stdout
    assert f" {shared} " in fstab, fstab
    # The node's fstab loses the shared storage: it comes back from the reboot without the mount.
    in_node(containers[bad], f"grep -v ' {shared} ' /etc/fstab > /etc/fstab.new && mv /etc/fstab.new /etc/fstab")
    try:
        before = stamps(containers)
        book = playbook(testbed_inventory, "reboot.yml", "-e", "node_reboot_all=true", "-e", "node_reboot_batch=1",
                        "-e", "node_reboot_settle_timeout=10")
        after = stamps(containers)
    finally:
        put = subprocess.run(["docker", "exec", "-i", containers[bad], "sh", "-c", "cat > /etc/fstab"], input=fstab,
                             capture_output=True, text=True, timeout=30, check=False)
        assert put.returncode == 0, put.stderr
        in_node(containers[bad], f"findmnt {shared} >/dev/null || mount {shared}")
    assert book.returncode == 2, book.stdout[-4000:]
    flat = " ".join(book.stdout.split())
    assert f"{bad}: the shared storage is not mounted at {shared} after the reboot; the rollout stops here. Fix: " \
           f"mount it (run playbooks/storage.yml --limit {bad}; check its fstab entry), then run the reboot again" \
        in flat, flat[-4000:]
    assert after[names[0]] != before[names[0]] and after[bad] != before[bad]
    assert after[last] == before[last], f"{last} was rebooted after the failed batch"
    assert in_node(containers[last], f"test -e {MARK}", check=False).returncode == 0, f"{last} lost its mark"
    assert recap(book.stdout)[bad]["failed"] == 1
    # Mount back; the same rollout, run again without node_reboot_all, reboots only the node still marked.
    again = playbook(testbed_inventory, "reboot.yml", "-e", "node_reboot_batch=1")
    assert again.returncode == 0, again.stdout[-4000:]
    final = stamps(containers)
    assert final[last] != after[last]
    assert {n: final[n] for n in names[:2]} == {n: after[n] for n in names[:2]}
    assert task_hosts(again.stdout, "Reboot the node", "changed") == [last]


def test_a_node_that_boots_with_wrong_names_stops_the_rollout_and_the_cluster_phase_mends_it(
        testbed_inventory, containers, shared):
    """A boot that writes a stale hosts file (cloud-init's template with an old address): here the restore script's
    copy of the block names a peer at a wrong address. The reboot's validation names the peer and the addresses (the
    names are checked before the shared storage, which the wrong name breaks too); the next cluster run puts the block
    and its boot-time copy right, and the reboot then passes."""
    names = list(containers)
    bad, peer = names[1], names[2]
    c = containers[bad]
    line = next(x for x in in_node(c, "cat /etc/hosts").stdout.splitlines() if x.endswith(f" {peer}"))
    right = line.split()[0]
    wrong = right.rsplit(".", 1)[0] + ".99"
    script = "/usr/local/sbin/scc-hosts-restore"
    in_node(c, f"sed -i 's/^{right} {peer}$/{wrong} {peer}/' {script} && grep -q '^{wrong} {peer}$' {script}")
    t0 = time.monotonic()
    book = playbook(testbed_inventory, "reboot.yml", "--limit", bad, "-e", "node_reboot_all=true")
    _record("reboot_wrong_names_s", round(time.monotonic() - t0, 1))
    assert book.returncode == 2, book.stdout[-4000:]
    flat = " ".join(book.stdout.split())
    assert f"{bad}: after the reboot, {peer} resolves to {wrong}, not {right}; ssh to {peer} (rc 255)" in flat, \
        flat[-4000:]
    assert f"the rollout stops here. Fix: run the cluster phase on this node (`sccnlp deploy -i INVENTORY --playbook " \
           f"cluster -l {bad}`" in flat
    t0 = time.monotonic()
    mended = playbook(testbed_inventory, "cluster.yml", "--limit", bad)
    _record("cluster_limit_mends_names_s", round(time.monotonic() - t0, 1))
    assert mended.returncode == 0, mended.stdout[-4000:]
    # the block and its boot-time copy (one node_files run writes both)
    assert recap(mended.stdout)[bad]["changed"] >= 1
    assert f"{right} {peer}" in in_node(c, "cat /etc/hosts").stdout.splitlines()
    assert in_node(c, f"grep -c '^{right} {peer}$' {script}").stdout.strip() == "1"
    # The message's fix ends "then run the reboot again". The node's shared storage did not mount at that boot (its
    # GlusterFS client needs the peers' names): the rollout's token cannot be written there, and the reboot says so
    # before it drains or reboots anything.
    before = boot_stamp(c)
    unmounted = playbook(testbed_inventory, "reboot.yml", "--limit", bad, "-e", "node_reboot_all=true")
    storage_lost = in_node(c, f"mountpoint -q {shared}", check=False).returncode != 0
    _record("wrong_names_left_storage_unmounted", float(storage_lost))
    if storage_lost:
        assert unmounted.returncode == 2, unmounted.stdout[-4000:]
        flat = " ".join(unmounted.stdout.split())
        assert re.search(rf"{bad}: cannot write to {shared}: .* before the rollout; nothing was rebooted\. Fix: mount "
                         rf"it \(run playbooks/storage\.yml --limit {bad};", flat), flat[-4000:]
        assert boot_stamp(c) == before
        # The storage phase mounts it; the reboot then passes, and the mended boot-time copy survives the boot.
        mounted = playbook(testbed_inventory, "storage.yml", "--limit", bad)
        assert mounted.returncode == 0, mounted.stdout[-4000:]
        unmounted = playbook(testbed_inventory, "reboot.yml", "--limit", bad, "-e", "node_reboot_all=true")
    assert unmounted.returncode == 0, unmounted.stdout[-4000:]
    assert boot_stamp(c) != before
    assert f"{right} {peer}" in in_node(c, "cat /etc/hosts").stdout.splitlines()
    assert in_node(c, f"mountpoint -q {shared}", check=False).returncode == 0


def test_a_training_run_on_a_node_is_refused_unless_forced(testbed_inventory, containers):
    node, c = next(iter(containers.items()))
    # A process with a training run's command line (the drain finds runs by `sccnlp.node.bert.train`).
    in_node(c, "nohup bash -c 'exec -a \"python -m sccnlp.node.bert.train --run-dir /mnt/x/runs/rb\" sleep 600' "
               ">/dev/null 2>&1 &")
    assert in_node(c, "pgrep -f 'sccnlp[.]node[.]bert[.]train'", check=False).returncode == 0
    try:
        in_node(c, f"touch {MARK}")
        before = boot_stamp(c)
        refused = playbook(testbed_inventory, "reboot.yml", "--limit", node)
        assert refused.returncode == 2, refused.stdout[-3000:]
        flat = " ".join(refused.stdout.split())
        assert f"{node}: a training run is using this node (1 process(es):" in flat, flat[-3000:]
        assert "sccnlp.node.bert.train --run-dir /mnt/x/runs/rb" in flat
        assert "Fix: wait for the run to end (or stop it), then run the reboot again; or run with " \
               "-e node_reboot_force=true" in flat
        assert boot_stamp(c) == before
        forced = playbook(testbed_inventory, "reboot.yml", "--limit", node, "-e", "node_reboot_force=true")
        assert forced.returncode == 0, forced.stdout[-3000:]
        assert task_hosts(forced.stdout, "Stop the training processes (forced)", "changed") == [node]
        assert boot_stamp(c) != before
        assert in_node(c, "pgrep -f 'sccnlp[.]node[.]bert[.]train'", check=False).returncode == 1
    finally:
        in_node(c, f"pkill -f 'sccnlp[.]bert[.]train'; rm -f {MARK}", check=False)


def test_preflight_refuses_a_node_running_another_kernel_than_recorded(testbed_inventory, containers):
    node = list(containers)[1]
    c = containers[node]
    fact = "/etc/ansible/facts.d/scc_kernel.fact"
    saved = in_node(c, f"cat {fact}").stdout
    recorded = json.loads(saved)
    running = in_node(c, "uname -r").stdout.strip()
    assert recorded["release"] == running, recorded
    in_node(c, f"""python3 -c 'import json; d = json.load(open("{fact}")); d["release"] = "6.1.0-99-amd64"; """
               f"""json.dump(d, open("{fact}", "w"))'""")
    try:
        book = playbook(testbed_inventory, "preflight.yml")
    finally:
        subprocess.run(["docker", "exec", "-i", c, "sh", "-c", f"cat > {fact}"], input=saved, text=True,
                       capture_output=True, check=True)
    assert book.returncode == 2, book.stdout[-3000:]
    flat = " ".join(book.stdout.split())
    assert f"{node}: runs kernel {running}, but the GPU stack was built for kernel 6.1.0-99-amd64" in flat, flat[-3000:]
    assert "nothing was changed. Fix: boot 6.1.0-99-amd64 again" in flat
    assert [h for h, counts in recap(book.stdout).items() if counts["failed"]] == [node]


# A newer kernel, as the archive would offer it, in a local flat repository apt reads for the simulated upgrades
# only (the node's own sources, a bundle or none, are left alone; the e2e test bed has no route to the archive).
ARCHIVE = "/var/tmp/scc-kernel-archive"
APT_ARCHIVE = (f"-o Dir::Etc::SourceList={ARCHIVE}/sources.list -o Dir::Etc::SourceParts={ARCHIVE}/parts "
               f"-o Dir::State::Lists={ARCHIVE}/lists -o Debug::NoLocking=1")
NEWER_KERNEL = """\
Package: linux-image-amd64
Version: 6.1.0~scc2
Architecture: all
Depends: linux-image-6.1.0-99-amd64
Filename: ./linux-image-amd64_6.1.0~scc2_all.deb
Size: 1024
SHA256: {zero}
Description: the archive's newer kernel meta-package (test stand-in)

Package: linux-image-6.1.0-99-amd64
Version: 6.1.0-99
Architecture: all
Filename: ./linux-image-6.1.0-99-amd64_6.1.0-99_all.deb
Size: 1024
SHA256: {zero}
Description: the archive's newer kernel image (test stand-in)
""".format(zero="0" * 64)


def simulated_upgrade(container: str) -> str:
    return in_node(container, f"apt-get -s {APT_ARCHIVE} dist-upgrade").stdout


def test_the_kernel_meta_package_is_held_so_no_newer_kernel_installs(testbed_inventory, containers):
    node = next(iter(containers))
    c = containers[node]
    # The node's kernel meta-package as a real node has it installed, at a version older than the archive's (a
    # container has no kernel of its own): upgrading it would pull a newer linux-image-<version> from the archive.
    in_node(c, "d=$(mktemp -d) && mkdir -p $d/p/DEBIAN && printf 'Package: linux-image-amd64\\nVersion: 6.1.0~scc1\\n"
               "Architecture: all\\nMaintainer: scc.nlp_training tests <root@localhost>\\nDescription: stand-in for "
               "the kernel meta-package of a bare-metal node\\n' > $d/p/DEBIAN/control && "
               "dpkg-deb -b $d/p $d/meta.deb >/dev/null && dpkg -i $d/meta.deb >/dev/null && rm -r $d")
    in_node(c, f"rm -rf {ARCHIVE} && mkdir -p {ARCHIVE}/repo {ARCHIVE}/parts {ARCHIVE}/lists/partial && "
               f"echo 'deb [trusted=yes] file:{ARCHIVE}/repo ./' > {ARCHIVE}/sources.list")
    put = subprocess.run(["docker", "exec", "-i", c, "sh", "-c", f"cat > {ARCHIVE}/repo/Packages"], input=NEWER_KERNEL,
                         capture_output=True, text=True, timeout=30, check=False)
    assert put.returncode == 0, put.stderr
    in_node(c, f"apt-get -q {APT_ARCHIVE} update >/dev/null")
    try:
        unheld = simulated_upgrade(c)
        assert re.search(r"^Inst linux-image-\d", unheld, re.M), unheld[-2000:]   # what the hold must stop
        run = playbook(testbed_inventory, "gpu_stack.yml", "--tags", "kernel_lock", "--limit", node)
        assert run.returncode == 0, run.stdout[-3000:]
        assert recap(run.stdout)[node]["changed"] >= 1
        assert "linux-image-amd64" in in_node(c, "apt-mark showhold").stdout.split()
        held = simulated_upgrade(c)
        assert not re.search(r"^Inst linux-image", held, re.M), held[-2000:]
        fact = json.loads(in_node(c, "cat /etc/ansible/facts.d/scc_kernel.fact").stdout)
        assert fact["held"] == ["linux-image-amd64"], fact
        again = playbook(testbed_inventory, "gpu_stack.yml", "--tags", "kernel_lock", "--limit", node)
        assert again.returncode == 0 and recap(again.stdout)[node]["changed"] == 0, again.stdout[-3000:]
    finally:
        in_node(c, "apt-mark unhold linux-image-amd64 >/dev/null; dpkg -P linux-image-amd64 >/dev/null; "
                   f"rm -rf {ARCHIVE}", check=False)
        playbook(testbed_inventory, "gpu_stack.yml", "--tags", "kernel_lock", "--limit", node)


def _record(name: str, value: float) -> None:
    """Timings for docs/BENCHMARKS.md, next to the test bed's inventory when SCCNLP_BENCH_OUT is set."""
    out = os.environ.get("SCCNLP_BENCH_OUT")
    if out:
        path = Path(out)
        data = json.loads(path.read_text()) if path.exists() else {}
        data[name] = value
        path.write_text(json.dumps(data, indent=1) + "\n")
