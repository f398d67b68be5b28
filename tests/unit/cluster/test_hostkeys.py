"""The controller's known_hosts for a node (sccnlp/hostkeys.py): the connection settings from the inventory, the
names and files `ssh -G` gives, ssh-keyscan and ssh-keygen output, the replacement of a re-imaged node's keys in a
real file with the real ssh-keygen, and the cause named for a node the controller cannot reach (ssh's own message
as Ansible reports it, recorded on the test bed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sccnlp import hostkeys
from sccnlp.errors import SccError

# Ansible's UNREACHABLE message for a node whose key changed (recorded 2026-12-06, test bed node2 re-imaged).
CHANGED = (
    'Task failed: Data could not be sent to remote host "10.63.0.12". Make sure this host can be reached over ssh: '
    "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS "
    "CHANGED!     @\r\n@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\r\nIT IS POSSIBLE THAT SOMEONE IS "
    "DOING SOMETHING NASTY!\r\nSomeone could be eavesdropping on you right now (man-in-the-middle attack)!\r\nIt is "
    "also possible that a host key has just been changed.\r\nThe fingerprint for the ED25519 key sent by the remote "
    "host is\nSHA256:rAd5tVZWSkOUAnf1/ZJLvYB4MQqipmHVe9h4iTAMtW0.\r\nPlease contact your system administrator.\r\nAdd "
    "correct host key in /root/.sccnlp/testbed/d2-tb/known_hosts to get rid of this message.\r\nOffending ED25519 key "
    "in /root/.sccnlp/testbed/d2-tb/known_hosts:2\r\n  remove with:\r\n  ssh-keygen -f "
    '"/root/.sccnlp/testbed/d2-tb/known_hosts" -R "10.63.0.12"\r\nHost key for 10.63.0.12 has changed and you have '
    "requested strict checking.\r\nHost key verification failed.")
UNKNOWN = ('Task failed: Data could not be sent to remote host "10.63.0.14". Make sure this host can be reached over '
           "ssh: No ED25519 host key is known for 10.63.0.14 and you have requested strict checking.\r\nHost key "
           "verification failed.")


def test_a_changed_key_names_the_cause_and_the_command():
    cause = hostkeys.unreachable_cause(CHANGED, "node2", "inv.yml")
    assert cause == (
        "node2: its SSH host key is not the one this controller recorded (ED25519 key in "
        "/root/.sccnlp/testbed/d2-tb/known_hosts:2): REMOTE HOST IDENTIFICATION HAS CHANGED, the node now sends "
        "SHA256:rAd5tVZWSkOUAnf1/ZJLvYB4MQqipmHVe9h4iTAMtW0. Fix: if node2 was re-imaged, run `sccnlp node reimaged "
        "node2 -i inv.yml`: it replaces the key there, sets node2 up again and refreshes every node's cluster files; "
        "if it was not, do not connect until you know why its key changed")


def test_an_unknown_key_names_the_command():
    assert hostkeys.unreachable_cause(UNKNOWN, "node4", "inv.yml").startswith(
        "node4: this controller has no ED25519 host key of 10.63.0.14 on record and host key checking is strict. "
        "Fix: if node4 is new or was re-imaged, run `sccnlp node reimaged node4 -i inv.yml`")


def test_a_refused_login_and_an_unknown_cause():
    assert "refused the controller's SSH login (Permission denied (publickey,password))" in \
        hostkeys.unreachable_cause("ssh: root@10.0.0.1: Permission denied (publickey,password).", "n", "i")
    assert hostkeys.unreachable_cause("ssh: connect to host 10.0.0.1 port 22: Connection timed out", "n") is None


def test_access_from_hostvars():
    access = hostkeys.access_from_hostvars("node2", {
        "ansible_host": "10.63.0.12", "ansible_port": "2222",
        "ansible_ssh_common_args": "-o UserKnownHostsFile=/tmp/kh -o StrictHostKeyChecking=yes"})
    assert (access.address, access.port, access.over_ssh) == ("10.63.0.12", 2222, True)
    assert access.ssh_args == ["-o", "UserKnownHostsFile=/tmp/kh", "-o", "StrictHostKeyChecking=yes"]
    docker = hostkeys.access_from_hostvars("clu-node1", {"ansible_connection": "community.docker.docker"})
    assert not docker.over_ssh and docker.address == "clu-node1"


@pytest.mark.parametrize(("hostvars", "fragment"), [
    ({"ansible_host": "{{ lookup('env', 'X') }}"}, "ansible_host is a template"),
    ({"ansible_port": "ssh"}, "ansible_port 'ssh' is not a number"),
    ({"ansible_ssh_common_args": "-o 'Unclosed"}, "does not split into ssh arguments"),
])
def test_settings_the_command_cannot_use_are_refused(hostvars, fragment):
    with pytest.raises(SccError, match=fragment):
        hostkeys.access_from_hostvars("node2", hostvars)


def test_names_and_files_from_ssh_config():
    config = hostkeys.parse_ssh_config("hostname 10.63.0.12\nport 22\nuserknownhostsfile ~/.ssh/known_hosts "
                                       "~/.ssh/known_hosts2\nglobalknownhostsfile /etc/ssh/ssh_known_hosts\n")
    assert hostkeys.host_names(config, "node2", 22) == ["10.63.0.12"]
    assert hostkeys.known_hosts_files(config, home="/home/u") == [
        Path("/home/u/.ssh/known_hosts"), Path("/home/u/.ssh/known_hosts2")]
    assert hostkeys.host_names({"hostname": ["h"], "port": ["2222"]}, "h", 22) == ["[h]:2222"]
    assert hostkeys.host_names({"hostname": ["h"], "hostkeyalias": ["alias"]}, "h", 22) == ["alias"]
    assert hostkeys.known_hosts_files({"userknownhostsfile": ["none"]}) == []


def test_the_real_ssh_config_of_an_inventory_setting():
    access = hostkeys.Access("node2", address="10.63.0.12", port=22,
                             ssh_args=["-o", "UserKnownHostsFile=/tmp/scc-test-kh", "-o", "StrictHostKeyChecking=yes"])
    config = hostkeys.effective_config(access)
    assert hostkeys.known_hosts_files(config) == [Path("/tmp/scc-test-kh")]
    assert hostkeys.host_names(config, access.address, access.port) == ["10.63.0.12"]


def test_scan_and_fingerprint_output():
    scan = ("# 10.63.0.12:22 SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\n10.63.0.12 ssh-ed25519 AAAAC3Nza\n"
            "10.63.0.12 ssh-rsa AAAAB3Nz\n\n")
    assert hostkeys.scanned_keys(scan) == ["10.63.0.12 ssh-ed25519 AAAAC3Nza", "10.63.0.12 ssh-rsa AAAAB3Nz"]
    assert hostkeys.fingerprint_lines("256 SHA256:abc/def 10.63.0.12 (ED25519)\n3072 SHA256:xyz 10.63.0.12 (RSA)\n") \
        == ["SHA256:abc/def (ED25519)", "SHA256:xyz (RSA)"]


def _key(tmp_path: Path, name: str) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)], check=True)
    return " ".join((tmp_path / f"{name}.pub").read_text().split()[:2])


def test_replace_the_keys_of_a_reimaged_node_only(tmp_path):
    old, new, other = _key(tmp_path, "old"), _key(tmp_path, "new"), _key(tmp_path, "other")
    known = tmp_path / "known_hosts"
    known.write_text(f"10.63.0.11,node1 {other}\n10.63.0.12,node2 {old}\n")
    files = [known, tmp_path / "absent"]
    assert list(hostkeys.recorded(files, ["10.63.0.12"])) == [known]
    done = hostkeys.replace(files, ["10.63.0.12"], [f"10.63.0.12 {new}"])
    assert done == [f"removed 1 old key line(s) of 10.63.0.12 from {known} (backup {known}.old)",
                    f"added 1 key line(s) of 10.63.0.12 to {known}"]
    assert known.read_text().splitlines() == [f"10.63.0.11,node1 {other}", f"10.63.0.12 {new}"]
    assert hostkeys.fingerprints([f"10.63.0.12 {new}"])[0].endswith("(ED25519)")


def _inventory(tmp_path: Path) -> str:
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  children:\n    scc_cluster:\n      hosts:\n        node1: {ansible_host: 10.63.0.11}\n"
                   "        node2: {ansible_connection: community.docker.docker}\n")
    return str(inv)


def test_reimaged_refuses_a_node_the_inventory_does_not_have(tmp_path, capsys):
    from sccnlp import cli

    assert cli.main(["node", "reimaged", "node9", "-i", _inventory(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "node9 is not a node of group 'scc_cluster' in" in err and "(its nodes: node1, node2); nothing was " \
        "changed. Fix: give the node's inventory name" in err
    assert cli.main(["node", "reimaged", "node1", "-i", str(tmp_path / "absent.yml")]) == 2
    assert "does not exist: pass -i with the cluster's inventory" in capsys.readouterr().err


def test_a_node_reached_without_ssh_has_no_controller_key(tmp_path):
    import io

    from sccnlp.commands.node import trust_new_keys

    out = io.StringIO()
    trust_new_keys(_inventory(tmp_path), "node2", [], out)
    assert out.getvalue() == ("node2: reached with ansible_connection=community.docker.docker: this controller keeps "
                              "no SSH host key for it\n")
