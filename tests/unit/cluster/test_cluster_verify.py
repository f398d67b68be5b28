"""The cluster role's verify verdicts (plugins/plugin_utils/cluster_verify.py): name resolution against the
inventory's addresses and SSH logins answering with the peer's own host name, on lines as the nodes print them."""

from __future__ import annotations

from plugins.plugin_utils.cluster_verify import expected_addresses, resolve_problems, ssh_problems

PEERS = [{"name": "n2", "ip": "10.91.0.12", "rdma_ip": "10.92.0.12"}, {"name": "n3", "ip": "10.91.0.13", "rdma_ip": ""}]


def test_expected_addresses():
    assert expected_addresses(iter(PEERS), "-ib") == {"n2": "10.91.0.12", "n3": "10.91.0.13", "n2-ib": "10.92.0.12"}


def test_every_name_resolves():
    lines = ["n2\t10.91.0.12", "n3\t10.91.0.13", "n2-ib\t10.92.0.12"]
    assert resolve_problems(lines, expected_addresses(PEERS, "-ib")) == []


def test_wrong_and_missing_addresses():
    lines = ["n2\t10.91.0.99", "n3\t", "n2-ib"]
    assert resolve_problems(lines, expected_addresses(PEERS, "-ib")) == [
        "n2 resolves to 10.91.0.99, not 10.91.0.12", "n3 resolves to nothing, not 10.91.0.13",
        "n2-ib resolves to nothing, not 10.92.0.12"]


def test_no_output_resolves_nothing():
    assert resolve_problems([], {"n2": "10.91.0.12"}) == ["n2 resolves to nothing, not 10.91.0.12"]


def test_every_login_answers():
    lines = ["n2\t0\tn2\t", "n3\t0\tn3 \t "]
    assert ssh_problems(lines, ["n2", "n3"], {"n2": "n2", "n3": "n3"}) == []


def test_failed_wrong_and_missing_logins():
    lines = ["n2\t255\t\tHost key verification failed. ", "n3\t0\tother\t"]
    assert ssh_problems(lines, ["n2", "n3", "n4"], {"n2": "n2", "n3": "n3"}) == [
        'to n2 (rc 255, printed "", expected "n2"): Host key verification failed.',
        'to n3 (rc 0, printed "other", expected "n3"): ',
        'to n4 (rc none, printed "", expected ""): no answer recorded']


def test_short_line():
    assert ssh_problems(["n2"], ["n2"], {"n2": "n2"}) == ['to n2 (rc , printed "", expected "n2"): ']


def test_host_key_lines_leave_out_the_comment():
    from plugins.plugin_utils.ssh_keys import host_key_lines

    ed = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ7k8f2m root@clu-node1\n"
    rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQC7 root@clu-node1\n"
    assert host_key_lines([rsa, ed, ""]) == ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ7k8f2m",
                                             "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQC7"]
