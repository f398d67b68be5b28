"""`sccnlp train`: options -> role variables, and progress lines from the playbook's events."""

from __future__ import annotations

import argparse
import io

import pytest

from sccnlp.commands import train as cmd
from sccnlp.errors import SccError


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cmd.register(parser.add_subparsers())
    return parser.parse_args(["train", "-i", "inv.yml", *argv])


def test_options_become_role_variables() -> None:
    got = cmd.extravars(_args("--model", "tiny", "--steps", "40", "--corpus", "/mnt/cpfs/c.txt", "--data-only",
                              "-e", "bert_dupe_factor=2", "-e", "bert_prepare_phases=[1]", "-e", "bert_lr=1e-3"))
    assert got == {"bert_model": "tiny", "bert_steps": 40, "bert_corpus_source": "path",
                   "bert_corpus_path": "/mnt/cpfs/c.txt", "bert_launch": False, "bert_dupe_factor": "2",
                   "bert_prepare_phases": "[1]", "bert_lr": "1e-3"}  # -e KEY=VALUE: strings, as ansible-playbook
    got = cmd.extravars(_args("--steps", "40", "-e", '{"bert_prepare_phases": [1], "bert_lr": 1e-3}',
                              "-e", "bert_steps=50"))
    assert got == {"bert_steps": "50", "bert_prepare_phases": [1], "bert_lr": 1e-3}  # -e wins over an option
    assert cmd.extravars(_args("--framework", "tensorflow")) == {"bert_framework": "tensorflow"}


def test_url_corpus_needs_its_checksum() -> None:
    with pytest.raises(SccError, match="--corpus-sha256"):
        cmd.extravars(_args("--corpus", "https://example.invalid/c.txt"))
    got = cmd.extravars(_args("--corpus", "https://example.invalid/c.txt", "--corpus-sha256", "a" * 64))
    assert got["bert_corpus_source"] == "url" and got["bert_corpus_sha256"] == "a" * 64


def test_bad_extra_var_is_one_clear_error() -> None:
    with pytest.raises(SccError, match="KEY=VALUE"):
        cmd.extravars(_args("-e", "bert_steps"))


def _follow(kind: str, stdout: str) -> dict:
    return {"event": kind, "event_data": {"task": cmd.FOLLOW_TASK, "host": "n1", "res": {"stdout": stdout}}}


def test_progress_lines_are_streamed_once_in_step_order() -> None:
    out = io.StringIO()
    printer = cmd.ProgressPrinter(out)
    printer({"event": "runner_on_ok", "event_data": {"task": cmd.WHERE_TASK, "host": "n1", "res": {"msg": {
        "bert_run": {"run_dir": "/mnt/cpfs/bert/runs/r", "log": "/mnt/cpfs/bert/runs/r/logs/train-1.log",
                     "ranks": 3, "node": "n1"}}}}})
    first = ("launch: 2026-01-01T00:00:00Z ranks=3\n"
             "[1,0]<stdout>:rank=0 world=3 data_range=[0,100)\n"
             "[1,1]<stdout>:rank=1 world=3 data_range=[100,200)\n"
             "[1,0]<stdout>:step=10 loss=9.1000 mlm=8.4 nsp=0.69 lr=1.00e-04 seq/s=50.0 seq/s/gpu=16.7 mfu=n/a\n")
    printer(_follow("runner_retry", first))
    printer(_follow("runner_retry", first + "[1,0]<stdout>:step=20 loss=8.2000 mlm=7.5 nsp=0.69 seq/s=51.0\n"))
    printer(_follow("runner_on_ok", "[1,0]<stdout>:step=20 loss=8.2000 mlm=7.5 nsp=0.69 seq/s=51.0\n"
                                    "[1,0]<stdout>:done: step=20 skipped=0\nBERT_RUN_EXIT=0\n"))
    lines = out.getvalue().splitlines()
    assert lines[0] == "   training: 3 ranks from n1, log /mnt/cpfs/bert/runs/r/logs/train-1.log"
    assert [line.strip() for line in lines[1:]] == [
        "launch: 2026-01-01T00:00:00Z ranks=3",
        "rank=0 world=3 data_range=[0,100)",
        "rank=1 world=3 data_range=[100,200)",
        "step=10 loss=9.1000 mlm=8.4 nsp=0.69 lr=1.00e-04 seq/s=50.0 seq/s/gpu=16.7 mfu=n/a",
        "step=20 loss=8.2000 mlm=7.5 nsp=0.69 seq/s=51.0",
        "done: step=20 skipped=0",
    ]
    assert printer.where["ranks"] == 3


def test_missing_inventory_is_one_clear_error(tmp_path: pytest.TempPathFactory) -> None:
    with pytest.raises(SccError, match="does not exist"):
        cmd.run(argparse.Namespace(
            inventory=str(tmp_path / "nope.yml"), model=None, phase=None, steps=None, batch_size=None,
            accum_steps=None, lr=None, precision=None, resume=None, run_name=None, corpus=None, corpus_sha256=None,
            vocab=None, vocab_size=None, data_only=False, extra_var=[], limit=None, check=False, verbose=False))


def test_done_names_the_shared_copy_of_the_node_local_log(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """The role follows the first node's own log (a full shared storage cannot hide the outcome); once the run ended
    `BERT done.` names the copy on the shared storage."""
    from sccnlp import runner

    def fake(_inventory, _variables, _limit, _check, printer):
        printer({"event": "runner_on_ok", "event_data": {"task": cmd.WHERE_TASK, "host": "n1", "res": {"msg": {
            "bert_run": {"run_dir": "/mnt/cpfs/bert/runs/r", "log": "/var/lib/scc/bert/r/train-1.log",
                         "log_when_done": "/mnt/cpfs/bert/runs/r/logs/train-1.log", "ranks": 3, "node": "n1"}}}}})
        return runner.RunResult(status="successful", rc=0, hosts={"n1": runner.HostSummary(ok=3)})
    monkeypatch.setattr(cmd, "_run_bert", fake)
    monkeypatch.setattr(cmd, "extravars", lambda _args: {})
    assert cmd.run(argparse.Namespace(inventory="inv.yml", limit=None, check=False, verbose=False)) == 0
    out = capsys.readouterr().out
    assert "training: 3 ranks from n1, log /var/lib/scc/bert/r/train-1.log" in out
    assert "  log          /mnt/cpfs/bert/runs/r/logs/train-1.log" in out


def test_rank_hosts_follow_the_hostfile() -> None:
    from plugins.plugin_utils.bert_launch import rank_hosts

    assert rank_hosts(["n1", "n2", "n3"], [2, "1", 0]) == ["n1", "n1", "n2"]
    assert rank_hosts([], []) == []
