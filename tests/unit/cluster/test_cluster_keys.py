"""Which host keys the cluster files list per node (plugins/plugin_utils/cluster_keys.py): read in this run, else
recorded on the controller by an earlier run, so that a --limit run lists every node's keys."""

from __future__ import annotations

from plugins.plugin_utils.cluster_keys import listed_host_keys

ED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA"
RSA = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ"


def test_keys_read_in_this_run_win_over_the_record():
    hostvars = {"n1": {"_cluster_host_keys": [RSA + "new", ED + "new"]}, "n2": {}}
    recorded = {"n1": [ED + "old"], "n2": [ED + "two"]}
    assert listed_host_keys(["n1", "n2"], hostvars, recorded) == {"n1": [ED + "new", RSA + "new"], "n2": [ED + "two"]}


def test_a_node_outside_the_run_or_the_inventory_falls_back_to_the_record():
    assert listed_host_keys(["n1", "n3"], {"n1": {}}, {"n3": [ED + "3"]}) == {"n3": [ED + "3"]}


def test_a_node_neither_read_nor_recorded_is_left_out():
    assert listed_host_keys(["n1"], {"n1": {}}, {}) == {}
    assert listed_host_keys(["n1"], {"n1": {"_cluster_host_keys": []}}, {"n1": []}) == {}


def test_the_record_of_a_removed_node_is_dropped():
    assert listed_host_keys(["n1"], {"n1": {"_cluster_host_keys": [ED]}}, {"gone": [ED]}) == {"n1": [ED]}
