"""What a person checks by hand after validation on two nodes with the RDMA test double (molecule `validate`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import testinfra

NAMES = ["val-node1", "val-node2"]
REPORT = Path("/tmp/val-molecule-report")  # validate_report_dir in inventory/group_vars/scc_cluster.yml


@pytest.fixture(scope="module")
def hosts():
    return {name: testinfra.get_host(f"docker://{name}") for name in NAMES}


@pytest.fixture(scope="module")
def report():
    path = REPORT / "report.json"
    assert path.exists(), f"{path} missing: the converge did not write the report"
    return json.loads(path.read_text())


@pytest.mark.parametrize("name", NAMES)
def test_nccl_conf_uses_the_roce_v2_gid(hosts, name):
    conf = hosts[name].file("/etc/nccl.conf")
    assert conf.contains("^NCCL_IB_HCA=mlx5_0:1$")
    assert conf.contains("^NCCL_IB_GID_INDEX=3$")  # the IPv4-mapped RoCE v2 GID of the recorded port
    assert conf.contains("^NCCL_IB_DISABLE=0$")
    assert conf.contains("^NCCL_SOCKET_IFNAME=eth0$")
    env = hosts[name].file("/etc/scc/scc.env").content_string
    assert "# BEGIN scc.nlp_training ib_check" in env and "NCCL_IB_GID_INDEX=3" in env


@pytest.mark.parametrize("name", NAMES)
def test_rdma_tools_installed_and_local_fact(hosts, name):
    host = hosts[name]
    assert host.package("ibverbs-utils").is_installed
    assert host.package("perftest").is_installed
    fact = json.loads(host.file("/etc/ansible/facts.d/scc_ib_check.fact").content_string)
    assert fact["rdma"] is True and fact["active_ports"] == ["mlx5_0:1"]
    assert fact["firmware"] == {"mlx5_0": "20.24.4702"}


def test_mpirun_reaches_both_nodes(hosts):
    out = hosts["val-node1"].check_output(
        "mpirun --allow-run-as-root -np 2 --hostfile /etc/scc/mpihosts --mca btl_tcp_if_include 10.94.0.0/24 "
        "--mca oob_tcp_if_include 10.94.0.0/24 hostname")
    assert sorted(out.split()) == NAMES


def test_report_nodes(report):
    assert report["summary"]["status"] == "pass"
    for name in NAMES:
        checks = {c["name"]: c for c in report["nodes"][name]["checks"]}
        assert checks["nccl_transport_configured"]["status"] == "pass"
        assert "NCCL_IB_HCA=mlx5_0:1" in checks["nccl_transport_configured"]["detail"]
        for gate in ("gpu_count", "gemm_tflops", "copy_tbps", "nccl_all_reduce_busbw_gbps"):
            assert checks[gate]["status"] == "skip" and "no GPU" in checks[gate]["detail"]
        assert report["nodes"][name]["facts"]["rdma_devices"] == ["mlx5_0"]


def test_report_cluster(report):
    checks = {c["name"]: c for c in report["cluster"]["checks"]}
    assert checks["mpi_nodes_answering"]["status"] == "pass" and checks["mpi_nodes_answering"]["measured"] == 2
    assert checks["shared_storage_visible"]["status"] == "pass" and checks["shared_storage_visible"]["measured"] == 2
    assert checks["shared_storage_write_mbps"]["status"] == "pass"
    assert checks["venv_packages_identical"]["status"] == "pass"
    for pair in ("val-node1->val-node2", "val-node2->val-node1"):
        bw = checks[f"rdma_write_bw {pair}"]
        assert bw["status"] == "pass" and bw["measured"] == pytest.approx(92.46) and bw["floor"] == 90.0
        assert checks[f"rdma_write_lat {pair}"]["status"] == "pass"
        assert len(report["cluster"]["curves"][f"ib_write_bw {pair}"]) == 23
