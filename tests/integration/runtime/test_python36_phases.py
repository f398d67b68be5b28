"""Idempotence across phases: the BERT step installs the sccnlp wheel into the training venv after the runtime phase
recorded it. A run of the python36 role after that (the next `sccnlp deploy`) must change nothing: the recorded
package list is the runtime's, not the later phases' (python36_freeze_exclude)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any


def _changed(output: str) -> int:
    recap = re.search(r"^node-1\s+:.*\bchanged=(\d+)", output, re.M)
    assert recap, output[-3000:]
    return int(recap.group(1))


def _sccnlp_wheel(target: Path) -> Path:
    """A wheel named sccnlp (one module), built with the standard library: what pip records for it is the same
    `sccnlp==<version>` line as for the BERT step's wheel."""
    target.mkdir(parents=True)
    wheel = target / "sccnlp-0.0.1-py3-none-any.whl"
    files = {"sccnlp/__init__.py": "__version__ = '0.0.1'\n",
             "sccnlp-0.0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: sccnlp\nVersion: 0.0.1\n",
             "sccnlp-0.0.1.dist-info/WHEEL":
                 "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{name},sha256={_digest(text)},{len(text.encode())}" for name, text in files.items()]
    files["sccnlp-0.0.1.dist-info/RECORD"] = "\n".join([*record, "sccnlp-0.0.1.dist-info/RECORD,,"]) + "\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def _digest(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


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
    # What roles/bert/tasks/install.yml does: pip-install an sccnlp wheel from a file, without dependencies.
    built = _sccnlp_wheel(tmp_path / "wheel")
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--no-deps", "--no-index",
                    "--disable-pip-version-check", str(built)], check=True, capture_output=True)
    freeze = subprocess.run([str(venv / "bin/python"), "-m", "pip", "freeze"], check=True, capture_output=True,
                            text=True).stdout
    assert re.search(r"^sccnlp( @ |==)", freeze, re.M), freeze  # the venv really holds the wheel now
    again = role_play.run("python36", settings, tasks_from="main", check=False)
    assert again.rc == 0, again.output[-3000:]
    assert _changed(again.output) == 0, again.output[-3000:]
    assert fact_file.read_text() == recorded
    assert not any(line.startswith("sccnlp") for line in json.loads(recorded)["freeze"])
