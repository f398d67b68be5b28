"""The bert role's preflight refuses fault-handling and framework settings that cannot work, with the setting and
the fix, through a real ansible-playbook run of `tasks/preflight.yml` on localhost (settings only, nothing
changes)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.parametrize(("setting", "message"), [
    ({"bert_client_lease_timeout": 20, "bert_poll_interval": 15},
     "bert_client_lease_timeout 20 is below 3 x bert_poll_interval 15: a slow poll would stop the run; raise it or "
     "set 0"),
    ({"bert_heartbeat_timeout": 3}, "bert_heartbeat_timeout is 3: set 0 (no watchdog) or 10 s or more"),
    ({"bert_collective_timeout": 1}, "bert_collective_timeout is 1: set 10 s or more"),
    ({"bert_ckpt_minutes": -1}, "bert_ckpt_minutes is -1: set 0 (off) or more"),
    ({"bert_min_free_gib": -1}, "bert_min_free_gib is -1: set 0 (automatic) or the GiB a launch needs free"),
    ({"bert_framework": "tensorflow", "bert_comm_backend": "torch"},
     "bert_comm_backend torch is not a backend of bert_framework tensorflow (it takes auto, strategy, aiacc, "
     "horovod): set one of them; auto follows what the aiacc role installed"),
])
def test_bad_fault_settings_are_refused(bert_tasks: Any, setting: dict, message: str) -> None:
    got, msgs = bert_tasks("preflight", setting)
    assert got.returncode == 2, got.stdout[-2000:] + got.stderr[-2000:]
    assert msgs == [f"localhost: {message}"]


def test_good_defaults_pass(bert_tasks: Any) -> None:
    got, msgs = bert_tasks("preflight", {})
    assert got.returncode == 0 and msgs == [], got.stdout[-2000:]
