"""The validate role's measurements and checks (plugins/plugin_utils/validate_checks.py) on recorded nvidia-smi -q and
all_reduce_perf output, the collection's floors.yml, and recorded-style nccl.conf, mpirun and pip freeze results."""

from __future__ import annotations

import copy

from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.nvidia_smi_q import parse_nvidia_smi_q
from ansible_collections.scc.nlp_training.plugins.plugin_utils import validate_checks as checks
from ansible_collections.scc.nlp_training.plugins.plugin_utils.data import load_data

from .conftest import FIXTURES

FLOORS = load_data("floors.yml")
SMI = parse_nvidia_smi_q((FIXTURES / "tool_outputs/nvidia_smi_q/h200_580.159.04.txt").read_text())
XIDS = [48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120]


def test_the_shipped_floors_are_numbers() -> None:
    assert checks.floors_problems(FLOORS) == []


def test_floors_that_are_not_numbers() -> None:
    bad = copy.deepcopy(FLOORS)
    bad["cluster"]["shared_storage_write_mbps"] = "fast"
    bad["gpu"]["H200"]["nccl_all_reduce_busbw_gbps"]["8"] = True
    bad["gpu"]["H100"]["copy_tbps"] = None
    assert checks.floors_problems(bad) == ['cluster.shared_storage_write_mbps="fast"',
                                           'gpu.H200.nccl_all_reduce_busbw_gbps.8="True"', 'gpu.H100.copy_tbps="None"']


def test_floor_entry_of_the_recorded_gpu() -> None:
    name = SMI["gpus"][0]["product_name"]
    assert checks.floor_key(name, FLOORS["gpu"]) == "H200"
    assert checks.floor_key(name, FLOORS["gpu"], "H100") == "H100"
    assert checks.floor_key("Tesla T4", FLOORS["gpu"]) == ""
    flat = checks.floor_values(FLOORS["gpu"], "H200", 8)
    assert flat["nccl_all_reduce_busbw_gbps"] == 340 and flat["gemm_bf16_tflops"] == 720
    assert "gemm_dtype" not in flat and "match" not in flat
    assert "nccl_all_reduce_busbw_gbps" not in checks.floor_values(FLOORS["gpu"], "H200", 4)
    assert checks.floor_values(FLOORS["gpu"], "", 8) == {}


def test_gpu_health_of_the_recorded_h200() -> None:
    log = ("[ 12.3] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n"
           "[ 13.0] NVRM: Xid (PCI:0000:18:00): 13, Graphics Exception\n")
    dmesg = {"rc": 0, "stdout": log}
    health = {m["name"]: m for m in checks.gpu_health(SMI, {"rc": 0}, dmesg, XIDS, len(SMI["gpus"]), True)}
    assert health["gpu_count"]["value"] == len(SMI["gpus"]) == health["gpu_count"]["floor"]
    assert health["xid_faults"]["value"] == 1 and health["xid_faults"]["detail"] == "XIDs 79"
    assert health["gpu_memory_remap_pending"]["value"] == 0
    assert set(health) == {"gpu_count", "ecc_uncorrectable_volatile", "gpu_memory_remap_pending", "xid_faults",
                           "persistence_mode_gpus"}
    unreadable = checks.gpu_health(SMI, {"rc": 0}, {"rc": 1, "stderr": "dmesg: read kernel buffer failed"}, XIDS, 8,
                                   False)
    assert unreadable[3]["skip"] == "kernel log not readable: dmesg: read kernel buffer failed"
    assert unreadable[4]["skip"] == "validate_require_persistence is false"


