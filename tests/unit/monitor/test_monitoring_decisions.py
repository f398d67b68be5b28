"""The monitoring role's decisions (plugins/plugin_utils/monitoring.py) on recorded inputs: its settings refused with
node, setting, value and fix; the file_sd targets from the inventory; what node_exporter's /metrics answer and
Prometheus' rules and up answers must show (recorded from the test bed: tests/fixtures/tool_outputs/)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from plugins.plugin_utils import monitoring as m

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tool_outputs"
METRICS = (FIXTURES / "node_exporter" / "metrics_1.5.0_debian12_rdma_double.txt").read_text()
RULES = json.loads((FIXTURES / "prometheus" / "rules_alert_2.42.0.json").read_text())
UP = json.loads((FIXTURES / "prometheus" / "query_up_2.42.0.json").read_text())
TEXTFILE = "/var/lib/prometheus/node-exporter"
ALERTS = ["SccNodeDown", "SccRdmaPortNotActive", "SccRdmaLinkDowned", "SccRdmaPortErrors",
          "SccSharedStorageUnmounted", "SccGateFailing", "SccGpuXidSeen", "SccTrainingHeartbeatStale"]
GOOD: dict[str, Any] = {
    "monitoring_node_exporter_install": True, "monitoring_node_exporter_port": 9100,
    "monitoring_node_exporter_sysfs_path": "/sys",
    "monitoring_node_exporter_filesystem_exclude": "^/(dev|proc|run|sys|media|var/lib/docker/.+)($|/)",
    "monitoring_node_exporter_extra_args": ["--collector.systemd"], "monitoring_textfile_dir": TEXTFILE,
    "monitoring_server_enabled": True, "monitoring_server_host": "", "monitoring_server_port": 9090,
    "monitoring_server_scrape_interval": "15s", "monitoring_server_evaluation_interval": "1m30s",
    "monitoring_server_retention": "15d", "monitoring_server_alertmanagers": ["am.example:9093"],
    "monitoring_server_dcgm_port": 9400,
}


def _problems(change: dict[str, Any], os_family: str = "Debian", shared: str = "/mnt/cpfs") -> list[str]:
    return m.settings_problems("node1", {**GOOD, **change}, os_family, ["node1", "node2", "mon"], shared)


def test_good_settings_pass() -> None:
    assert _problems({}) == []
    assert _problems({"monitoring_server_host": "mon", "monitoring_server_alertmanagers": []}) == []


@pytest.mark.parametrize(("change", "words"), [
    ({"monitoring_node_exporter_port": 0}, ["monitoring_node_exporter_port is 0: not a TCP port", "1 to 65535"]),
    ({"monitoring_server_port": "http"}, ["monitoring_server_port is 'http'"]),
    ({"monitoring_textfile_dir": "textfile"}, ["monitoring_textfile_dir is 'textfile': not an absolute directory"]),
    ({"monitoring_textfile_dir": '/var/lib/a"b'}, ["without quotes, backslashes, spaces or line breaks"]),
    ({"monitoring_node_exporter_sysfs_path": "/"}, ["monitoring_node_exporter_sysfs_path is '/'"]),
    ({"monitoring_node_exporter_extra_args": "--collector.systemd"}, ["not a list of --flag=value strings"]),
    ({"monitoring_node_exporter_extra_args": ["--a b"]}, ["the service splits its arguments at spaces"]),
    ({"monitoring_node_exporter_filesystem_exclude": "^/(mnt|media)($|/)"},
     ["it matches the shared storage mount point /mnt/cpfs", "SccSharedStorageUnmounted would always fire"]),
    ({"monitoring_node_exporter_filesystem_exclude": "^/(dev"}, ["not a regular expression"]),
    ({"monitoring_node_exporter_filesystem_exclude": "^/(dev| proc)"}, ["it holds a space", "[[:space:]]"]),
    ({"monitoring_server_host": "elsewhere"}, ["monitoring_server_host is 'elsewhere': not a host of the inventory"]),
    ({"monitoring_server_scrape_interval": "15 seconds"}, ["not a Prometheus duration", "15s, 1m or 15d"]),
    ({"monitoring_server_retention": ""}, ["monitoring_server_retention is ''"]),
    ({"monitoring_server_alertmanagers": ["am.example"]}, ["not a list of host:port strings"]),
])
def test_each_bad_setting_is_refused_with_node_setting_value_and_fix(change: dict[str, Any], words: list[str]) -> None:
    problems = _problems(change)
    assert len(problems) == 1, problems
    assert problems[0].startswith("monitoring on node1: ") and "Fix: " in problems[0]
    for word in words:
        assert word in problems[0], problems[0]


def test_server_settings_are_not_checked_when_the_server_is_off() -> None:
    assert _problems({"monitoring_server_enabled": False, "monitoring_server_host": "elsewhere",
                      "monitoring_server_retention": "forever"}) == []


def test_another_os_family_needs_its_own_exporter() -> None:
    assert "this node is RedHat" in _problems({}, os_family="RedHat")[0]
    assert _problems({"monitoring_node_exporter_install": False}, os_family="RedHat") == []


def test_scrape_targets_follow_the_inventory() -> None:
    hostvars = {"node1": {"ansible_host": "10.0.0.11", "gpu_count": 8},
                "node2": {"monitoring_node_exporter_port": 9200},
                "node3": {"ansible_host": "fd00::3", "gpu_count": "0"}}
    assert m.scrape_targets(["node1", "node2", "node3"], hostvars, 9100) == [
        {"targets": ["10.0.0.11:9100"], "labels": {"instance": "node1"}},
        {"targets": ["node2:9200"], "labels": {"instance": "node2"}},
        {"targets": ["[fd00::3]:9100"], "labels": {"instance": "node3"}}]
    assert m.scrape_targets(["node1", "node2", "node3"], hostvars, 9400, gpu_only=True) == [
        {"targets": ["10.0.0.11:9400"], "labels": {"instance": "node1"}}]


def test_the_recorded_exporter_answer_shows_everything() -> None:
    assert m.exporter_problems("node2", METRICS, 9100, TEXTFILE, "1.5.0", rdma=True) == []
    samples = m.parse_samples(METRICS)
    assert ("node_infiniband_port_data_transmitted_bytes_total", {"device": "mlx5_0", "port": "1"}, "4000") in samples


def test_an_exporter_of_another_version_is_named() -> None:
    problems = m.exporter_problems("node2", METRICS, 9100, TEXTFILE, "1.7.0")
    assert problems == ["node2: node_exporter on port 9100 reports version 1.5.0, not 1.7.0. Fix: stop the other "
                        "exporter on the port, or set monitoring_node_exporter_install: false to keep it"]


def test_an_exporter_reading_another_directory_is_named() -> None:
    problems = m.exporter_problems("node2", METRICS, 9100, "/var/lib/node_exporter")
    assert len(problems) == 1 and "does not read /var/lib/node_exporter (it reads /var/lib/prometheus/" \
        "node-exporter)" in problems[0] and "--collector.textfile.directory=/var/lib/node_exporter" in problems[0]


def test_a_broken_textfile_and_a_failed_infiniband_collector_are_named() -> None:
    success = 'node_scrape_collector_success{collector="infiniband"} '
    text = METRICS.replace("node_textfile_scrape_error 0", "node_textfile_scrape_error 1").replace(
        success + "1", success + "0")
    problems = m.exporter_problems("node2", text, 9100, TEXTFILE, rdma=True, sysfs_path="/opt/sys/")
    assert len(problems) == 2
    assert "node_textfile_scrape_error 1" in problems[0]
    assert "the infiniband collector failed on this RDMA node" in problems[1] and "/opt/sys/class/infiniband" in \
        problems[1]
    no_collector = METRICS.replace('collector="infiniband"', 'collector="other"')
    assert "did not run" in m.exporter_problems("node2", no_collector, 9100, TEXTFILE, rdma=True)[0]


def test_no_answer_at_all_is_named() -> None:
    assert "answered no metrics" in m.exporter_problems("node2", "", 9100, TEXTFILE)[0]


def test_the_recorded_server_answers_show_rules_loaded_and_nodes_up() -> None:
    assert m.server_problems("node1", RULES, UP, ["node1", "node2", "node3"], ALERTS) == []


def test_a_node_not_up_and_a_rule_not_loaded_are_named() -> None:
    up = copy.deepcopy(UP)
    up["data"]["result"][1]["value"][1] = "0"
    rules = copy.deepcopy(RULES)
    for group in rules["data"]["groups"]:
        group["rules"] = [r for r in group["rules"] if r["name"] != "SccGpuXidSeen"]
    problems = m.server_problems("node1", rules, up, ["node1", "node2", "node3", "node4"], ALERTS)
    assert problems[0].startswith("node1: Prometheus has not loaded the alert rules SccGpuXidSeen.")
    assert "does not scrape node2, node4 (up: node2=0, node4=absent)" in problems[1]


def test_a_file_is_written_only_when_it_differs_in_text_owner_group_or_mode() -> None:
    text = "groups:\n  - name: scc\n"
    found = {"exists": True, "isdir": False, "owner": "root", "group": "root", "mode": "0644",
             "sha256": hashlib.sha256(text.encode()).hexdigest()}
    assert m.file_differs(found, text, "root", "root", "0644") is False
    assert m.file_differs(found, text + "# drift\n", "root", "root", "0644") is True
    assert m.file_differs(found, text.rstrip("\n"), "root", "root", "0644") is True   # a trailing newline counts
    assert m.file_differs({**found, "owner": "prometheus"}, text, "root", "root", "0644") is True
    assert m.file_differs({**found, "group": "adm"}, text, "root", "root", "0644") is True
    assert m.file_differs({**found, "mode": "0600"}, text, "root", "root", "0644") is True
    assert m.file_differs({"exists": False, "isdir": False, "mode": ""}, text, "root", "root", "0644") is True
    assert m.file_differs({**found, "isdir": True}, text, "root", "root", "0644") is True
