"""The bundle_source role's preflight on this machine (connection local, read-only, no Docker): a bundle that
verifies passes; a tampered file fails naming the node and the file; a bundle built for another release,
architecture or Python is refused before any change; a missing bundle names the setting."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from sccnlp.bundle import manifest

ROOT = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent


def _distribution_target() -> dict[str, str]:
    release = {}
    for line in Path("/etc/os-release").read_text().splitlines():
        key, _sep, value = line.partition("=")
        release[key] = value.strip('"')
    return {"release": f"{release.get('ID', '')}-{release.get('VERSION_ID', '').split('.')[0]}",
            "arch": platform.machine(), "python": f"{sys.version_info.major}.{sys.version_info.minor}"}


def _bundle(tmp: Path, target: dict[str, str]) -> Path:
    bundle = tmp / "bundle"
    (bundle / "deb").mkdir(parents=True)
    (bundle / "wheels").mkdir()
    (bundle / "deb" / "fuse3_3.14.0-4_amd64.deb").write_bytes(b"deb bytes" * 50)
    (bundle / "wheels" / "a-1-py3-none-any.whl").write_bytes(b"wheel bytes")
    entries = [manifest.entry_for(bundle, "deb/fuse3_3.14.0-4_amd64.deb", "fuse3", "3.14.0-4", "debian",
                                  "cpfs_client"),
               manifest.entry_for(bundle, "wheels/a-1-py3-none-any.whl", "a", "1", "pypi", "python36")]
    (bundle / manifest.MANIFEST).write_text(json.dumps(manifest.manifest(entries, target)))
    return bundle


def _preflight(tmp: Path, bundle_dir: str, setting: str = "scc_bundle_dir") -> subprocess.CompletedProcess[str]:
    coll = tmp / "collections" / "ansible_collections" / "scc"
    coll.mkdir(parents=True, exist_ok=True)
    if not (coll / "nlp_training").exists():
        (coll / "nlp_training").symlink_to(ROOT)
    (tmp / "inventory.ini").write_text(
        f"[scc_cluster]\nbnd-node ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    play = tmp / "play.yml"
    play.write_text("- name: Bundle preflight\n  hosts: scc_cluster\n  gather_facts: true\n  gather_subset: [min]\n"
                    "  tasks:\n    - name: Run it\n      ansible.builtin.include_role:\n"
                    "        name: scc.nlp_training.bundle_source\n        tasks_from: preflight\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(tmp / "inventory.ini"), str(play), "--check",
                           "-e", json.dumps({setting: bundle_dir})],
                          capture_output=True, text=True, env=env, cwd=tmp, timeout=300, check=False)


@pytest.fixture()
def target() -> dict[str, str]:
    if not Path("/etc/os-release").is_file() or not Path("/usr/bin/sha256sum").exists():
        pytest.skip("needs /etc/os-release and sha256sum")
    return _distribution_target()


def test_a_bundle_that_verifies_passes(tmp_path: Path, target: dict[str, str]) -> None:
    proc = _preflight(tmp_path, str(_bundle(tmp_path, target)))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_tampered_file_is_refused_naming_node_and_file(tmp_path: Path, target: dict[str, str]) -> None:
    bundle = _bundle(tmp_path, target)
    (bundle / "deb" / "fuse3_3.14.0-4_amd64.deb").write_bytes(b"something else")
    proc = _preflight(tmp_path, str(bundle))
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert "bnd-node: bundle files in" in out and "deb/fuse3_3.14.0-4_amd64.deb: FAILED" in out
    assert "Nothing was installed from the bundle" in out and "wheels/a-1" not in out


def test_another_target_is_refused_before_any_change(tmp_path: Path, target: dict[str, str]) -> None:
    proc = _preflight(tmp_path, str(_bundle(tmp_path, {**target, "release": "debian-11", "python": "3.9"})))
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert (f"bnd-node: the bundle was built for release debian-11 (the node has {target['release']}), python 3.9 "
            f"(the node has {target['python']}); nothing was changed") in out


def test_a_missing_bundle_names_the_setting(tmp_path: Path, target: dict[str, str]) -> None:
    proc = _preflight(tmp_path, str(tmp_path / "nowhere"))
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0 and "bnd-node: bundle_source_dir (scc_bundle_dir) is" in out


@pytest.mark.parametrize("src", ["scc-bundle", "/nowhere/scc-bundle"])
def test_a_missing_controller_bundle_names_the_setting(tmp_path: Path, target: dict[str, str], src: str) -> None:
    proc = _preflight(tmp_path, src, setting="scc_bundle_src")
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert (f"bnd-node: bundle_source_src (scc_bundle_src) is {src} and bundle_source_dir (scc_bundle_dir) is "
            "/var/lib/scc-bundle; both must be absolute paths, and the controller must hold a bundle (manifest.json) "
            "at the first. Fix: sccnlp bundle build -i INVENTORY -o DIR, then scc_bundle_src=DIR.") in out, out[-2000:]


def test_a_controller_bundle_for_another_target_is_refused(tmp_path: Path, target: dict[str, str]) -> None:
    bundle = _bundle(tmp_path, {**target, "arch": "aarch64"})
    proc = _preflight(tmp_path, str(bundle), setting="scc_bundle_src")
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0
    assert f"bnd-node: the bundle was built for arch aarch64 (the node has {target['arch']}); nothing was changed" \
        in out, out[-2000:]
