"""A node that already runs its own node_exporter (e.g. prometheus.prometheus.node_exporter): with
`monitoring_node_exporter_install: false` and `scc_monitoring_textfile_dir` set to that exporter's textfile directory,
playbooks/monitoring.yml installs nothing, writes the collection's metric into that directory, and its verify step
reads the running exporter's /metrics to prove the exporter serves it. The node is this machine (connection local);
the exporter is Debian's node_exporter binary, started here the way the user's role would start it. A second run
and a check-mode run change nothing; an exporter that reads another directory is refused with the fix."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
Start = Callable[[Path], int]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture()
def exporter(tmp_path: Path, prometheus_tool: Callable[[str], str]) -> Iterator[Start]:
    """start(textfile_dir) -> the port of a node_exporter reading that directory (stopped after the test)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(textfile_dir: Path) -> int:
        port = _free_port()
        procs.append(subprocess.Popen(
            [prometheus_tool("prometheus-node-exporter"), f"--web.listen-address=127.0.0.1:{port}",
             "--collector.disable-defaults", "--collector.textfile", f"--collector.textfile.directory={textfile_dir}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return port
            time.sleep(0.1)
        raise AssertionError(f"node_exporter did not listen on {port}")

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=30)


def _run(tmp_path: Path, settings: dict, *extra: str) -> subprocess.CompletedProcess[str]:
    coll = tmp_path / "collections" / "ansible_collections" / "scc"
    if not coll.exists():
        coll.mkdir(parents=True)
        (coll / "nlp_training").symlink_to(ROOT)
    (tmp_path / "inventory.ini").write_text(
        f"[scc_cluster]\nnode-1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                           str(ROOT / "playbooks" / "monitoring.yml"), "-e", json.dumps(settings), *extra],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)


def _settings(tmp_path: Path, textfile: Path, port: int) -> dict:
    # The documented settings of a node with its own exporter, plus where this test keeps the local fact.
    return {"monitoring_node_exporter_install": False, "scc_monitoring_textfile_dir": str(textfile),
            "monitoring_node_exporter_port": port, "monitoring_server_enabled": False,
            "_monitoring_fact_path": str(tmp_path / "facts.d" / "scc_monitoring.fact")}


def _outcome(proc: subprocess.CompletedProcess[str], task: str) -> str:
    """The first result word (ok, changed, skipping, fatal) after the task's header."""
    after = proc.stdout.split(f"monitoring : {task}", 1)[1]
    return next(line.split(":", 1)[0] for line in after.splitlines()[1:] if line.strip())


def _recap(proc: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in proc.stdout.splitlines() if line.startswith("node-1 "))


def test_the_users_exporter_is_kept_and_serves_the_collections_metric(tmp_path: Path, exporter: Start) -> None:
    textfile = tmp_path / "node_exporter"  # prometheus.prometheus.node_exporter's /var/lib/node_exporter
    textfile.mkdir()
    port = exporter(textfile)
    settings = _settings(tmp_path, textfile, port)
    flags = Path("/etc/default/prometheus-node-exporter")
    flags_before = flags.stat().st_mtime_ns if flags.exists() else None
    first = _run(tmp_path, settings, "-v")
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    # Nothing of the package path ran: no package query, no install, the service and its flags left alone.
    probe = first.stdout.split("monitoring : Read the packages, node_exporter's service and what it serves", 1)[1]
    probe = probe.split("TASK [", 1)[0]
    assert "metrics:" in probe and "dpkg:" not in probe and "active:" not in probe, probe[:3000]
    for task in ("Install node_exporter", "Start node_exporter now and at boot"):
        assert _outcome(first, task) == "skipping", task
    assert (flags.stat().st_mtime_ns if flags.exists() else None) == flags_before
    assert str(flags) not in first.stdout
    assert (textfile / "scc_monitoring.prom").read_text().endswith(
        f'scc_monitoring_textfile_info{{directory="{textfile}"}} 1\n')
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        served = b"".join(iter(lambda: sock.recv(65536), b"")).decode()
    assert f'scc_monitoring_textfile_info{{directory="{textfile}"}} 1' in served
    fact = json.loads((tmp_path / "facts.d" / "scc_monitoring.fact").read_text())
    assert fact == {"node_exporter": "external", "package": "", "port": port, "textfile_dir": str(textfile)}

    again = _run(tmp_path, settings)
    assert again.returncode == 0 and "changed=0" in _recap(again), again.stdout[-3000:]
    check = _run(tmp_path, settings, "--check")
    assert check.returncode == 0 and "changed=0" in _recap(check), check.stdout[-3000:]


def test_an_exporter_reading_another_directory_is_refused(tmp_path: Path, exporter: Start) -> None:
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    theirs.mkdir()
    port = exporter(theirs)
    done = _run(tmp_path, _settings(tmp_path, ours, port))
    assert done.returncode != 0
    assert (f"node-1: node_exporter on port {port} does not read {ours} (it reads no file of the collection). "
            f"Fix: start it with --collector.textfile.directory={ours}, or set scc_monitoring_textfile_dir") \
        in done.stdout, done.stdout[-3000:]


def test_bad_settings_are_refused_before_anything_changes(tmp_path: Path) -> None:
    textfile = tmp_path / "textfile"
    settings = {**_settings(tmp_path, textfile, 70000), "monitoring_node_exporter_filesystem_exclude": "^/(mnt)($|/)",
                "scc_shared_dir": "/mnt/cpfs"}
    done = _run(tmp_path, settings)
    assert done.returncode != 0
    assert "monitoring on node-1: monitoring_node_exporter_port is 70000: not a TCP port" in done.stdout
    assert ("monitoring on node-1: monitoring_node_exporter_filesystem_exclude is '^/(mnt)($|/)': it matches the "
            "shared storage mount point /mnt/cpfs") in done.stdout, done.stdout[-3000:]
    assert not textfile.exists()
