"""The pip hash lock: the shipped lock pins what the roles' defaults install, the set check and its refusal
messages, pip report parsing, and the roles' preflight refusing a version the lock does not pin (a real
ansible-playbook run, no mocks)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from sccnlp import piplock
from sccnlp.paths import collection_module, collection_root
from sccnlp.runner import _collections_path

ROOT = collection_root()
LOCK: dict[str, Any] = yaml.safe_load((ROOT / "sccnlp" / "data" / "pip_lock.yml").read_text())


def _defaults(role: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())


def test_shipped_lock_has_every_set_of_the_plan_resolved_for_its_specs() -> None:
    assert LOCK["target"] == {"python": "3.11", "platform": "linux_x86_64", "release": "debian-12"}
    for name, specs, _binary in piplock.DEFAULT_PLAN:
        if name in (LOCK.get("unresolved") or {}):
            continue
        assert LOCK["sets"][name]["requires"] == specs, name
        result = piplock.check_set(LOCK, name, specs)
        assert result["ok"], result["error"]


def test_plan_follows_the_role_defaults() -> None:
    py36, torch, tf = _defaults("python36"), _defaults("pytorch"), _defaults("tensorflow")
    plan = {name: specs for name, specs, _b in piplock.DEFAULT_PLAN}
    assert plan["python36"] == py36["python36_requirements"]
    cpu = f"torch=={torch['pytorch_version']}+{torch['pytorch_cpu_local_version']}"
    assert plan["pytorch-cpu"] == py36["python36_requirements"] + [cpu] + torch["pytorch_requirements"]
    assert plan["tensorflow-cpu"][-1] == f"tensorflow-cpu=={tf['tensorflow_version']}"
    assert f"torch=={torch['pytorch_version']}" in plan["pytorch-cuda"]


def test_requirements_have_one_hash_line_per_pin() -> None:
    result = piplock.check_set(LOCK, "pytorch-cpu", ["torch==2.13.0+cpu", "numpy==2.0.2"])
    lines = result["requirements"].splitlines()
    assert len(lines) == len(LOCK["sets"]["pytorch-cpu"]["pins"]) > 10
    assert all(len(line.split(" --hash=sha256:")[1]) == 64 for line in lines)
    assert "torch==2.13.0+cpu --hash=sha256:" in result["requirements"]


def test_unmet_names_each_pin_the_venv_lacks_at_its_version() -> None:
    """The judge of whether a re-run starts pip: every pin of the requirements file against the venv's versions."""
    unmet = piplock._lockutils().unmet
    text = piplock.check_set(LOCK, "pytorch-cpu", ["torch==2.13.0+cpu"])["requirements"]
    pins = {p["name"]: str(p["version"]) for p in LOCK["sets"]["pytorch-cpu"]["pins"]}
    assert unmet(text, pins) == []
    # Names compare normalised (PyYAML / pyyaml, typing_extensions / typing-extensions), versions exactly.
    assert unmet("PyYAML==6.0.2 --hash=sha256:" + "a" * 64 + "\n", {"pyyaml": "6.0.2"}) == []
    assert unmet("typing_extensions==4.12.2\n", {"Typing-Extensions": "4.12.2"}) == []
    lacking = dict(pins, torch="2.13.0")
    del lacking["numpy"]
    assert unmet(text, lacking) == [f"numpy=={pins['numpy']} (missing)", "torch==2.13.0+cpu (has 2.13.0)"]
    # A line that is not a name==version pin (a wheel the role downloaded itself) always starts pip.
    wheel = "/var/cache/scc/perseus-1.0-py3-none-any.whl --hash=sha256:" + "b" * 64
    assert unmet(wheel + "\n", {"perseus": "1.0"}) == [
        "/var/cache/scc/perseus-1.0-py3-none-any.whl (not a name==version pin)"]
    assert unmet("", {}) == [] and unmet("# comment\n\n", None) == []


@pytest.mark.parametrize(("stdout", "expected"), [
    ('{"torch": "2.13.0+cpu", "PyYAML": "6.0.2"}', {"torch": "2.13.0+cpu", "PyYAML": "6.0.2"}),
    ("", None),                                   # nothing printed
    ("Python 3.6.15\n", None),                     # an interpreter that printed something else
    ('["torch"]', None),                          # JSON, not the mapping
    ('{"torch": 2}', None),                       # a version that is not text
])
def test_the_version_read_is_parsed_or_refused(stdout: str, expected: dict[str, str] | None) -> None:
    """What the venv's version read printed: its mapping, or None (pip runs) for anything else, never an error."""
    assert piplock._lockutils().read_installed(stdout) == expected
    # The filter the install's condition calls takes the printed text as it is: unreadable text starts pip.
    unmet = collection_module("plugins.filter.pip_lock").pip_lock_unmet
    assert (unmet("torch==2.13.0+cpu\n", stdout) == []) == (expected is not None and "torch" in expected)