def test_a_failed_nvidia_smi_is_the_failed_gpu_count() -> None:
    failed = {"rc": 9, "stderr": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."}
    assert checks.gpu_health({"gpus": []}, failed, {}, XIDS, 8, True) == [
        {"name": "gpu_count", "value": None, "unit": "GPUs", "floor": 8,
         "detail": "nvidia-smi -q failed: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                   "driver.; install the driver (playbooks/gpu_stack.yml)"}]


def test_nccl_node_on_recorded_all_reduce_perf() -> None:
    text = (FIXTURES / "tool_outputs/nccl_tests/h100_2node_all_reduce_wrong_column.txt").read_text()
    parsed = parse_nccl_tests(text)
    out = checks.nccl_node(parsed, {"rc": 0, "stdout": text}, {}, 8, 1024)
    assert len(out["curve"]) == len(parsed["rows"]) and out["curve"][0]["size"] == parsed["rows"][0]["size"]
    busbw, wrong = out["measurements"]
    best = max(r["out_of_place"]["busbw"] for r in parsed["rows"] if r["size"] >= 1024)
    assert busbw["value"] == best and busbw["skip"] == ""
    assert busbw["detail"] == "nccl-tests all_reduce_perf -g 8, best out-of-place busbw at >= 1024 bytes"
    assert wrong["value"] == 0 and wrong["ceiling"] == 0
    failed = checks.nccl_node(parsed, {"rc": 1, "stderr": "NCCL WARN Cuda failure 'out of memory'"}, {}, 8, 1024)
    assert failed["measurements"][0]["detail"].endswith("; exit 1: NCCL WARN Cuda failure 'out of memory'")
    assert failed["measurements"][1]["value"] is None
    single = checks.nccl_node(parsed, {"rc": 0}, {}, 1, 1024)["measurements"][0]
    assert single["skip"].startswith("one GPU: all_reduce moves no data")
    fallback = checks.nccl_node({"rows": []}, {}, {"rc": 1, "stderr": "a\nb\nc\nRuntimeError: no NCCL"}, 8, 1024)
    assert fallback == {"curve": [], "measurements": [
        {"name": "nccl_all_reduce_busbw_gbps", "unit": "GB/s", "value": None,
         "detail": "torch.distributed fallback failed: b | c | RuntimeError: no NCCL"}]}


def test_nccl_transport() -> None:
    tcp = "# managed\nNCCL_IB_DISABLE=1\nNCCL_SOCKET_IFNAME=eth0\n"
    good = checks.nccl_transport_check("n1", "/etc/nccl.conf", True, tcp, [])
    assert good["check"]["status"] == "pass" and good["backend"] == "nccl/socket (eth0)"
    assert good["check"]["detail"] == ("n1: /etc/nccl.conf selects TCP (no RDMA): NCCL_IB_DISABLE=1 "
                                       "NCCL_SOCKET_IFNAME=eth0")
    assert checks.nccl_transport_check("n1", "/etc/nccl.conf", True, tcp, ["mlx5_0"])["check"]["detail"] == (
        "n1: /etc/nccl.conf disables RDMA although the node has mlx5_0: re-run role ib_check")
    rdma = checks.nccl_transport_check("n1", "/etc/nccl.conf", True, "NCCL_IB_HCA=mlx5_0:1\nNCCL_IB_GID_INDEX=3",
                                       ["mlx5_0"])
    assert rdma["check"]["status"] == "pass" and rdma["backend"] == "nccl/ib (mlx5_0:1)"
    missing = checks.nccl_transport_check("n1", "/etc/nccl.conf", False, "", [])
    assert missing["check"]["status"] == "fail" and missing["check"]["detail"].endswith(
        " is missing: run playbooks/gpu_stack.yml (role ib_check)")


def test_mpi_answers() -> None:
    hosts = ["clu-node1", "clu-node2", "clu-node3"]
    names = {"clu-node1": "clu-node1", "clu-node2": "", "clu-node3": "node3"}
    ok = checks.mpi_answers(hosts, names, ["clu-node1", "clu-node2", "node3 "], {"rc": 0}, "", "/etc/scc/mpihosts",
                            [])
    assert ok == {"measurement": {"name": "mpi_nodes_answering", "value": 3, "unit": "nodes", "floor": 3,
                                  "detail": "every node answered mpirun -np N hostname"}, "blame": []}
    quiet = checks.mpi_answers(hosts, names, ["clu-node1"], {"rc": 0}, "", "/etc/scc/mpihosts", [])
    assert quiet["measurement"]["value"] == 1
    assert quiet["measurement"]["detail"] == "no answer from clu-node2, clu-node3"
    assert [b["host"] for b in quiet["blame"]] == ["clu-node2", "clu-node3"]
    assert quiet["blame"][0]["msg"] == ("clu-node2: mpirun -np N hostname over /etc/scc/mpihosts got no answer from "
                                        "this node")
    failed = checks.mpi_answers(hosts, names, [], {"rc": 1}, "ssh: Could not resolve hostname clu-node3",
                                "/etc/scc/mpihosts", ["clu-node3"])
    assert failed["measurement"]["detail"] == (
        "mpirun failed (rc 1): ssh: Could not resolve hostname clu-node3; not reached in this run: clu-node3 (start "
        "the node or fix its connection, then run again)")
    assert [b["host"] for b in failed["blame"]] == ["clu-node3"]
    recorded = (FIXTURES / "tool_outputs" / "mpirun" / "hostkey_unknown.txt").read_text()
    caused = checks.mpi_answers(hosts, names, [], {"rc": 255, "stderr": recorded, "stdout": ""}, "",
                                "/etc/scc/mpihosts", [])
    assert caused["measurement"]["detail"].startswith(
        "mpirun failed (rc 255): host key verification failed: no ED25519 host key of node2 is known on the node "
        "that launched mpirun. Fix: run the cluster phase on every node"), caused["measurement"]["detail"]
    assert "We apologize" not in caused["measurement"]["detail"] and caused["blame"] == []
    none = checks.mpi_answers(hosts, names, [], None, "", "/etc/scc/mpihosts", [])
    assert none == {"measurement": {"name": "mpi_nodes_answering", "value": None, "unit": "nodes", "floor": 3,
                                    "detail": "MPI hostfile /etc/scc/mpihosts missing: run playbooks/cluster.yml"},
                    "blame": []}


def test_venv_identity() -> None:
    same = checks.venv_identity({"n1": "ab" * 32, "n2": "ab" * 32}, "n1", "/opt/scc/venv", [])
    assert same["status"] == "pass" and same["detail"] == "every node has the same venv packages (pip freeze sha256 "\
        "abababababab)"
    differ = checks.venv_identity({"n1": "ab" * 32, "n2": "cd" * 32, "n3": ""}, "n1", "/opt/scc/venv", ["n4"])
    assert differ["status"] == "fail" and differ["measured"] == 3
    assert differ["detail"] == ("venv packages differ: n1=abababababab; n2=cdcdcdcdcdcd; n3=no venv; re-run "
                                "playbooks/runtime.yml; not compared (not reached in this run): n4")
    assert checks.venv_identity({"n1": "", "n2": ""}, "n1", "/opt/scc/venv", [])["detail"] == (
        "n1: no training venv at /opt/scc/venv on any node (run playbooks/runtime.yml); skipped")


def test_peers_check() -> None:
    ok = checks.peers_check("n1", {"resolve": [], "ssh": []})
    assert ok == {"name": "peers_resolved_and_reached", "status": "pass", "measured": None, "floor": None, "unit": "",
                  "detail": "n1: every other node resolves to its inventory address and answers ssh by its name"}
    bad = checks.peers_check("n2", {"resolve": ["n3 resolves to 10.0.0.99, not 10.0.0.13"],
                                    "ssh": ["to n3 (rc 255): ssh: connect to host n3 port 22: No route to host"]})
    assert bad["status"] == "fail"
    assert bad["detail"] == (
        "n2: n3 resolves to 10.0.0.99, not 10.0.0.13; ssh to n3 (rc 255): ssh: connect to host n3 port 22: No route "
        "to host. Fix: run the cluster phase (`sccnlp deploy -i INVENTORY --playbook cluster`): it writes /etc/hosts "
        "and the known hosts of every node")
