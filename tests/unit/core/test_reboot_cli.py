"""`sccnlp reboot --batch`: a bad batch size is refused with the fix before any playbook runs."""

from __future__ import annotations

import pytest

from sccnlp import cli


@pytest.mark.parametrize("batch", ["0", "-1", "half", "0%", "101%", "1.5", "25 %", ""])
def test_a_bad_batch_is_refused_before_anything_runs(
        batch: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def no_playbook(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a playbook ran for a bad --batch")

    from sccnlp import runner

    monkeypatch.setattr(runner, "run_playbook", no_playbook)
    assert cli.main(["reboot", "-i", "inventory.yml", "--batch", batch]) == 2
    err = capsys.readouterr().err
    assert f"--batch {batch}: a batch is a count of nodes (1, 2, ...) or a percentage of the cluster (1% to 100%). " \
           "Fix: e.g. --batch 1 or --batch 25%" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("batch", ["1", "3", "25%", "100%"])
def test_a_good_batch_goes_to_the_playbook(batch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    class Result:
        ok, hosts, phases = True, {}, []

        @staticmethod
        def bad_hosts() -> list[str]:
            return []

    def fake_run(name: str, inventory: str, extravars: dict[str, str], **_kwargs: object) -> Result:
        seen.update(name=name, inventory=inventory, **extravars)
        return Result()

    from sccnlp import runner

    monkeypatch.setattr(runner, "run_playbook", fake_run)
    monkeypatch.setattr(runner, "print_summary", lambda *_args: None)
    assert cli.main(["reboot", "-i", "inv.yml", "--all", "--batch", batch]) == 0
    assert seen == {"name": "reboot", "inventory": "inv.yml", "node_reboot_batch": batch, "node_reboot_all": "true",
                    "node_reboot_force": "false"}


def test_nodes_that_did_not_finish_are_named_with_how_to_continue(capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared runner.run_and_report prints reboot's outcome line and its hint after the nodes left behind."""
    from sccnlp import runner

    hosts = {"n1": runner.HostSummary(ok=3, changed=2), "n2": runner.HostSummary(ok=1, failed=1, messages=["x: y"])}
    monkeypatch.setattr(runner, "run_playbook",
                        lambda *_a, **_k: runner.RunResult(status="failed", rc=2, hosts=hosts))
    assert cli.main(["reboot", "-i", "inv.yml", "--all"]) == 1
    out = capsys.readouterr().out
    assert "  n2               FAILED       ok=1 changed=0 failed=1 unreachable=0\n      x: y\n" in out
    assert "\nreboot.yml: FAILED in 0 s, 2 changes\n" in out
    assert "Nodes that did not finish: n2. The rollout stopped there; later batches were not rebooted. Fix what the " \
           "message names, then run the same command without --all to continue.\n" in out
