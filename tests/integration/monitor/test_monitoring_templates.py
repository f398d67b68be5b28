"""The monitoring role's files as Ansible renders them (its defaults and vars, a two-node inventory, one GPU node),
checked by the tools that run them: prometheus.yml by `promtool check config` (with the DCGM job and an Alertmanager,
and without), scc_monitoring.prom by `promtool check metrics`, and the flags of both services accepted by the real
binaries at the pinned versions (node_exporter and Prometheus started with them answer on their port)."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "monitoring"
BIN = Path(sys.executable).parent
PLAY = """
- name: Render the monitoring role's files
  hosts: node1
  gather_facts: false
  vars_files: ["{role}/defaults/main.yml", "{role}/vars/main.yml"]
  tasks:
    - name: Render
      ansible.builtin.template:
        src: "{role}/templates/{{{{ item.src }}}}"
        dest: "{out}/{{{{ item.dest }}}}"
        mode: "0644"
      loop:
        - {{src: etc/prometheus/prometheus.yml.j2, dest: prometheus.yml}}
        - {{src: etc/default/prometheus.j2, dest: prometheus.defaults}}
        - {{src: etc/default/prometheus-node-exporter.j2, dest: node-exporter.defaults}}
        - {{src: textfile/scc_monitoring.prom.j2, dest: textfile/scc_monitoring.prom}}
    - name: Render the scrape targets
      ansible.builtin.copy:
        dest: "{out}/file_sd/{{{{ item.file }}}}"
        content: "{{{{ _monitoring_nodes | scc.nlp_training.monitoring_scrape_targets(hostvars, item.port,
                     gpu_only=item.gpu) | to_nice_yaml }}}}"
        mode: "0644"
      loop:
        - {{file: scc_nodes.yml, port: 9100, gpu: false}}
        - {{file: scc_dcgm.yml, port: 9400, gpu: true}}
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


SYSFS = ROOT / "tests" / "fixtures" / "rdma_sysfs" / "cx6_roce" / "sys"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The files of two deploys: the defaults (free ports, the recorded RDMA tree as sysfs), and with the DCGM job
    and an Alertmanager."""
    plain = {"monitoring_node_exporter_port": _free_port(), "monitoring_server_port": _free_port(),
             "monitoring_node_exporter_sysfs_path": str(SYSFS)}
    dcgm = {"monitoring_server_dcgm": True, "monitoring_server_alertmanagers": ["am.example:9093"]}
    return {"plain": _render(tmp_path_factory.mktemp("plain"), plain),
            "dcgm": _render(tmp_path_factory.mktemp("dcgm"), dcgm)}


def _render(tmp_path: Path, settings: dict) -> Path:
    out = tmp_path / "out"
    for sub in ("textfile", "file_sd", "rules", "data"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    (out / "rules" / "scc_rules.yml").write_text((ROLE / "files" / "scc_rules.yml").read_text())
    coll = tmp_path / "collections" / "ansible_collections" / "scc"
    coll.mkdir(parents=True, exist_ok=True)
    if not (coll / "nlp_training").exists():
        (coll / "nlp_training").symlink_to(ROOT)
    (tmp_path / "inventory.ini").write_text(
        f"[scc_cluster]\nnode1 ansible_connection=local ansible_host=10.0.0.11 gpu_count=8 "
        f"ansible_python_interpreter={sys.executable}\nnode2 ansible_host=10.0.0.12 gpu_count=0\n")
    (tmp_path / "play.yml").write_text(PLAY.format(role=ROLE, out=out))
    variables = {"_monitoring_server_rules_dir": str(out / "rules"), "_monitoring_server_file_sd_dir":
                 str(out / "file_sd"), "_monitoring_server_config": str(out / "prometheus.yml"),
                 "_monitoring_server_data_dir": str(out / "data"), "monitoring_textfile_dir": str(out / "textfile"),
                 **settings}
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    done = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                           str(tmp_path / "play.yml"), "-e", json.dumps(variables)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return out


def _args(defaults_file: Path) -> list[str]:
    """ARGS as systemd passes it: the EnvironmentFile value, split at whitespace by `$ARGS` in ExecStart."""
    line = next(x for x in defaults_file.read_text().splitlines() if x.startswith("ARGS="))
    return shlex.split(line[len("ARGS="):])[0].split()


def _listen_port(args: list[str]) -> str:
    return next(a for a in args if a.startswith("--web.listen-address=:")).rsplit(":", 1)[1]


def _check(prometheus_tool: Callable[[str], str], *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([prometheus_tool("promtool"), "check", *args], input=stdin, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.mark.parametrize("variant", ["plain", "dcgm"])
def test_prometheus_config_passes_promtool(rendered: dict[str, Path], prometheus_tool: Callable[[str], str],
                                           variant: str) -> None:
    out = rendered[variant]
    report = _check(prometheus_tool, "config", str(out / "prometheus.yml"))
    assert "SUCCESS: 1 rule files found" in report and "SUCCESS: 9 rules found" in report, report
    config = yaml.safe_load((out / "prometheus.yml").read_text())
    jobs = [job["job_name"] for job in config["scrape_configs"]]
    dcgm = variant == "dcgm"
    assert jobs == ["prometheus", "scc_node", *(["scc_dcgm"] if dcgm else [])]
    assert ("alerting" in config) == dcgm
    assert config["global"]["scrape_interval"] == "15s"
    port = _listen_port(_args(out / "node-exporter.defaults"))
    targets = yaml.safe_load((out / "file_sd" / "scc_nodes.yml").read_text())
    assert targets == [{"labels": {"instance": "node1"}, "targets": [f"10.0.0.11:{port}"]},
                       {"labels": {"instance": "node2"}, "targets": [f"10.0.0.12:{port}"]}]
    assert yaml.safe_load((out / "file_sd" / "scc_dcgm.yml").read_text()) == [
        {"labels": {"instance": "node1"}, "targets": ["10.0.0.11:9400"]}]


def test_the_textfile_metric_passes_promtool(rendered: dict[str, Path], prometheus_tool: Callable[[str], str]) -> None:
    out = rendered["plain"]
    text = (out / "textfile" / "scc_monitoring.prom").read_text()
    assert text.endswith(f'scc_monitoring_textfile_info{{directory="{out}/textfile"}} 1\n')
    assert _check(prometheus_tool, "metrics", stdin=text) == ""


def _serves(url: str, timeout: float = 30) -> bytes:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return bytes(answer.read())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_binaries_accept_the_rendered_flags(rendered: dict[str, Path],
                                                prometheus_tool: Callable[[str], str]) -> None:
    out = rendered["plain"]
    exporter_args = _args(out / "node-exporter.defaults")
    assert f"--collector.textfile.directory={out}/textfile" in exporter_args
    assert "--collector.infiniband" in exporter_args and f"--path.sysfs={SYSFS}" in exporter_args
    prom_args = _args(out / "prometheus.defaults")
    ne_port, prom_port = _listen_port(exporter_args), _listen_port(prom_args)
    procs = [subprocess.Popen([prometheus_tool("prometheus-node-exporter"), *exporter_args],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE),
             subprocess.Popen([prometheus_tool("prometheus"), *prom_args],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)]
    try:
        metrics = _serves(f"http://127.0.0.1:{ne_port}/metrics").decode()
        assert 'node_infiniband_state_id{device="mlx5_0",port="1"} 4' in metrics
        assert f'scc_monitoring_textfile_info{{directory="{out}/textfile"}} 1' in metrics
        assert _serves(f"http://127.0.0.1:{prom_port}/-/ready").startswith(b"Prometheus Server is Ready")
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
