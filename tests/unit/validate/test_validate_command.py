"""`sccnlp validate`: extra vars, --from-fragments, exit status."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from sccnlp.commands import validate as cmd
from sccnlp.errors import SccError
from sccnlp.node.gates.evaluate import build_fragment

RUN = {"started": "2026-12-02T10:00:00Z", "cluster": "scc_cluster", "inventory": "inv.yml"}


def _write(report_dir, host, value, floor):
    frag = build_fragment({"host": host, "run": RUN, "floors": {"mpi_nodes_answering": floor},
                           "measurements": [{"name": "mpi_nodes_answering", "value": value, "unit": "nodes"}]})
    (report_dir / "fragments").mkdir(parents=True, exist_ok=True)
    (report_dir / "fragments" / f"{host}.json").write_text(json.dumps(frag))


def _args(report_dir, **kw):
    base = {"inventory": None, "limit": None, "report_dir": str(report_dir), "extra_var": [],
            "from_fragments": True, "verbose": False}
    base.update(kw)
    return argparse.Namespace(**base)


def test_from_fragments_pass_and_fail(tmp_path):
    _write(tmp_path, "node-1", 3, 3)
    out = io.StringIO()
    assert cmd.run(_args(tmp_path), stream=out) == 0
    assert (tmp_path / "report.json").exists() and (tmp_path / "report.html").exists()
    _write(tmp_path, "node-2", 2, 3)
    out = io.StringIO()
    assert cmd.run(_args(tmp_path), stream=out) == 1
    assert "node-2: mpi_nodes_answering 2 < floor 3" in out.getvalue()


def test_no_fragments_is_one_clear_error(tmp_path):
    with pytest.raises(SccError, match="no result fragments"):
        cmd.run(_args(tmp_path))


def test_inventory_required_without_from_fragments(tmp_path):
    with pytest.raises(SccError, match="needs -i INVENTORY"):
        cmd.run(_args(tmp_path, from_fragments=False))


def _fake_run(hosts, write):
    from sccnlp.runner import RunResult

    def run_playbook(name, inventory, extravars, **_kw):
        for host in write:
            _write(Path(extravars["validate_report_dir"]), host, 3, 3)
        return RunResult(status="failed" if any(h.failed for h in hosts.values()) else "successful",
                         rc=2 if any(h.failed for h in hosts.values()) else 0, hosts=hosts)
    return run_playbook


def test_controller_play_is_not_a_node_without_results(tmp_path, monkeypatch):
    from sccnlp import runner

    hosts = {"node-1": runner.HostSummary(ok=40), "localhost": runner.HostSummary(skipped=1)}
    monkeypatch.setattr(runner, "run_playbook", _fake_run(hosts, ["node-1"]))
    monkeypatch.setattr(runner, "print_summary", lambda *_a, **_k: None)
    out = io.StringIO()
    assert cmd.run(_args(tmp_path, inventory="inv.yml", from_fragments=False), stream=out) == 0, out.getvalue()
    assert "No results from" not in out.getvalue()


def test_node_that_failed_before_its_fragment_is_named(tmp_path, monkeypatch):
    from sccnlp import runner

    hosts = {"node-1": runner.HostSummary(ok=40), "node-2": runner.HostSummary(ok=3, failed=1),
             "localhost": runner.HostSummary(skipped=1)}
    monkeypatch.setattr(runner, "run_playbook", _fake_run(hosts, ["node-1"]))
    monkeypatch.setattr(runner, "print_summary", lambda *_a, **_k: None)
    out = io.StringIO()
    assert cmd.run(_args(tmp_path, inventory="inv.yml", from_fragments=False), stream=out) == 1
    assert "No results from: node-2 (no results; failed at: " in out.getvalue()
    assert "Overall: FAIL (2 nodes, 1 failed: node-2 (no results; failed at: " in out.getvalue()


def test_no_node_sent_results_is_named_not_an_error(tmp_path, monkeypatch):
    from sccnlp import runner

    hosts = {"node-1": runner.HostSummary(ok=5, last_task="Train: skipped")}
    monkeypatch.setattr(runner, "run_playbook", _fake_run(hosts, []))
    monkeypatch.setattr(runner, "print_summary", lambda *_a, **_k: None)
    out = io.StringIO()
    assert cmd.run(_args(tmp_path, inventory="inv.yml", from_fragments=False), stream=out) == 1
    assert "Overall: FAIL (1 nodes, 1 failed: node-1 (no results; last task: Train: skipped)" in out.getvalue()
