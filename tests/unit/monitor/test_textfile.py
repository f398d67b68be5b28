"""The textfile exports (sccnlp/node/textfile.py): the text each function produces, checked by `promtool check
metrics` (Prometheus' own linter of the exposition format and naming conventions), the atomic write, and the
`validation` command the validate role runs on each node."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sccnlp.node import textfile

FRAGMENT: dict[str, Any] = {
    "run": {"started": "2026-12-02T10:00:00Z", "finished": "2026-12-02T10:21:30.123456+00:00"},
    "nodes": {
        "node1": {"facts": {}, "curves": {}, "checks": [
            {"name": "gemm_tflops", "status": "fail", "measured": 700.1, "floor": 720.0, "unit": "TFLOP/s"},
            {"name": "gpu_count", "status": "pass", "measured": 8, "floor": 8, "ceiling": 8, "unit": "GPUs"},
            {"name": "xid_faults", "status": "pass", "measured": 0, "floor": None, "ceiling": 0, "unit": "events"},
            {"name": "ib_write_bw_loopback", "status": "skip", "measured": None, "floor": 78.0, "unit": "Gb/s"},
            {"name": "rdma_port_active", "status": "pass", "measured": 1, "unit": "ports"},
            {"name": "rdma_port_active", "status": "fail", "measured": 0, "unit": "ports"},
        ]},
        "node2": {"facts": {}, "curves": {}, "checks": []},
    },
    "cluster": {"checks": [{"name": "mpi_allnodes", "status": "pass", "measured": 2, "floor": 2, "unit": "nodes"}],
                "curves": {}},
}
FACTS = {
    "scc_gpu_driver": {"method": "package", "version": "535.261.03", "branch": "535"},
    "scc_cuda": {"method": "package", "version": "12.2", "toolkit": "12.2.140"},
    "scc_nccl": {"method": "pip", "version": "2.21.5"},
    "scc_cudnn": {"method": "pip", "version": "9.1.0"},
    "scc_python36": {"python_version": "3.11", "venv": "/opt/scc/venv", "freeze": ["torch==2.13.0+cpu"]},
    "scc_pytorch": {"method": "install", "version": "2.13.0+cpu"},
    "scc_aiacc": {"backend": "native", "version": "", "reason": "AIACC source not configured"},
    "scc_kernel": {"release": "6.1.0-28-amd64"},
    "scc_cluster": {"nodes": 3},
}


def _samples(text: str) -> dict[str, float]:
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line and not line.startswith("#")}


def _lint(prometheus_tool: Callable[[str], str], text: str) -> None:
    done = subprocess.run([prometheus_tool("promtool"), "check", "metrics"], input=text, capture_output=True,
                          text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout + done.stderr) == (0, ""), text


def test_gate_metrics_name_every_check_with_status_value_floor_and_ceiling() -> None:
    samples = _samples(textfile.render(textfile.gate_families(FRAGMENT, "node1", "/mnt/cpfs")))
    assert samples['scc_gate_status{check="gemm_tflops",scope="node"}'] == 0
    assert samples['scc_gate_status{check="gpu_count",scope="node"}'] == 1
    assert samples['scc_gate_status{check="ib_write_bw_loopback",scope="node"}'] == -1
    assert samples['scc_gate_status{check="mpi_allnodes",scope="cluster"}'] == 1
    assert samples['scc_gate_measured{check="gemm_tflops",scope="node",unit="TFLOP/s"}'] == 700.1
    assert samples['scc_gate_floor{check="gemm_tflops",scope="node",unit="TFLOP/s"}'] == 720
    assert samples['scc_gate_ceiling{check="xid_faults",scope="node",unit="events"}'] == 0
    assert samples['scc_gate_measured{check="xid_faults",scope="node",unit="events"}'] == 0
    # Not measured (skipped): no value, but the floor it would have been held to.
    assert not any(key.startswith('scc_gate_measured{check="ib_write_bw_loopback"') for key in samples)
    assert samples['scc_gate_floor{check="ib_write_bw_loopback",scope="node",unit="Gb/s"}'] == 78
    # A check named twice keeps its failed result: one sample per label set (the collector drops a file otherwise).
    assert samples['scc_gate_status{check="rdma_port_active",scope="node"}'] == 0
    assert samples["scc_gate_last_run_timestamp_seconds"] == pytest.approx(1796206890.123456)
    assert samples['scc_shared_storage_expected{mountpoint="/mnt/cpfs"}'] == 1


def test_gate_metrics_of_another_node_hold_no_cluster_checks_when_its_fragment_has_none() -> None:
    fragment = {**FRAGMENT, "cluster": {"checks": []}}
    text = textfile.render(textfile.gate_families(fragment, "node2"))
    assert "scope=\"cluster\"" not in text and "scc_shared_storage_expected" not in text


def test_a_fragment_without_the_node_is_refused() -> None:
    with pytest.raises(ValueError, match="the fragment has no results for node9 \\(it has node1, node2\\)"):
        textfile.gate_families(FRAGMENT, "node9")


def test_stack_info_lists_the_recorded_components() -> None:
    samples = _samples(textfile.render(textfile.stack_families(FACTS)))
    assert samples == {
        'scc_stack_info{component="gpu_driver",method="package",version="535.261.03"}': 1,
        'scc_stack_info{component="cuda",method="package",version="12.2"}': 1,
        'scc_stack_info{component="nccl",method="pip",version="2.21.5"}': 1,
        'scc_stack_info{component="cudnn",method="pip",version="9.1.0"}': 1,
        'scc_stack_info{component="python",method="",version="3.11"}': 1,
        'scc_stack_info{component="pytorch",method="install",version="2.13.0+cpu"}': 1,
        'scc_stack_info{component="aiacc",method="native",version=""}': 1,
    }


def test_training_heartbeat() -> None:
    text = textfile.render(textfile.training_families("bert-large-phase1", 120, 7.123, 1850.25, 1796206890.5,
                                                      1796206800.0, completed=False))
    samples = _samples(text)
    labels = '{run="bert-large-phase1"}'
    assert samples == {f"scc_training_step{labels}": 120, f"scc_training_heartbeat_timestamp_seconds{labels}":
                       1796206890.5, f"scc_training_completed{labels}": 0, f"scc_training_loss{labels}": 7.123,
                       f"scc_training_sequences_per_second{labels}": 1850.25,
                       f"scc_training_last_checkpoint_timestamp_seconds{labels}": 1796206800}
    first = _samples(textfile.render(textfile.training_families("r", 0, None, None, 5.0, None, completed=True)))
    assert first == {'scc_training_step{run="r"}': 0, 'scc_training_heartbeat_timestamp_seconds{run="r"}': 5,
                     'scc_training_completed{run="r"}': 1}


def test_label_values_are_escaped() -> None:
    family = textfile.Family("scc_test_info", "a \\ help\nline", samples=[({"path": 'a"b\\c\nd'}, 1)])
    assert textfile.render([family]) == ('# HELP scc_test_info a \\\\ help\\nline\n# TYPE scc_test_info gauge\n'
                                         'scc_test_info{path="a\\"b\\\\c\\nd"} 1\n')


def test_values() -> None:
    assert [textfile.format_value(v) for v in (3.0, -1, 0.5, float("nan"), float("inf"), 1e20)] == [
        "3", "-1", "0.5", "NaN", "+Inf", "1e+20"]


@pytest.mark.parametrize("name", ["gates", "stack", "training"])
def test_promtool_check_metrics_is_clean(prometheus_tool: Callable[[str], str], name: str) -> None:
    families = {"gates": lambda: textfile.gate_families(FRAGMENT, "node1", "/mnt/cpfs"),
                "stack": lambda: textfile.stack_families(FACTS),
                "training": lambda: textfile.training_families("run-1", 7, 2.5, 10.0, 1.0, 2.0, completed=False)}
    _lint(prometheus_tool, textfile.render(families[name]()))


def test_promtool_would_catch_a_bad_name(prometheus_tool: Callable[[str], str]) -> None:
    """The lint is not a formality: a counter without _total (a naming-convention breach) is reported."""
    bad = textfile.render([textfile.Family("scc_bad", "x", kind="counter", samples=[({}, 1)])])
    done = subprocess.run([prometheus_tool("promtool"), "check", "metrics"], input=bad, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode != 0 and "_total" in done.stdout + done.stderr


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    (tmp_path / "scc_gates.prom").write_text("old\n")
    path = textfile.write_atomic(str(tmp_path), "scc_gates.prom", "new\n")
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scc_gates.prom"]


def test_validation_command_writes_both_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fragment, facts, out = tmp_path / "fragment.json", tmp_path / "facts.d", tmp_path / "textfile"
    fragment.write_text(json.dumps(FRAGMENT))
    facts.mkdir()
    out.mkdir()
    for name, data in FACTS.items():
        (facts / f"{name}.fact").write_text(json.dumps(data))
    (facts / "scc_broken.fact").write_text("{not json")
    rc = textfile.main(["validation", "--fragment", str(fragment), "--host", "node1", "--facts-dir", str(facts),
                        "--shared-dir", "/mnt/cpfs", "--out", str(out)])
    assert rc == 0
    assert sorted(p.name for p in out.iterdir()) == ["scc_gates.prom", "scc_stack.prom"]
    assert 'scc_gate_status{check="gemm_tflops",scope="node"} 0' in (out / "scc_gates.prom").read_text()
    assert 'component="cuda"' in (out / "scc_stack.prom").read_text()
    assert f"exported {out}/scc_gates.prom" in capsys.readouterr().out


def test_validation_command_without_the_directory_exports_nothing_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fragment = tmp_path / "fragment.json"
    fragment.write_text(json.dumps(FRAGMENT))
    rc = textfile.main(["validation", "--fragment", str(fragment), "--host", "node1", "--out", str(tmp_path / "no")])
    assert rc == 0 and not (tmp_path / "no").exists()
    assert f"not exported: {tmp_path}/no does not exist on this node" in capsys.readouterr().out


def test_validation_command_with_a_bad_fragment_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fragment = tmp_path / "fragment.json"
    fragment.write_text("{")
    rc = textfile.main(["validation", "--fragment", str(fragment), "--host", "node1", "--out", str(tmp_path)])
    assert rc == 1 and f"node1: cannot export {fragment}" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.prom")) and not [p for p in os.listdir(tmp_path) if p.startswith(".")]
