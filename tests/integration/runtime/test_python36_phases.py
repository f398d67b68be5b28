"""Idempotence across phases: the BERT step installs the sccnlp wheel into the training venv after the runtime phase
recorded it. A run of the python36 role after that (the next `sccnlp deploy`) must change nothing: the recorded
package list is the runtime's, not the later phases' (python36_freeze_exclude)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def _changed(output: str) -> int:
    recap = re.search(r"^node-1\s+:.*\bchanged=(\d+)", output, re.M)
    assert recap, output[-3000:]
    return int(recap.group(1))


def test_a_run_after_the_bert_step_installed_sccnlp_changes_nothing(role_play: Any, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    settings = {"python36_interpreter": sys.executable, "python36_requirements": [],
                "python36_version": f"{sys.version_info[0]}.{sys.version_info[1]}",
                "python36_pip_conf_path": str(tmp_path / "etc" / "pip.conf")}
    first = role_play.run("python36", settings, tasks_from="main", check=False)
    assert first.rc == 0, first.output[-3000:]
    fact_file = tmp_path / "facts.d" / "scc_python36.fact"
    recorded = fact_file.read_text()
    # What roles/bert/tasks/install.yml does: build the wheel from this tree and pip-install it without dependencies.
    wheel_dir = tmp_path / "wheel"
    built = subprocess.run([sys.executable, str(ROOT / "roles/bert/files/sccnlp_wheel.py"), str(ROOT), str(wheel_dir)],
                           check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--no-deps", "--no-index",
                    "--disable-pip-version-check", built], check=True, capture_output=True)
    freeze = subprocess.run([str(venv / "bin/python"), "-m", "pip", "freeze"], check=True, capture_output=True,
                            text=True).stdout
    assert re.search(r"^sccnlp( @ |==)", freeze, re.M), freeze  # the venv really holds the wheel now
    again = role_play.run("python36", settings, tasks_from="main", check=False)
    assert again.rc == 0, again.output[-3000:]
    assert _changed(again.output) == 0, again.output[-3000:]
    assert fact_file.read_text() == recorded
    assert not any(line.startswith("sccnlp") for line in json.loads(recorded)["freeze"])
