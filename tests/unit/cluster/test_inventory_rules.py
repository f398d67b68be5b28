"""The inventory rules as pure functions (plugins/plugin_utils/inventory_check.py): a good inventory has no
problem, each bad setting gives the one message that roles/inventory_check shows (test_inventory_check.py runs
the same through ansible-playbook), and the node records the cluster role builds its files from."""

from __future__ import annotations

from typing import Any

import pytest

from plugins.plugin_utils.inventory_check import inventory_nodes, inventory_problems

GOOD: dict[str, dict[str, Any]] = {
    "n1": {"ansible_host": "10.91.0.11"},
    "n2": {"ansible_host": "10.91.0.12"},
    "n3": {"ansible_host": "10.91.0.13"},
}
BACKENDS = ["cpfs_lustre", "cpfs_nfs", "nfs", "glusterfs"]


def problems(hosts: dict[str, dict[str, Any]], require_ip: bool = True) -> list[str]:
    return inventory_problems(inventory_nodes(list(hosts), hosts), require_ip, BACKENDS)


def with_(**overrides: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: {**GOOD[name], **overrides.get(name, {})} for name in GOOD}


def only(hosts: dict[str, dict[str, Any]]) -> str:
    found = problems(hosts)
    assert len(found) == 1, found
    assert "Fix:" in found[0]
    return found[0]


@pytest.mark.parametrize("hosts", [
    GOOD,
    with_(n1={"mpi_slots": 8}, n2={"mpi_slots": "4", "gpu_count": "8"}, n3={"gpu_count": 0}),
    with_(n1={"rdma_ip": "10.92.0.1"}, n2={"rdma_ip": "fe80::2"}, n3={"rdma_ip": ""}),
    with_(n1={"cpfs_client_backend": "glusterfs"}, n2={"scc_bundle_dir": "/mnt/cpfs/scc-bundle"}),
    with_(n1={"ansible_host": "fd00::11"}),
    {"node-1.example.com": {"ansible_host": "10.91.0.11"}, "node-2.example.com": {"ansible_host": "10.91.0.12"}},
    {},
])
def test_good_inventory_has_no_problem(hosts: dict[str, dict[str, Any]]) -> None:
    assert problems(hosts) == []


def test_invalid_host_name() -> None:
    assert only({**GOOD, "n_4": {"ansible_host": "10.91.0.14"}}) == (
        "host 'n_4': the inventory name is not a valid host name for /etc/hosts (letters, digits, '-' and '.'). "
        "Fix: rename the host in the inventory and set its address in ansible_host.")


def test_ansible_host_not_an_ip() -> None:
    assert only(with_(n2={"ansible_host": "node-two.example"})) == (
        "host 'n2': ansible_host 'node-two.example' is not an IP address (/etc/hosts and the SSH trust are built "
        "from it). Fix: set ansible_host to the node's management (VPC) IP.")


def test_missing_ansible_host_is_the_name() -> None:
    assert "ansible_host 'n4' is not an IP address" in only({**GOOD, "n4": {}})


@pytest.mark.parametrize("address", ["256.1.1.1", "10.91.0", "10.91.0.1 ", "::g"])
def test_bad_addresses(address: str) -> None:
    assert f"ansible_host '{address}' is not an IP address" in only(with_(n1={"ansible_host": address}))


def test_ip_rules_off() -> None:
    hosts = with_(n1={"ansible_host": "node-one.example", "rdma_ip": "ib-one"})
    assert problems(hosts, require_ip=False) == []


def test_one_local_node_needs_no_ip() -> None:
    """A single GPU box run on itself (the local connection, no ansible_host) is a cluster of one: no other node
    resolves it, so its name is no problem; a second node makes the addresses matter again."""
    one = {"gpu-node-1": {"ansible_connection": "local"}}
    assert problems(one) == []
    assert "ansible_host 'gpu-node-1' is not an IP address" in only({**one, "n2": {"ansible_host": "10.91.0.12"}})
    assert "ansible_host 'gpu-node-1' is not an IP address" in only({"gpu-node-1": {"ansible_connection": "ssh"}})


def test_rdma_ip_not_an_ip() -> None:
    assert only(with_(n3={"rdma_ip": "ib0"})) == (
        "host 'n3': rdma_ip 'ib0' is not an IP address. Fix: set rdma_ip to the IP of the node's RDMA interface, "
        "or remove it.")


@pytest.mark.parametrize(("slots", "shown"), [(0, "0"), (-2, "-2"), ("four", "four"), (True, "True"),
                                              (1.5, "1.5"), ("0", "0"), ("", "")])
def test_mpi_slots_not_a_positive_integer(slots: Any, shown: str) -> None:
    assert only(with_(n2={"mpi_slots": slots})) == (
        f"host 'n2': mpi_slots '{shown}' is not a positive integer. Fix: set mpi_slots to the number of MPI ranks "
        "for the node (e.g. its GPU count), or remove it to use gpu_count (1 without GPU).")


