"""Elapsed time per phase (sccnlp/phases.py): the plays of the collection's own site.yml by phase, and the seconds
of each phase from ansible-runner's events (their `created` times, as recorded in a run's job_events)."""

from __future__ import annotations

from sccnlp.paths import playbook
from sccnlp.phases import phase_line, phase_times, play_phases

KNOBS = "Resolve collection-wide settings"
INVENTORY_CHECK = "Check the inventory before anything changes"   # playbooks/inventory_check.yml


def _start(play: str, at: str) -> dict:
    return {"event": "playbook_on_play_start", "created": f"2026-12-06T21:{at}.000000+00:00",
            "event_data": {"play": play}}


def test_site_yml_is_a_chain_of_phases():
    phases = play_phases(playbook("site"))
    order = list(dict.fromkeys(phase for phase, _play in phases))
    assert order == ["preflight", "sources", "cluster", "storage", "gpu_stack", "runtime", "monitoring", "validate",
                     "monitoring_verify"]
    # every phase starts with the collection-wide settings (a phase that changes the nodes with the inventory check
    # before them), which count to it
    for phase in order:
        assert next(play for p, play in phases if p == phase) in (KNOBS, INVENTORY_CHECK), phase
    assert ("cluster", "Wire the cluster and install Open MPI") in phases


def test_a_phase_run_alone_is_one_phase():
    assert {phase for phase, _play in play_phases(playbook("cluster"))} == {"cluster"}
    # gpu_stack imports the rolling reboot: its plays are the gpu_stack phase
    assert {phase for phase, _play in play_phases(playbook("gpu_stack"))} == {"gpu_stack"}


def test_seconds_per_phase_from_the_events():
    phases = [("preflight", KNOBS), ("preflight", "Check the plan"), ("cluster", KNOBS), ("cluster", "Wire")]
    events = [{"event": "playbook_on_start", "created": "2026-12-06T21:48:40.000000+00:00"},
              _start(KNOBS, "48:40"), _start("Check the plan", "48:41"), _start(KNOBS, "48:46"),
              _start("Wire", "48:47"), {"event": "runner_on_ok", "created": "2026-12-06T21:49:30.000000+00:00"},
              {"event": "playbook_on_stats", "created": "2026-12-06T21:49:32.000000+00:00"}]
    times = phase_times(events, phases)
    assert times == [("preflight", 6.0), ("cluster", 46.0)]
    assert phase_line(times) == "Time per phase: preflight 6 s, cluster 46 s (total 52 s)"


def test_serial_batches_and_plays_that_did_not_run():
    phases = [("a", "one"), ("b", "skipped"), ("b", "rolled"), ("c", "last")]
    events = [_start("one", "00:00"), _start("rolled", "00:10"), _start("rolled", "00:20"), _start("last", "00:30"),
              {"event": "playbook_on_stats", "created": "2026-12-06T21:00:35.000000+00:00"}]
    assert phase_times(events, phases) == [("a", 10.0), ("b", 20.0), ("c", 5.0)]


def test_a_play_not_in_the_book_counts_under_its_name():
    assert phase_times([_start("other", "00:00"), _start("other2", "00:03")], []) == [("other", 3.0), ("other2", 0.0)]
    assert phase_line([]) == ""