@pytest.mark.parametrize(("set_name", "specs", "expected"), [
    ("pytorch-cpu", ["torch==2.99.0+cpu"], "torch==2.99.0+cpu is not in the pip lock's set 'pytorch-cpu' "
                                           "(it pins torch==2.13.0+cpu)"),
    ("python36", ["Requests==2.0.0"], "Requests==2.0.0 is not in the pip lock's set 'python36' (it has no requests)"),
    ("pytorch-rocm", ["torch==2.13.0"], "the pip lock has no set 'pytorch-rocm' (it has: "),
    ("python36", ["PyYAML>=6"], "requirement 'PyYAML>=6' is not pinned as name==version"),
])
def test_refusals_name_the_spec_the_set_and_the_fix(set_name: str, specs: list[str], expected: str) -> None:
    result = piplock.check_set(LOCK, set_name, specs)
    assert not result["ok"] and result["requirements"] == ""
    assert expected in result["error"]
    assert "python -m sccnlp.piplock" in result["error"] or "pinned as" in result["error"]


def test_malformed_and_empty_locks_are_refused() -> None:
    bad = copy.deepcopy(LOCK)
    bad["sets"]["python36"]["pins"][0]["sha256"] = "abc"
    assert "malformed pin" in piplock.check_set(bad, "python36", ["PyYAML==6.0.2"])["error"]
    assert "no `sets` mapping" in piplock.check_set({}, "python36", [])["error"]
    assert "no `sets` mapping" in piplock.check_set(None, "python36", [])["error"]  # type: ignore[arg-type]
    unresolved = {"sets": {}, "unresolved": {"horovod": "pip could not resolve horovod==0.28.1"}}
    assert "not resolved: pip could not resolve" in piplock.check_set(unresolved, "horovod", [])["error"]


def test_pins_from_a_pip_report(tmp_path: Path) -> None:
    wheel = tmp_path / "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"not really a wheel")
    report = {"install": [
        {"metadata": {"name": "PyYAML", "version": "6.0.2"},
         "download_info": {"url": "https://index.invalid/p/PyYAML-6.0.2-cp311-cp311-manylinux.whl",
                           "archive_info": {"hashes": {"sha256": "a" * 64}}}},
        {"metadata": {"name": "torch", "version": "2.13.0+cpu"},
         "download_info": {"url": wheel.as_uri(), "archive_info": {}}},
        {"metadata": {"name": "typing_extensions", "version": "4.16.0"},
         "download_info": {"url": "https://index.invalid/t.whl", "archive_info": {"hash": "sha256=" + "b" * 64}}},
    ]}
    pins = piplock.pins_from_report(report)
    assert [(p.name, p.version) for p in pins] == [("pyyaml", "6.0.2"), ("torch", "2.13.0+cpu"),
                                                   ("typing-extensions", "4.16.0")]
    assert pins[1].sha256 == piplock.sha256_file(wheel) and pins[1].file.startswith("torch-2.13.0+cpu")
    assert all("index.invalid" not in str(p.as_dict()) for p in pins)  # no URL (credentials) in a lock


def test_a_report_item_without_a_hash_is_refused() -> None:
    report = {"install": [{"metadata": {"name": "horovod", "version": "0.28.1"},
                           "download_info": {"url": "https://index.invalid/horovod-0.28.1.tar.gz"}}]}
    with pytest.raises(piplock.LockError, match=r"no sha256 for .horovod. \(horovod-0\.28\.1\.tar\.gz\)"):
        piplock.pins_from_report(report)


PLAYBOOK = """
- name: Preflight of the pip lock as the runtime roles call it
  hosts: localhost
  gather_facts: false
  tasks:
    - name: A version the lock does not pin
      ansible.builtin.include_role:
        name: scc.nlp_training.pip_lock
        tasks_from: preflight
      vars:
        _pip_lock_set: pytorch-cpu
        _pip_lock_specs: ["torch==2.99.0+cpu"]
        _pip_lock_file: "{{ lock_file }}"
        _pip_lock_setting: pytorch_version/pytorch_requirements
"""


@pytest.mark.parametrize(("lock_file", "expected"), [
    ("", "localhost: pytorch_version/pytorch_requirements: torch==2.99.0+cpu is not in the pip lock's set "
         "'pytorch-cpu' (it pins torch==2.13.0+cpu)"),
    ("/nonexistent/lock.yml", "localhost: pytorch_version/pytorch_requirements: the pip lock file "
                              "/nonexistent/lock.yml is not a file on the controller"),
    ("BROKEN", "is not readable YAML"),
])
def test_preflight_refuses_before_any_change(tmp_path: Path, lock_file: str, expected: str) -> None:
    if lock_file == "BROKEN":
        lock_file = str(tmp_path / "broken.yml")
        Path(lock_file).write_text("sets: [unclosed\n")
    book = tmp_path / "pre.yml"
    book.write_text(PLAYBOOK)
    exe = Path(sys.executable).parent / "ansible-playbook"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([str(exe if exe.exists() else "ansible-playbook"), str(book), "-e", f"lock_file={lock_file}"],
                          capture_output=True, text=True, env=env, timeout=180, check=False)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2, out
    assert expected in out
    assert "Traceback" not in out