@pytest.mark.parametrize(("gpus", "shown"), [(-1, "-1"), ("many", "many"), (None, "None"), (False, "False"),
                                             (2.0, "2.0")])
def test_gpu_count_not_a_count(gpus: Any, shown: str) -> None:
    assert only(with_(n3={"gpu_count": gpus})) == (
        f"host 'n3': gpu_count '{shown}' is not a non-negative integer. Fix: set gpu_count to the number of GPUs "
        "in the node (0 for none).")


@pytest.mark.parametrize(("value", "shown"), [("scc-bundle", "'scc-bundle'"), (["/mnt/b"], "'['/mnt/b']'"),
                                              (None, "'None'"), (True, "'True'")])
def test_bundle_dir_not_an_absolute_path(value: Any, shown: str) -> None:
    assert only(with_(n2={"scc_bundle_dir": value})) == (
        f"host 'n2': scc_bundle_dir {shown} is not an absolute path. Fix: set scc_bundle_dir to the offline "
        "bundle's directory as the nodes see it (e.g. /mnt/cpfs/scc-bundle; sccnlp deploy --bundle DIR sets it), "
        "or remove it to install from the nodes' own sources.")


def test_unknown_storage_backend() -> None:
    assert only(with_(n1={"cpfs_client_backend": "ceph"})) == (
        "host 'n1': cpfs_client_backend 'ceph' is unknown. Fix: set it to one of cpfs_lustre, cpfs_nfs, nfs, "
        "glusterfs.")


def test_duplicate_host_names() -> None:
    hosts = {"N1": {"ansible_host": "10.91.0.21"}, **GOOD, "n1.example": {"ansible_host": "10.91.0.22"}}
    assert only(hosts) == (
        "hosts N1, n1, n1.example: the same host name 'n1' (names are case-insensitive and the short name goes "
        "into /etc/hosts). Fix: give each node its own name in the inventory.")


def test_duplicate_management_ip() -> None:
    assert only(with_(n3={"ansible_host": "10.91.0.11"})) == (
        "hosts n1 (ansible_host), n3 (ansible_host): the same IP address 10.91.0.11. Fix: each node needs its own "
        "ansible_host and rdma_ip; remove the duplicate host or correct its address.")


def test_duplicate_rdma_ip() -> None:
    text = only(with_(n1={"rdma_ip": "10.92.0.1"}, n2={"rdma_ip": "10.92.0.1"}))
    assert text.startswith("hosts n1 (rdma_ip), n2 (rdma_ip): the same IP address 10.92.0.1. Fix:")


def test_rdma_ip_of_another_node() -> None:
    text = only(with_(n2={"rdma_ip": "10.91.0.11"}))
    assert text.startswith("hosts n1 (ansible_host), n2 (rdma_ip): the same IP address 10.91.0.11.")


def test_one_node_may_reuse_its_own_address() -> None:
    assert problems(with_(n1={"rdma_ip": "10.91.0.11"})) == []


def test_ipv6_duplicates_ignore_case() -> None:
    text = only(with_(n1={"ansible_host": "fd00::A"}, n2={"ansible_host": "fd00::a"}))
    assert text.startswith("hosts n1 (ansible_host), n2 (ansible_host): the same IP address fd00::A.")


def test_all_problems_in_order() -> None:
    found = problems(with_(n1={"mpi_slots": 0}, n2={"ansible_host": "10.91.0.11"}, n3={"cpfs_client_backend": "x"}))
    assert [p.split(":")[0] for p in found] == ["host 'n1'", "host 'n3'", "hosts n1 (ansible_host), n2 (ansible_host)"]


def test_node_records() -> None:
    hosts = {
        "a.example": {"ansible_host": "10.0.0.1", "inventory_hostname_short": "a", "gpu_count": 8},
        "b": {"mpi_slots": "4", "rdma_ip": None, "gpu_count": 2},
        "c": {"ansible_host": "10.0.0.3", "rdma_ip": "10.1.0.3", "gpu_count": 0, "cpfs_client_backend": "nfs",
              "scc_bundle_dir": "/mnt/b"},
    }
    assert inventory_nodes(list(hosts), hosts) == [
        {"name": "a.example", "short": "a", "ip": "10.0.0.1", "rdma_ip": "", "slots": 8, "mpi_slots": None,
         "gpu_count": 8, "backend": None, "bundle_dir": "", "local": False},
        {"name": "b", "short": "b", "ip": "b", "rdma_ip": "", "slots": 4, "mpi_slots": "4", "gpu_count": 2,
         "backend": None, "bundle_dir": "", "local": False},
        {"name": "c", "short": "c", "ip": "10.0.0.3", "rdma_ip": "10.1.0.3", "slots": 1, "mpi_slots": None,
         "gpu_count": 0, "backend": "nfs", "bundle_dir": "/mnt/b", "local": False},
    ]


def test_short_name_defaults_to_the_first_label() -> None:
    assert inventory_nodes(["n1.example.com"], {"n1.example.com": {}})[0]["short"] == "n1"
