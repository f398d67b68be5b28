"""`sccnlp reboot --batch`: a bad batch size is refused with the fix before any playbook runs."""

from __future__ import annotations

import pytest

from sccnlp import cli


@pytest.mark.parametrize("batch", ["0", "-1", "half", "0%", "101%", "1.5", "25 %", ""])
def test_a_bad_batch_is_refused_before_anything_runs(
        batch: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def no_playbook(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a playbook ran for a bad --batch")

    from sccnlp.commands import reboot

    monkeypatch.setattr(reboot, "run_playbook", no_playbook)
    assert cli.main(["reboot", "-i", "inventory.yml", "--batch", batch]) == 2
    err = capsys.readouterr().err
    assert f"--batch {batch}: a batch is a count of nodes (1, 2, ...) or a percentage of the cluster (1% to 100%). " \
           "Fix: e.g. --batch 1 or --batch 25%" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("batch", ["1", "3", "25%", "100%"])
def test_a_good_batch_goes_to_the_playbook(batch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    class Result:
        ok, hosts = True, {}

        @staticmethod
        def bad_hosts() -> list[str]:
            return []

    def fake_run(name: str, inventory: str, extravars: dict[str, str], **_kwargs: object) -> Result:
        seen.update(name=name, inventory=inventory, **extravars)
        return Result()

    from sccnlp.commands import reboot

    monkeypatch.setattr(reboot, "run_playbook", fake_run)
    monkeypatch.setattr(reboot, "print_summary", lambda _result: None)
    assert cli.main(["reboot", "-i", "inv.yml", "--all", "--batch", batch]) == 0
    assert seen == {"name": "reboot", "inventory": "inv.yml", "node_reboot_batch": batch, "node_reboot_all": "true",
                    "node_reboot_force": "false"}
