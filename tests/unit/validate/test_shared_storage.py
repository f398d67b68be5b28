"""The validate role's shared-storage verdict (plugins/plugin_utils/shared_storage.py): the probe file seen by every
node, by some, a node not reached, dd failing, and check mode (no probe written)."""

from __future__ import annotations

from plugins.plugin_utils.shared_storage import shared_storage_verdict

HOSTS = ["node1", "node2", "node3"]
FULL = 64 * 1048576
DD_OK = {"rc": 0,
         "stderr": "64+0 records in\n64+0 records out\n67108864 bytes (67 MB, 64 MiB) copied, 0.512 s, 131 MB/s"}


def verdict(dd, sizes, unreached=(), floor=None):
    return shared_storage_verdict(dd, HOSTS, sizes, 64, list(unreached), "node1", "/mnt/shared", floor)


def test_seen_by_every_node():
    out = verdict(DD_OK, [FULL, FULL, FULL], floor=50.0)
    assert out == {"measurements": [
        {"name": "shared_storage_visible", "value": 3, "unit": "nodes", "floor": 3,
         "detail": "a 64 MiB file written by node1 in /mnt/shared seen by every node"},
        {"name": "shared_storage_write_mbps", "value": 131.1, "unit": "MB/s", "floor": 50.0,
         "detail": "dd conv=fsync of 64 MiB from node1"}], "blame": []}


def test_a_node_without_the_file_or_a_partial_one():
    out = verdict(DD_OK, [FULL, -1, 1048576])
    assert out["measurements"][0]["value"] == 1
    assert out["measurements"][0]["detail"] == (
        "file written by node1 in /mnt/shared not seen (same size) by node2, node3 (check shared_storage_mounted of "
        "those nodes)")
    assert out["blame"] == [
        {"host": "node2", "msg": "node2: did not see the file node1 wrote in /mnt/shared (shared storage not shared "
                                 "with this node)"},
        {"host": "node3", "msg": "node3: did not see the file node1 wrote in /mnt/shared (shared storage not shared "
                                 "with this node)"}]


def test_a_node_not_reached():
    out = verdict(DD_OK, [FULL, FULL, -1], unreached=["node3"])
    assert out["measurements"][0]["value"] == 2
    assert out["measurements"][0]["detail"] == (
        "file written by node1 in /mnt/shared not seen (same size) by no reached node; not reached in this run: "
        "node3 (start the node or fix its connection, then run again)")
    assert out["blame"] == [{"host": "node3", "msg": "node3: not reached, so the shared-storage check could not "
                                                     "include it"}]


def test_dd_fails():
    dd = {"rc": 1, "stderr": "dd: failed to open '/mnt/shared/.scc-validate-1': Read-only file system"}
    out = verdict(dd, [-1, -1, -1])
    assert [m["value"] for m in out["measurements"]] == [None, None]
    assert out["measurements"][0]["detail"] == (
        "cannot write to /mnt/shared: dd: failed to open '/mnt/shared/.scc-validate-1': Read-only file system; mount "
        "the shared storage (playbooks/storage.yml)")
    assert out["blame"] == []


def test_check_mode_writes_no_probe():
    out = verdict({"rc": 0, "skipped": True, "stderr": ""}, [-1, -1, -1], unreached=["node3"])
    assert [m["value"] for m in out["measurements"]] == [None, None]
    assert out["blame"] == []


def test_dd_time_unreadable():
    out = verdict({"rc": 0, "stderr": "67108864 bytes copied, 1.2e-05 s"}, [FULL, FULL, FULL])
    assert out["measurements"][1]["value"] is None


# `gluster volume info gv0` of the test bed's replica-2 volume (GlusterFS 10.3, Debian 12).
VOLUME_INFO = """
Volume Name: gv0
Type: Replicate
Volume ID: 5b1d8c4e-7e0f-4a53-9b39-1c8e9f0c2a11
Status: Started
Snapshot Count: 0
Number of Bricks: 1 x 2 = 2
Transport-type: tcp
Bricks:
Brick1: clu-node1:/bricks/gv0
Brick2: 10.91.0.12:/bricks/gv0
Options Reconfigured:
cluster.granular-entry-heal: on
"""


def test_bricks_on_hosts_the_inventory_still_has():
    from plugins.plugin_utils.shared_storage import orphan_bricks

    assert orphan_bricks(VOLUME_INFO, ["clu-node1", "clu-node2", "10.91.0.12"]) == []
    assert orphan_bricks(VOLUME_INFO, ["clu-node1.example", "clu-node1"]) == [
        {"host": "10.91.0.12", "brick": "10.91.0.12:/bricks/gv0"}]
    assert orphan_bricks(VOLUME_INFO.replace("clu-node1:", "clu-node1.cluster.local:"), ["clu-node1"]) == [
        {"host": "10.91.0.12", "brick": "10.91.0.12:/bricks/gv0"}]
    assert orphan_bricks("", ["x"]) == []
