"""The bert role's storage check (tasks/storage.yml) through a real ansible-playbook run on localhost: the node
measures the run directory's free space (the directory may not exist yet), the filter refuses a launch below what
the next checkpoints need, naming node, path, setting and fix; enough room passes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest


def run(bert_tasks: Any, tmp_path: Path, **settings: object) -> tuple[int, list[str]]:
    extra = {"bert_venv": str(Path(sys.executable).parent.parent), "bert_runs_root": str(tmp_path / "runs" / "new"),
             "bert_model": "tiny", **settings}
    got, msgs = bert_tasks("storage", extra)
    return got.returncode, msgs


def test_enough_room_passes(bert_tasks: Any, tmp_path: Path) -> None:
    assert run(bert_tasks, tmp_path, bert_min_free_gib=0.001) == (0, [])


def test_too_little_room_is_refused_before_launch(bert_tasks: Any, tmp_path: Path) -> None:
    rc, msgs = run(bert_tasks, tmp_path, bert_min_free_gib=10 ** 7)
    assert rc == 2
    [msg] = msgs
    assert msg.startswith(f"localhost: {tmp_path}/runs/new/bert-tiny-phase1 has ")
    assert "below the 10000000.00 GiB the next checkpoints need (bert_min_free_gib 1e+07)" in msg
    assert "Fix: free space on that storage" in msg


@pytest.mark.parametrize("model", ["tiny", "large"])
def test_automatic_threshold_names_the_model(bert_tasks: Any, tmp_path: Path, model: str) -> None:
    rc, msgs = run(bert_tasks, tmp_path, bert_model=model)
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize / 2 ** 30
    need = 1.0 if model == "tiny" else 7.0
    if free > need + 1:
        assert (rc, msgs) == (0, [])
    elif free < need - 1:
        assert rc == 2 and f"2 checkpoints of bert-{model}" in msgs[0]
