"""A bad driver setting is refused by the gpu_driver preflight with one message that names that setting alone (its
value and the fix), from a real ansible-playbook run on localhost (the preflight changes nothing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sccnlp.runner import _collections_path

PLAYBOOK = """
- name: The gpu_driver preflight alone
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Check the driver settings
      ansible.builtin.include_role:
        name: scc.nlp_training.gpu_driver
        tasks_from: preflight
"""
SETTINGS = ("gpu_driver_method", "gpu_driver_branch", "gpu_driver_version", "gpu_driver_flavour",
            "gpu_driver_persistence", "gpu_driver_runfile_url")


@pytest.mark.parametrize(("extra", "named", "says"), [
    ({"gpu_driver_version": "581.10.2"}, "gpu_driver_version",
     "gpu_driver_version 581.10.2 is not on gpu_driver_branch 580 (set gpu_driver_branch 581 or a 580.x version)"),
    ({"gpu_driver_method": "package", "gpu_driver_version": "latest"}, "gpu_driver_version",
     "gpu_driver_version is 'latest', not a driver version (e.g. 580.95.05); fix it"),
    ({"gpu_driver_method": "package"}, "gpu_driver_version",
     "gpu_driver_version is empty but gpu_driver_method package installs: set the exact version (e.g. 580.95.05)"),
    ({"gpu_driver_branch": "58"}, "gpu_driver_branch", "gpu_driver_branch is '58' (3 digits, e.g. 580)"),
])
def test_a_bad_driver_setting_is_named_alone(tmp_path: Path, extra: dict[str, str], named: str, says: str) -> None:
    book = tmp_path / "preflight.yml"
    book.write_text(PLAYBOOK)
    args = [arg for key, value in {"gpu_count": "1", **extra}.items() for arg in ("-e", f"{key}={value}")]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), str(book), *args],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    out = " ".join(proc.stdout.split())
    assert proc.returncode == 2, out[-2000:]
    assert says in out, out[-2000:]
    message = out[out.index("localhost: gpu_driver"):]
    message = message[:message.index("fix it in the inventory")]
    # The message may name the branch or the method it depends on; no other setting is listed.
    allowed = (named, "gpu_driver_branch", "gpu_driver_method")
    assert [s for s in SETTINGS if s in message and s not in allowed] == [], message
    assert "Traceback" not in proc.stdout + proc.stderr