def test_preflight_entry_point_validates_its_parameters(tmp_path: Path) -> None:
    """The argument spec of `tasks_from: preflight` (meta/argument_specs.yml) runs at include time: a call without
    the specs is refused there, naming the parameter, before the role's own check."""
    book = tmp_path / "pre.yml"
    book.write_text(PLAYBOOK.replace('        _pip_lock_specs: ["torch==2.99.0+cpu"]\n', ""))
    exe = Path(sys.executable).parent / "ansible-playbook"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([str(exe if exe.exists() else "ansible-playbook"), str(book), "-e", "lock_file="],
                          capture_output=True, text=True, env=env, timeout=180, check=False)
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2, out
    assert "Validating arguments against arg spec 'preflight'" in out, out
    assert "missing required arguments: _pip_lock_specs" in out, out


@pytest.mark.parametrize(("earlier", "later"), [("python36", "pytorch-cpu"), ("pytorch-cpu", "tensorflow-cpu"),
                                                ("pytorch-cpu", "horovod-pytorch-cpu"), ("python36", "pytorch-cuda"),
                                                ("pytorch-cuda", "tensorflow-cuda")])
def test_a_later_set_keeps_every_earlier_pin(earlier: str, later: str) -> None:
    """The roles install the sets one after the other into one venv: a later set that moved an earlier pin would
    flip packages on every run (no idempotence)."""
    def pins(name: str) -> dict[str, tuple[str, str]]:
        return {p["name"]: (p["version"], p["sha256"]) for p in LOCK["sets"][name]["pins"]}
    before, after = pins(earlier), pins(later)
    assert {k: v for k, v in before.items() if after.get(k) != v} == {}


INSTALL_BOOK = """
- name: One hash-checked install as the runtime roles make it
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Install the probe package
      ansible.builtin.include_role:
        name: scc.nlp_training.pip_lock
        tasks_from: install
      vars:
        _pip_lock_name: probe
        _pip_lock_venv: "{{ venv }}"
        _pip_lock_lines: ["{{ line }}"]
        _pip_lock_specs: [scc-probe==1.0]
        _pip_lock_extra_args: [--no-index, --find-links, "{{ wheels }}"]
"""


def _probe_wheel(folder: Path) -> Path:
    """A real, minimal wheel of `scc-probe 1.0` (pure Python), built here: nothing is downloaded."""
    import zipfile
    wheel = folder / "scc_probe-1.0-py3-none-any.whl"
    files = {"scc_probe/__init__.py": "VALUE = 1\n",
             "scc_probe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: scc-probe\nVersion: 1.0\n",
             "scc_probe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                              "Tag: py3-none-any\n"}
    record = "".join(f"{name},,\n" for name in files) + "scc_probe-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in {**files, "scc_probe-1.0.dist-info/RECORD": record}.items():
            archive.writestr(name, text)
    return wheel


def _install_run(book: Path, extra: dict[str, str]) -> tuple[str, str]:
    """(what the pip task did: changed/ok/skipping, the recap line) of one ansible-playbook run of the book."""
    exe = Path(sys.executable).parent / "ansible-playbook"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_DISPLAY_SKIPPED_HOSTS="1")
    proc = subprocess.run([str(exe if exe.exists() else "ansible-playbook"), str(book), "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    after = out.split("TASK [scc.nlp_training.pip_lock : Install hash-checked, the requirements of probe]")[1]
    pip = after.split("\n", 1)[1].strip().split(":", 1)[0]
    recap = next(line for line in out.splitlines() if line.startswith("localhost ") and "changed=" in line)
    return pip, " ".join(recap.split())


def test_install_runs_pip_only_when_the_venv_lacks_a_pin(tmp_path: Path) -> None:
    """A real venv and a real hash-checked pip install of a wheel built here, three runs of the role's install
    entry point: the first installs; a re-run finds the pin installed and starts no pip (changed=0); once the package
    is uninstalled by hand, the next run sees it missing and installs it again."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    digest = hashlib.sha256(_probe_wheel(wheels).read_bytes()).hexdigest()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    book = tmp_path / "install.yml"
    book.write_text(INSTALL_BOOK)
    extra = {"venv": str(venv), "wheels": str(wheels), "line": f"scc-probe==1.0 --hash=sha256:{digest}"}
    has_probe = [str(venv / "bin" / "python"), "-c", "import scc_probe"]

    pip, recap = _install_run(book, extra)
    assert (pip, "changed=2" in recap) == ("changed", True), recap
    assert (venv / "scc-requirements" / "probe.txt").read_text() == extra["line"] + "\n"
    subprocess.run(has_probe, check=True, timeout=60)

    pip, recap = _install_run(book, extra)
    assert (pip, "changed=0" in recap) == ("skipping", True), recap

    subprocess.run([str(venv / "bin" / "pip"), "uninstall", "-q", "-y", "scc-probe"], check=True, timeout=120)
    assert subprocess.run(has_probe, check=False, capture_output=True, timeout=60).returncode != 0
    pip, recap = _install_run(book, extra)
    assert (pip, "changed=1" in recap) == ("changed", True), recap
    subprocess.run(has_probe, check=True, timeout=60)
