"""The shared-storage check of roles/_shared_storage: its node-side probe (files/storage_probe.py, run for real on
local folders) and the judgement (plugins/plugin_utils/shared_storage.py storage_check) with every caller's message:
a node that does not see the file, another storage mounted, no mount, the writer failing, a token written earlier."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from plugins.plugin_utils.shared_storage import storage_check

from .conftest import ROOT

PROBE = ROOT / "roles" / "_shared_storage" / "files" / "storage_probe.py"
TOKEN = "k3jJ0aZ1Qv8wXy7mN2pL5rT9"


def _probe(*args: str) -> dict[str, Any]:
    """The registered result of the probe, as the command module returns it."""
    proc = subprocess.run([sys.executable, str(PROBE), *args], capture_output=True, text=True, check=False)
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def test_probe_writes_and_reads_the_token(tmp_path: Path) -> None:
    path = tmp_path / "shared" / ".scc-storage-check-x"
    written = json.loads(_probe("write", str(path), TOKEN, "1")["stdout"])
    assert written["rc"] == 0 and written["bytes"] == 1048576 and written["seconds"] >= 0
    seen = json.loads(_probe("read", str(path), "", "0")["stdout"])
    assert seen == {"mount": None, "exists": True, "size": 1048576, "head": TOKEN, "error": ""}
    assert json.loads(_probe("read", str(path), "/", "0")["stdout"])["mount"]["fstype"]
    gone = json.loads(_probe("read", str(tmp_path / "nothing"), "", "0")["stdout"])
    assert not gone["exists"] and "No such file" in gone["error"]
    assert json.loads(_probe("write", "/proc/x/y", TOKEN, "0")["stdout"])["rc"] == 1


def _seen(tmp_path: Path, path: Path, mountpoint: str = "") -> dict[str, Any]:
    return _probe("read", str(path), mountpoint, "0")


def test_every_node_sees_the_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    written = json.loads(_probe("write", str(path), TOKEN, "1")["stdout"])
    seen = {h: _seen(tmp_path, path) for h in ("n1", "n2")}
    out = storage_check("n1", written, seen, ["n1", "n2"], [], TOKEN, str(tmp_path), write_floor=5)
    assert out["problems"] == {} and out["blame"] == []
    visible, rate = out["measurements"]
    assert visible == {"name": "shared_storage_visible", "value": 2, "unit": "nodes", "floor": 2,
                       "detail": f"a 1 MiB file written by n1 in {tmp_path} seen by every node"}
    assert rate["floor"] == 5 and rate["detail"] == "fsync'd write of 1 MiB from n1"


def test_a_node_that_does_not_see_it_fails_by_name(tmp_path: Path) -> None:
    path = tmp_path / "f"
    written = json.loads(_probe("write", str(path), TOKEN, "0")["stdout"])
    seen = {"n1": _seen(tmp_path, path), "n2": _seen(tmp_path, tmp_path / "elsewhere")}
    fix = "mount the same shared file system at /mnt/cpfs on every node (playbooks/storage.yml) or fix scc_shared_dir"
    out = storage_check("n1", written, seen, ["n1", "n2", "n3"], ["n3"], TOKEN, "/mnt/cpfs/bert/data", fix=fix)
    assert list(out["problems"]) == ["n2"]
    assert out["problems"]["n2"].startswith(
        "n2: the file n1 wrote in /mnt/cpfs/bert/data is not visible here ([Errno 2]")
    assert out["problems"]["n2"].endswith("; Fix: " + fix)
    assert out["measurements"][0]["value"] == 1
    assert out["measurements"][0]["detail"] == (
        "file written by n1 in /mnt/cpfs/bert/data not seen (same size) by n2 (check shared_storage_mounted of those "
        "nodes); not reached in this run: n3 (start the node or fix its connection, then run again)")
    assert [b["host"] for b in out["blame"]] == ["n2", "n3"]


def test_another_token_means_another_storage(tmp_path: Path) -> None:
    path = tmp_path / "f"
    written = json.loads(_probe("write", str(path), TOKEN, "0")["stdout"])
    other = json.loads(_probe("write", str(tmp_path / "g"), "x" * 24, "0")["stdout"])
    assert other["rc"] == 0
    out = storage_check("n1", written, {"n1": _seen(tmp_path, path), "n2": _seen(tmp_path, tmp_path / "g")},
                        ["n1", "n2"], [], TOKEN, "/mnt/cpfs")
    assert "n2: the file n1 wrote in /mnt/cpfs is another one here" in out["problems"]["n2"]


def test_mount_point_and_source(tmp_path: Path) -> None:
    path = tmp_path / "f"
    written = json.loads(_probe("write", str(path), TOKEN, "0")["stdout"])
    root = _probe("read", str(path), "/", "0")
    none = _probe("read", str(path), str(tmp_path), "0")
    fix = "check the mount on {node} (`findmnt /`) and that every node mounts the same cpfs_client_glusterfs_volume"
    out = storage_check("n1", written, {"n1": root, "n2": none}, ["n1", "n2"], [], TOKEN, "/", mountpoint="/",
                        source="node1:/gv0", fix=fix)
    assert out["problems"]["n2"] == ("n2: the shared storage is not mounted at /; Fix: check the mount on n2 "
                                     "(`findmnt /`) and that every node mounts the same cpfs_client_glusterfs_volume")
    assert "is mounted from" in out["problems"]["n1"] and "not from node1:/gv0" in out["problems"]["n1"]
    assert out["mounted"]["n1"]["status"] == "pass" and out["mounted"]["n2"]["status"] == "fail"
    assert out["mounted"]["n2"]["detail"].startswith("n2: / is not a mount point: the shared storage is not mounted")
    only_mount = storage_check("n1", {}, {"n1": root}, ["n1"], [], "", "/", mountpoint="/", probe=False)
    assert only_mount["problems"] == {}


def test_a_reboot_token_written_earlier(tmp_path: Path) -> None:
    path = tmp_path / ".scc-reboot-token"
    assert json.loads(_probe("write", str(path), TOKEN, "0")["stdout"])["rc"] == 0
    fix = "mount it (run playbooks/storage.yml --limit {node}; check its fstab entry), then run the reboot again."
    out = storage_check("n1", {}, {"n2": _probe("read", str(path), str(tmp_path), "0")}, ["n2"], [], TOKEN,
                        str(tmp_path), mountpoint=str(tmp_path), fix=fix, situation=" after the reboot",
                        stop="the rollout stops here.")
    assert out["problems"]["n2"] == (
        f"n2: the shared storage is not mounted at {tmp_path} after the reboot; the rollout stops here. Fix: mount it "
        "(run playbooks/storage.yml --limit n2; check its fstab entry), then run the reboot again.")


def test_the_writer_failing(tmp_path: Path) -> None:
    failed = json.loads(_probe("write", "/proc/x/y", TOKEN, "64")["stdout"])
    out = storage_check("n1", failed, {"n1": {}, "n2": {}}, ["n1", "n2"], [], TOKEN, "/proc/x", fix="mount it")
    assert list(out["problems"]) == ["n1"] and out["problems"]["n1"].startswith("n1: cannot write to /proc/x: ")
    assert out["measurements"][0]["value"] is None and out["blame"] == []


def test_the_writer_refuses_a_directory_that_is_not_a_mount_point(tmp_path: Path) -> None:
    """A rolling reboot's token written on a node whose storage is not mounted would land on its own disk, and after
    the reboot the mount would show another file: the writer refuses, and the judge names it before the rollout."""
    shared = tmp_path / "shared"
    refused = json.loads(_probe("write", str(shared / ".scc-reboot-token"), TOKEN, "0", str(shared))["stdout"])
    assert refused["rc"] == 1 and refused["error"] == (
        f"{shared} is not a mount point here (the file would land on this node's own disk)")
    assert not shared.exists()
    out = storage_check("n2", refused, {}, [], [], TOKEN, str(shared), situation=" before the rollout",
                        stop="nothing was rebooted.", fix="mount it (run playbooks/storage.yml --limit {node})")
    assert out["problems"] == {"n2": f"n2: cannot write to {shared}: {refused['error']} before the rollout; nothing "
                                     "was rebooted. Fix: mount it (run playbooks/storage.yml --limit n2)"}
    mounted = json.loads(_probe("write", str(tmp_path / "t"), TOKEN, "0", "/")["stdout"])
    assert mounted["rc"] == 0 and (tmp_path / "t").read_text().startswith(TOKEN)


GLUSTERFS = ROOT / "tests" / "fixtures" / "tool_outputs" / "glusterfs"


def test_a_glusterfs_volume_is_judged_with_the_check(tmp_path: Path) -> None:
    """The GlusterFS volume, asked by roles/_shared_storage (files/glusterfs_probe.sh) on real recorded probes: a
    whole volume passes shared_storage_volume_whole; a brick whose process stopped fails it naming the brick and the
    commands that mend it, blamed on the brick's node; a volume not asked (another storage, check mode) is None."""
    path = tmp_path / "f"
    written = json.loads(_probe("write", str(path), TOKEN, "0")["stdout"])
    seen = {"node1": _seen(tmp_path, path), "node2": _seen(tmp_path, path)}
    hosts = ["node1", "node2", "node3"]

    def check(probe: Any, volume: str = "node1:/gv0") -> dict[str, Any]:
        return storage_check("node1", written, seen, hosts, ["node3"], TOKEN, str(tmp_path), volume=volume,
                             volume_probe=probe)

    whole = check((GLUSTERFS / "replica3_healthy_local.txt").read_text())
    assert whole["problems"] == {}
    assert whole["volume"]["problems"] == [] and whole["volume"]["blame"] == []
    assert whole["volume"]["check"] == {
        "name": "shared_storage_volume_whole", "status": "pass", "measured": None, "floor": None, "unit": "",
        "detail": "volume gv0 (Replicate, 3 bricks): 3 of 3 bricks online, no entry pending heal; probed local node1"}
    down = check((GLUSTERFS / "replica3_brick_process_down.txt").read_text())
    assert down["problems"] == {}   # the mount works: only the volume says a replica is missing
    assert len(down["volume"]["problems"]) == 1 and down["volume"]["problems"][0].startswith(
        "GlusterFS volume gv0: brick node2:/bricks/gv0 is missing from `gluster volume status` (its process does not "
        "run on node2)")
    assert down["volume"]["check"]["status"] == "fail"
    assert down["volume"]["check"]["detail"] == down["volume"]["problems"][0]
    assert [b["host"] for b in down["volume"]["blame"]] == ["node2"]
    assert check(None)["volume"] is None
    assert check((GLUSTERFS / "replica3_healthy_local.txt").read_text(), volume="")["volume"] is None
    silent = check("")["volume"]
    assert silent["check"]["status"] == "fail" and "the probe printed nothing it could read" in silent["problems"][0]
