"""Whether a GlusterFS volume is whole (plugins/plugin_utils/glusterfs_health.py), on real recorded probes
(tests/fixtures/tool_outputs/glusterfs/: GlusterFS 10.3, a replica-3 volume on the test bed): a brick whose process
stopped, a disconnected peer, a re-imaged brick server, entries pending heal, a server that does not answer; each
fault names the brick and gives the commands that mend it."""

from __future__ import annotations

import pytest

from plugins.plugin_utils.glusterfs_health import parse_probe, volume_verdict

HOSTS = ["node1", "node2", "node3"]
G = "gluster --mode=script"


def verdict(fixture_text, name, hosts=None):
    return volume_verdict(fixture_text("glusterfs", f"{name}.txt"), "gv0", "node1", hosts or HOSTS)


@pytest.mark.parametrize("name", ["replica3_healthy_local", "replica3_healthy_remote"])
def test_a_whole_volume(fixture_text, name):
    out = verdict(fixture_text, name)
    assert out["problems"] == [] and out["blame"] == []
    assert out["detail"].startswith("volume gv0 (Replicate, 3 bricks): 3 of 3 bricks online, ")


def test_the_heal_state_is_read_only_through_a_local_glusterd(fixture_text):
    assert "no entry pending heal; probed local node1" in verdict(fixture_text, "replica3_healthy_local")["detail"]
    assert "heal state not read (gv0: Not able to fetch volfile from glusterd); probed remote node1" in \
        verdict(fixture_text, "replica3_healthy_remote")["detail"]


def test_a_brick_whose_process_stopped(fixture_text):
    out = verdict(fixture_text, "replica3_brick_process_down")
    assert out["problems"] == [
        "GlusterFS volume gv0: brick node2:/bricks/gv0 is missing from `gluster volume status` (its process does not "
        "run on node2); 4 entries wait to be healed onto it. Fix: if node2 is only down or its glusterd stopped: on "
        f"node2 `systemctl start glusterd`, then on node1 `{G} volume start gv0 force && {G} volume heal gv0`; if "
        "node2 was re-imaged (its brick and GlusterFS state are gone): on node1 "
        f"`{G} volume remove-brick gv0 replica 2 node2:/bricks/gv0 force && {G} peer detach node2 force`, on node2 "
        f"`systemctl enable --now glusterd && mkdir -p /bricks/gv0`, on node1 `{G} peer probe node2`, and once gluster "
        "peer status on node1 shows node2 in state Peer in Cluster, on node1 "
        f"`{G} volume add-brick gv0 replica 3 node2:/bricks/gv0 force && {G} volume heal gv0 full`"]
    assert [b["host"] for b in out["blame"]] == ["node2"]
    assert out["blame"][0]["msg"].startswith("node2: GlusterFS volume gv0: brick node2:/bricks/gv0 is missing")
    assert out["detail"] == "volume gv0 (Replicate, 3 bricks): 2 of 3 bricks online, degraded; probed local node1"


@pytest.mark.parametrize("name", ["replica3_peer_disconnected", "replica3_brick_server_reimaged"])
def test_a_disconnected_or_reimaged_brick_server(fixture_text, name):
    out = verdict(fixture_text, name)
    assert len(out["problems"]) == 1
    assert out["problems"][0].startswith(
        "GlusterFS volume gv0: brick node2:/bricks/gv0 is missing from `gluster volume status` (its server node2 is "
        "disconnected from the trusted pool, state Peer in Cluster)"), out["problems"][0]
    assert f"on node1 `{G} volume remove-brick gv0 replica 2 node2:/bricks/gv0 force" in out["problems"][0]
    assert [b["host"] for b in out["blame"]] == ["node2"]


def test_the_reimaged_server_has_entries_waiting(fixture_text):
    assert "; 2 entries wait to be healed onto it. Fix:" in \
        verdict(fixture_text, "replica3_brick_server_reimaged")["problems"][0]


def test_a_probe_run_on_the_disconnected_node_itself(fixture_text):
    out = verdict(fixture_text, "replica3_peer_disconnected_probed_remote")
    assert out["problems"][0].startswith("GlusterFS volume gv0: brick node3:/bricks/gv0 is missing")
    # the commands run on a server that is in the pool: node1, not node3
    assert f"then on node1 `{G} volume start gv0 force" in out["problems"][0]
    assert "on node3 `systemctl enable --now glusterd" in out["problems"][0]
    assert [b["host"] for b in out["blame"]] == ["node3"]


def test_entries_pending_heal_with_every_brick_online(fixture_text):
    out = verdict(fixture_text, "replica3_heal_pending")
    assert out["problems"] == [
        "GlusterFS volume gv0: entries wait to be healed on node1:/bricks/gv0 (3), node2:/bricks/gv0 (3) (the replicas "
        "differ). Fix: `gluster volume heal gv0` on node1, then `gluster volume heal gv0 info summary` until none is "
        "pending"]
    assert [b["host"] for b in out["blame"]] == ["node1"]


def test_a_server_that_does_not_answer(fixture_text):
    out = verdict(fixture_text, "server_glusterd_down_remote")
    assert out["problems"] == [
        "GlusterFS volume gv0: node1 could not read it (Connection failed. Please check if gluster daemon is "
        "operational.). Fix: start glusterd on node1 (`systemctl start glusterd`) and check that the volume exists "
        "(`gluster volume info gv0`)"]


def test_a_brick_outside_the_inventory_is_blamed_on_the_probing_node(fixture_text):
    out = verdict(fixture_text, "replica3_peer_disconnected", hosts=["node1", "node3"])
    assert [b["host"] for b in out["blame"]] == ["node1"]


def test_another_volume_name(fixture_text):
    out = volume_verdict(fixture_text("glusterfs", "replica3_healthy_local.txt"), "gv9", "node1", HOSTS)
    assert out["problems"] == ["GlusterFS volume gv9 does not exist on node1. Fix: create it, or correct "
                               "cpfs_client_glusterfs_volume"]


def test_no_gluster_command_or_no_output():
    assert volume_verdict("gluster command not found on node3 (package glusterfs-cli)", "gv0", "node1", HOSTS)[
        "problems"] == ["GlusterFS volume gv0: the probe printed nothing it could read (gluster command not found on "
                        "node3 (package glusterfs-cli))"]
    assert volume_verdict("", "gv0", "node1", HOSTS)["problems"] == [
        "GlusterFS volume gv0: the probe printed nothing it could read (no output)"]


def test_a_stopped_volume(fixture_text):
    text = fixture_text("glusterfs", "replica3_healthy_local.txt").replace(
        "<statusStr>Started</statusStr>", "<statusStr>Stopped</statusStr>")
    assert volume_verdict(text, "gv0", "node1", HOSTS)["problems"] == [
        "GlusterFS volume gv0 is Stopped, not Started. Fix: `gluster volume start gv0` on node1"]


def test_parse_probe_sections(fixture_text):
    probe = parse_probe(fixture_text("glusterfs", "replica3_healthy_remote.txt"))
    assert probe.where == "remote node1" and not probe.local
    assert {k for k, v in probe.answers.items() if v is not None} == {"volume info", "volume status", "pool list"}
    assert probe.errors == {"volume heal": "gv0: Not able to fetch volfile from glusterd"}
