"""A node's peer probe judged (plugins/plugin_utils/cluster_peers.py): names that resolve elsewhere or not at all,
logins that fail or answer with another name, with and without the peers' own host names."""

from __future__ import annotations

from plugins.plugin_utils.cluster_peers import peer_problems

PEERS = [{"name": "n2", "ip": "10.91.0.12", "rdma_ip": ""}, {"name": "n3", "ip": "10.91.0.13", "rdma_ip": ""}]


def test_every_peer_resolves_and_answers():
    lines = ["resolve\tn2\t10.91.0.12", "resolve\tn3\t10.91.0.13", "ssh\tn2\t0\tn2\t", "ssh\tn3\t0\tn3\t"]
    assert peer_problems(lines, PEERS, ["n2", "n3"], "-rdma") == {"resolve": [], "ssh": []}
    assert peer_problems(lines, PEERS, ["n2", "n3"], "-rdma", {"n2": "n2", "n3": "n3"}) == {"resolve": [], "ssh": []}


def test_a_rewritten_hosts_file_and_a_failed_login():
    lines = ["resolve\tn2\t", "resolve\tn3\t10.91.0.99",
             "ssh\tn2\t255\t\tssh: Could not resolve hostname n2: Name or service not known ", "ssh\tn3\t0\tn3\t"]
    assert peer_problems(lines, PEERS, ["n2", "n3"], "-rdma") == {
        "resolve": ["n2 resolves to nothing, not 10.91.0.12", "n3 resolves to 10.91.0.99, not 10.91.0.13"],
        "ssh": ["to n2 (rc 255): ssh: Could not resolve hostname n2: Name or service not known"]}


def test_with_host_names_a_login_must_print_the_peers_own():
    lines = ["resolve\tn2\t10.91.0.12", "ssh\tn2\t0\tother\t"]
    assert peer_problems(lines, PEERS[:1], ["n2"], "-rdma", {"n2": "n2"})["ssh"] == [
        'to n2 (rc 0, printed "other", expected "n2"): ']


def test_a_peer_without_an_answer_and_no_logins():
    assert peer_problems(["resolve\tn2\t10.91.0.12"], PEERS[:1], ["n2"], "-rdma")["ssh"] == [
        "to n2 (rc none): no answer recorded"]
    assert peer_problems([], [], [], "-rdma") == {"resolve": [], "ssh": []}
