"""Monitoring on the converged test bed (`sccnlp up`: site.yml ran playbooks/monitoring.yml, then validation and a
short BERT run): node_exporter on every node (Debian's package, pinned and held), Prometheus on the first node
scraping every node (up == 1), node_exporter's infiniband collector reading an RDMA double (the recorded ConnectX-6
sysfs tree of tests/fixtures/rdma_sysfs, put where the test bed's monitoring_node_exporter_sysfs_path points) whose
counters appear, change and drive the RDMA rules' expressions, the validation's gate results and the training
heartbeat queryable with the values the nodes hold, a stopped node firing the node-down rule's expression, and the
monitoring phase changing nothing on a re-run and in check mode. Needs SCCNLP_TESTBED_INVENTORY (scripts/test.sh
e2e); run: `pytest -m testbed tests/integration/monitor`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sccnlp.testbed.cluster import SYSFS_DOUBLE

pytestmark = pytest.mark.testbed
SetCounters = Callable[[str, dict[str, Any]], None]

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "rdma_sysfs" / "cx6_roce" / "sys" / "class" / "infiniband" / "mlx5_0"
RULES = yaml.safe_load((ROOT / "roles" / "monitoring" / "files" / "scc_rules.yml").read_text())["groups"][0]["rules"]
COUNTERS = ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets", "link_downed",
            "symbol_error", "port_rcv_errors")


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _env() -> dict[str, str]:
    from sccnlp import runner

    return {**os.environ, "ANSIBLE_COLLECTIONS_PATH": runner._collections_path(),
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}


def _expr(alert: str) -> str:
    return " ".join(next(rule["expr"] for rule in RULES if rule.get("alert") == alert).split())


@pytest.fixture(scope="module")
def bed(testbed_inventory: str) -> dict[str, Any]:
    """Nodes (inventory name -> address and container), the Prometheus URL (first node, port 9090)."""
    listing = subprocess.run([_bin("ansible-inventory"), "-i", testbed_inventory, "--list"], capture_output=True,
                             text=True, env=_env(), check=True, timeout=120)
    data = json.loads(listing.stdout)
    names = data["scc_cluster"]["hosts"]
    hostvars = data["_meta"]["hostvars"]
    state = Path(testbed_inventory).parent / "state.json"
    if not state.is_file():
        pytest.fail(f"{testbed_inventory} is not a test bed inventory (no {state}): these tests use its containers")
    containers = {n["name"]: n["container"] for n in json.loads(state.read_text())["nodes"]}
    assert len(names) >= 2, names
    return {"inventory": testbed_inventory, "nodes": names, "ip": {n: hostvars[n]["ansible_host"] for n in names},
            "container": containers, "url": f"http://{hostvars[names[0]]['ansible_host']}:9090",
            "shared": hostvars[names[0]].get("scc_shared_dir", "/mnt/cpfs")}


def _docker(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], input=stdin, capture_output=True, text=True, timeout=timeout, check=False)


def _in_node(bed: dict[str, Any], node: str, script: str) -> str:
    done = _docker("exec", bed["container"][node], "sh", "-c", script)
    assert done.returncode == 0, f"{node}: {script}: {done.stderr}"
    return done.stdout


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def _query(bed: dict[str, Any], expr: str) -> list[dict[str, Any]]:
    answer = _get(f"{bed['url']}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])


def _values(bed: dict[str, Any], expr: str, key: str = "instance") -> dict[str, float]:
    return {item["metric"].get(key, "?"): float(item["value"][1]) for item in _query(bed, expr)}


def _until(what: str, probe: Callable[[], Any], timeout: float = 60) -> Any:
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(1)
    raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")


def _node_metrics(bed: dict[str, Any], node: str) -> str:
    with urllib.request.urlopen(f"http://{bed['ip'][node]}:9100/metrics", timeout=10) as answer:
        return str(answer.read().decode())


def test_node_exporter_runs_on_every_node_from_the_pinned_held_package(bed: dict[str, Any]) -> None:
    for node in bed["nodes"]:
        metrics = _node_metrics(bed, node)
        assert 'node_exporter_build_info{branch="debian/sid"' in metrics and 'version="1.5.0"' in metrics, node
        assert 'scc_monitoring_textfile_info{directory="/var/lib/prometheus/node-exporter"} 1' in metrics, node
        assert _in_node(bed, node, "dpkg-query -W -f='${Version} ${db:Status-Abbrev}' prometheus-node-exporter") \
            .strip() == "1.5.0-1+b6 hi", node
        assert _in_node(bed, node, "systemctl is-enabled prometheus-node-exporter").strip() == "enabled"


def test_prometheus_scrapes_every_node(bed: dict[str, Any]) -> None:
    assert _values(bed, 'up{job="scc_node"}') == {node: 1.0 for node in bed["nodes"]}
    loaded = {rule["name"] for group in _get(f"{bed['url']}/api/v1/rules")["data"]["groups"]
              for rule in group["rules"]}
    assert {rule["alert"] for rule in RULES if "alert" in rule} <= loaded


@pytest.fixture(scope="module")
def rdma_double(bed: dict[str, Any]) -> Iterator[SetCounters]:
    """A device mlx5_<node> on every node (the recorded ConnectX-6 tree, its counters at 1000); yields set(node,
    {counter: value}) and removes the devices afterwards."""
    tar = subprocess.run(["tar", "-C", str(FIXTURE), "-c", "."], capture_output=True, check=True).stdout
    for node in bed["nodes"]:
        # Unpacked and set aside, then moved in whole: node_exporter never sees the fixture's own counter values.
        device, staged = f"{SYSFS_DOUBLE}/class/infiniband/mlx5_{node}", f"{SYSFS_DOUBLE}/.mlx5_{node}"
        counters = " && ".join(f"echo 1000 > {staged}/ports/1/counters/{c}" for c in COUNTERS)
        unpacked = subprocess.run(["docker", "exec", "-i", bed["container"][node], "sh", "-c",
                                   f"rm -rf {device} {staged} && mkdir -p {staged} && tar -C {staged} -x && "
                                   f"{counters} && mv {staged} {device}"],
                                  input=tar, capture_output=True, timeout=60, check=False)
        assert unpacked.returncode == 0, unpacked.stderr
    # rate() and increase() need two samples before a change: wait until Prometheus holds two of the starting values
    # of every node, scraped and recorded (the error counters' recording rule runs every evaluation interval), so a
    # change made by a test is a rise from 1000, not a first sample.
    for expr in ("node_infiniband_port_data_transmitted_bytes_total",
                 'scc:node_infiniband_port_errors:total{counter="symbol_error"}'):
        counted = f"count_over_time({expr}[5m])"
        _until(f"two samples of {expr} from every node", lambda counted=counted: all(
            _values(bed, counted).get(node, 0) >= 2 for node in bed["nodes"]), timeout=120)

    def set_counters(node: str, values: dict[str, Any]) -> None:
        port = f"{SYSFS_DOUBLE}/class/infiniband/mlx5_{node}/ports/1"
        _in_node(bed, node, " && ".join(f"echo '{v}' > {port}/{'' if k == 'state' else 'counters/'}{k}"
                                        for k, v in values.items()))

    yield set_counters
    for node in bed["nodes"]:
        _in_node(bed, node, f"rm -rf {SYSFS_DOUBLE}/class/infiniband/mlx5_{node}")


def test_rdma_counters_of_the_double_appear_and_change(bed: dict[str, Any], rdma_double: SetCounters) -> None:
    for node in bed["nodes"]:
        metrics = _node_metrics(bed, node)
        # port_xmit_data counts 4-byte words: 1000 words are 4000 bytes.
        assert f'node_infiniband_port_data_transmitted_bytes_total{{device="mlx5_{node}",port="1"}} 4000' in metrics
        assert f'node_infiniband_state_id{{device="mlx5_{node}",port="1"}} 4' in metrics
    first = bed["nodes"][0]
    rdma_double(first, {"port_xmit_data": 2000, "port_rcv_data": 1500})
    changed = f'node_infiniband_port_data_transmitted_bytes_total{{device="mlx5_{first}",port="1"}} 8000'
    assert changed in _node_metrics(bed, first)
    expr = f'node_infiniband_port_data_transmitted_bytes_total{{instance="{first}"}}'
    _until("Prometheus sees the new counter", lambda: _values(bed, expr) == {first: 8000.0})


def test_monitor_rdma_shows_the_rates_prometheus_computes(bed: dict[str, Any], rdma_double: SetCounters) -> None:
    first = bed["nodes"][0]
    rdma_double(first, {"port_xmit_data": 3000})
    _until("the new counter scraped",
           lambda: _values(bed, f'node_infiniband_port_data_transmitted_bytes_total{{instance="{first}"}}')
           == {first: 12000.0})
    done = subprocess.run([sys.executable, "-m", "sccnlp.cli", "monitor", "rdma", "--prometheus", bed["url"],
                           "--inventory", bed["inventory"], "--window", "2m", "--count", "1", "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    rows = {row["host"]: row for row in map(json.loads, done.stdout.splitlines())}
    assert sorted(rows) == sorted(bed["nodes"])
    assert rows[first]["device"] == f"mlx5_{first}" and rows[first]["tx_gbps"] > 0
    # The same numbers as Prometheus' own rate() over the window, for every node (a moment later: within 5 %).
    direct = _values(bed, "rate(node_infiniband_port_data_transmitted_bytes_total[2m]) * 8 / 1e9")
    assert {node: row["tx_gbps"] for node, row in rows.items()} == pytest.approx(direct, rel=0.05, abs=1e-12)


def test_the_rdma_rules_fire_on_the_doubles_counters(bed: dict[str, Any], rdma_double: SetCounters) -> None:
    """The shipped expressions, evaluated by the test bed's Prometheus on what node_exporter read: a flapping link
    (link_downed rises), rising symbol errors, a port that left ACTIVE, each on one node only."""
    flap, errors, down = bed["nodes"][0], bed["nodes"][1], bed["nodes"][-1]
    rdma_double(flap, {"link_downed": 1001})
    rdma_double(errors, {"symbol_error": 1500})
    rdma_double(down, {"state": "1: DOWN"})
    _until("link_downed rose on " + flap, lambda: set(_values(bed, _expr("SccRdmaLinkDowned"))) == {flap})
    _until("symbol_error rose on " + errors, lambda: [(i["metric"]["instance"], i["metric"]["counter"])
                                                      for i in _query(bed, _expr("SccRdmaPortErrors"))]
           == [(errors, "symbol_error")] or None)
    _until(down + " not ACTIVE", lambda: set(_values(bed, _expr("SccRdmaPortNotActive"))) == {down})


def test_gate_results_of_the_last_validation_are_queryable(bed: dict[str, Any]) -> None:
    status = {"pass": 1.0, "fail": 0.0, "skip": -1.0}
    for index, node in enumerate(bed["nodes"]):
        fragment = json.loads(_in_node(bed, node, f"cat /var/lib/scc/validate/fragment-{node}.json"))
        scopes = {"node": fragment["nodes"][node]["checks"], "cluster": fragment["cluster"]["checks"]}
        assert scopes["node"], f"{node}: the validation wrote no node checks"
        assert bool(scopes["cluster"]) == (index == 0), "cluster checks come from the first node only"
        for scope, checks in scopes.items():
            results: dict[str, set[str]] = {}
            for check in checks:
                results.setdefault(check["name"], set()).add(check["status"])
            # A name listed twice counts as failed when one of its checks failed.
            want = {name: status[next(s for s in ("fail", "pass", "skip") if s in seen)]
                    for name, seen in results.items()}
            got = _values(bed, f'scc_gate_status{{instance="{node}",scope="{scope}"}}', "check")
            assert got == want, f"{node} {scope}"
            measured = {c["name"]: float(c["measured"]) for c in checks if c.get("measured") is not None}
            assert _values(bed, f'scc_gate_measured{{instance="{node}",scope="{scope}"}}', "check") == measured
            floors = {c["name"]: float(c["floor"]) for c in checks if c.get("floor") is not None}
            assert _values(bed, f'scc_gate_floor{{instance="{node}",scope="{scope}"}}', "check") == floors
        facts = _in_node(bed, node, "ls /etc/ansible/facts.d").split()
        components = set(_values(bed, f'scc_stack_info{{instance="{node}"}}', "component"))
        assert ("pytorch" in components) == ("scc_pytorch.fact" in facts) and components, (node, components, facts)
    assert _values(bed, 'scc_shared_storage_expected') == {node: 1.0 for node in bed["nodes"]}
    # job scc_node: for five minutes after a first deploy Prometheus still answers with the last sample of Debian's
    # packaged configuration (job node, localhost:9100), which ran until the role's configuration restarted it.
    mounted = _values(bed, f'node_filesystem_device_error{{job="scc_node",mountpoint="{bed["shared"]}"}}')
    assert mounted == {node: 0.0 for node in bed["nodes"]}, "node_exporter reads the GlusterFS mount"
    assert _query(bed, _expr("SccSharedStorageUnmounted")) == []
    assert _query(bed, _expr("SccGateFailing")) == [], "the converged test bed passed its validation"


def test_training_heartbeat_is_queryable(bed: dict[str, Any]) -> None:
    """Rank 0 (the first node) wrote scc_training.prom during the last training run of the test bed."""
    first = bed["nodes"][0]
    text = _in_node(bed, first, "cat /var/lib/prometheus/node-exporter/scc_training.prom")
    samples = [line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#")]
    wanted = {"scc_training_step", "scc_training_loss", "scc_training_heartbeat_timestamp_seconds",
              "scc_training_completed"}
    assert {s[0].split("{", 1)[0] for s in samples} >= wanted, text
    for series, value in samples:
        name, labels = series.split("{", 1)
        assert _values(bed, f'{name}{{instance="{first}",{labels}') == {first: pytest.approx(float(value))}, series


def test_a_stopped_node_fires_the_node_down_expression(bed: dict[str, Any]) -> None:
    from tests.integration.bert.test_bert_testbed_lost_node import bring_back

    node = bed["nodes"][-1]
    container = bed["container"][node]
    hosts_file = _docker("exec", container, "cat", "/etc/hosts").stdout
    assert _query(bed, _expr("SccNodeDown")) == []
    try:
        assert _docker("stop", "-t", "2", container).returncode == 0
        fired = _until(f"{node} down in Prometheus", lambda: _query(bed, _expr("SccNodeDown")), 60)
        assert [item["metric"]["instance"] for item in fired] == [node]
        alerts = _until("the alert pending", lambda: [a for a in _get(f"{bed['url']}/api/v1/alerts")["data"]["alerts"]
                                                      if a["labels"]["alertname"] == "SccNodeDown"], 30)
        assert [(a["labels"]["instance"], a["state"]) for a in alerts] in ([(node, "pending")], [(node, "firing")])
    finally:
        bring_back(bed["inventory"], node, container, bed["shared"])
        put = subprocess.run(["docker", "exec", "-i", container, "sh", "-c", "cat > /etc/hosts"], input=hosts_file,
                             capture_output=True, text=True, timeout=30, check=False)
        assert put.returncode == 0 and hosts_file, put.stderr
    _until(f"{node} up again", lambda: _values(bed, f'up{{instance="{node}"}}') == {node: 1.0}, 60)


def test_a_rerun_and_check_mode_change_nothing(bed: dict[str, Any]) -> None:
    for extra in ([], ["--check"]):
        t0 = time.monotonic()
        done = subprocess.run([_bin("ansible-playbook"), "-i", bed["inventory"],
                               str(ROOT / "playbooks" / "monitoring.yml"), *extra],
                              capture_output=True, text=True, env=_env(), timeout=600, check=False)
        took = time.monotonic() - t0
        assert done.returncode == 0, done.stdout[-3000:]
        recap = [line for line in done.stdout.splitlines() if line.split(" ", 1)[0] in bed["nodes"] and "ok=" in line]
        assert len(recap) == len(bed["nodes"]) and all("changed=0" in line for line in recap), recap
        print(f"playbooks/monitoring.yml {' '.join(extra) or '(re-run)'} on {len(bed['nodes'])} nodes: {took:.1f} s")
