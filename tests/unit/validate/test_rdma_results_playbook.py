"""roles/ib_check/tasks/perftest_results.yml through ansible-playbook on recorded perftest results (three local
hosts, no RDMA needed): the fragment it writes, the one-line failure naming the pairs and the node at fault, the
floors of sccnlp/data/floors.yml as the defaults and the inventory's ib_check_pairs_* winning over them."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.perftest import parse_perftest

from sccnlp.paths import collection_root
from sccnlp.runner import _collections_path

from .conftest import FIXTURES, RDMA_TREE

PERFTEST = FIXTURES / "tool_outputs" / "perftest"
HOSTS = ["n1", "n2", "n3"]
PLAYBOOK = """
- name: Judge recorded RDMA pairs
  hosts: ring
  gather_facts: false
  vars:
    ib_check_pairs_report_dir: "{{ report_dir }}"
    validate_cluster_name: unit
  tasks:
    - name: The facts the perftest rounds leave
      ansible.builtin.set_fact:
        ib_check_facts: {present: true, devices: "{{ devs }}"}
        _ib_check_rv_results: "{{ results_by_host[inventory_hostname] }}"
    - name: Judge
      ansible.builtin.import_role:
        name: scc.nlp_training.ib_check
        tasks_from: perftest_results
"""


def run_results(tmp_path: Path, rdma_sysfs: Any, slow: tuple[str, ...], collections: str | None = None,
                group_vars: dict[str, Any] | None = None):
    bw = parse_perftest((PERFTEST / "ib_write_bw_gbits_sweep_roce.txt").read_text())
    lat = parse_perftest((PERFTEST / "ib_write_lat_mlx4_cpufreq_warnings.txt").read_text())
    results = {}
    for client, server in zip(HOSTS, HOSTS[1:] + HOSTS[:1]):
        mine = copy.deepcopy(bw)
        if client in slow:
            mine["summary"]["max_bw_avg_gbps"] = 46.0
        results[client] = [{"tool": "ib_write_bw", "client": client, "server": server, "rc": 0, "parsed": mine,
                            "stderr": ""},
                           {"tool": "ib_write_lat", "client": client, "server": server, "rc": 0, "parsed": lat,
                            "stderr": ""}]
    extra = {"devs": rdma_sysfs.read_tree(str(RDMA_TREE))[1], "results_by_host": results,
             "report_dir": str(tmp_path / "report")}
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(
        {"all": {"children": {"ring": {"hosts": {h: local for h in HOSTS}, "vars": group_vars or {}}}}}))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections or _collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_HOME=str(tmp_path))
    exe = Path(sys.executable).parent / "ansible-playbook"
    proc = subprocess.run([str(exe), "-i", str(tmp_path / "inventory.yml"), "-e", "@" + str(tmp_path / "extra.json"),
                           str(tmp_path / "play.yml")], cwd=collection_root(), capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    fragment = tmp_path / "report" / "fragments" / "rdma.json"
    data = json.loads(fragment.read_text()) if fragment.exists() else None
    return proc, data


def test_good_ring(tmp_path, rdma_sysfs):
    proc, data = run_results(tmp_path, rdma_sysfs, slow=())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = data["cluster"]["checks"]
    assert [(c["name"], c["status"]) for c in checks] == [
        (f"rdma_write_{kind} {c}->{s}", "pass") for c, s in [("n1", "n2"), ("n2", "n3"), ("n3", "n1")]
        for kind in ("bw", "lat")]
    assert checks[0]["detail"] == (
        "n1: rdma_write_bw 92.46 >= floor 90.0 (90% of 100.0 Gb/s line rate, mlx5_0:1 -> mlx5_0:1 on n2)")
    assert sorted(data["cluster"]["curves"]) == ["ib_write_bw n1->n2", "ib_write_bw n2->n3", "ib_write_bw n3->n1"]


def test_node_at_fault(tmp_path, rdma_sysfs):
    proc, data = run_results(tmp_path, rdma_sysfs, slow=("n1", "n2"))
    assert proc.returncode != 0
    assert "Traceback" not in proc.stdout + proc.stderr
    assert (f"RDMA pairs below 90% of line rate or above 10 us: n1->n2, n2->n3; node at fault: n2. "
            f"Details in {tmp_path}/report/fragments/rdma.json.") in proc.stdout
    assert [(c["name"], c["status"]) for c in data["cluster"]["checks"]][-1] == ("rdma_node_at_fault n2", "fail")


def test_the_inventory_floors_win(tmp_path, rdma_sysfs):
    """Group vars of the inventory (not play vars) set the floors: 46 of 100 Gb/s passes at 0.4."""
    proc, data = run_results(tmp_path, rdma_sysfs, slow=("n1", "n2"),
                             group_vars={"ib_check_pairs_min_fraction": 0.4, "ib_check_pairs_max_latency_us": 20})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = data["cluster"]["checks"]
    assert {c["status"] for c in checks} == {"pass"}
    assert checks[0]["detail"] == (
        "n1: rdma_write_bw 46.0 >= floor 40.0 (40% of 100.0 Gb/s line rate, mlx5_0:1 -> mlx5_0:1 on n2)")
    assert "20" in checks[1]["detail"], checks[1]
