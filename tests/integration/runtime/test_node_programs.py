"""The shared _node_programs role against this machine: the sccnlp-node wheel built on the controller, copied,
sha256-verified and installed into a venv (bert's way) or a --target folder (validate's way); a second run and a
check-mode run change nothing; changed sources are re-delivered."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sccnlp.node.filehash import sha256_file


def _changed(output: str) -> int:
    recap = re.search(r"node-1\s*:\s*ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", output)
    assert recap, output[-3000:]
    return int(recap.group(1))


@pytest.mark.parametrize("into", ["venv", "target"])
def test_delivery_is_verified_and_idempotent(role_play: Any, tmp_path: Path, into: str) -> None:
    venv = tmp_path / "nodevenv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    settings = {"_node_programs_python": str(venv / "bin" / "python"),
                "_node_programs_target": str(tmp_path / "pylib") if into == "target" else "",
                "_node_programs_dir": str(tmp_path / "wheels"),
                "_node_programs_build_dir": str(tmp_path / "build")}
    first = role_play.run("_node_programs", settings, tasks_from="main", check=False)
    assert first.rc == 0, first.output[-3000:]
    assert _changed(first.output) >= 3, first.output[-3000:]  # directory, wheel, install, record
    built = next((tmp_path / "build").glob("sccnlp_node-*.whl"))
    delivered = tmp_path / "wheels" / built.name
    assert sha256_file(delivered) == sha256_file(built)
    env = {"PYTHONPATH": str(tmp_path / "pylib")} if into == "target" else {}
    probe = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import sccnlp.node.gates.evaluate as m, sccnlp; print(m.__file__); "
                            "import importlib.util as u; print(u.find_spec('sccnlp.cli'))"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout.split("\n")
    assert probe[0].startswith(str(tmp_path)), probe
    assert probe[1] == "None", "controller code was delivered to the node"
    again = role_play.run("_node_programs", settings, tasks_from="main", check=False)
    assert again.rc == 0 and _changed(again.output) == 0, again.output[-3000:]
    check = role_play.run("_node_programs", settings, tasks_from="main", check=True)
    assert check.rc == 0 and _changed(check.output) == 0, check.output[-3000:]
    # A wheel changed on the node is replaced and re-installed (its sha256 no longer matches the record).
    delivered.write_bytes(b"not a wheel")
    repaired = role_play.run("_node_programs", settings, tasks_from="main", check=False)
    assert repaired.rc == 0 and _changed(repaired.output) >= 2, repaired.output[-3000:]
    assert sha256_file(delivered) == sha256_file(built)
