"""A real `sccnlp bundle build` of a small bundle (the python36 role only: its Debian packages resolved by apt in a
container of the node image, and its wheel from the lock), then: every manifest hash checks out, the deb folder is
an apt repository a container WITHOUT network installs the packages from, the wheel installs from it with
`pip --no-index --require-hashes`, the roles (sources.yml, python36) deploy a node without network from it, a re-run
reuses what is there, a tampered file is refused, named, by `bundle verify` and by the node's preflight, and the
next build replaces it.

Needs Docker, the node image (sccnlp testbed image) and the package mirrors; it is not part of `make test`: run it
with SCCNLP_BUNDLE_TEST=1 pytest tests/integration/bundle (about a minute on a quiet machine)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sccnlp.bundle import plan

ROOT = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.executable).parent
NODE_DIR = "/srv/scc-bundle"

IMAGE = os.environ.get("SCCNLP_BUNDLE_IMAGE", plan.DEFAULT_IMAGE)

pytestmark = [
    pytest.mark.bundle,
    pytest.mark.skipif(os.environ.get("SCCNLP_BUNDLE_TEST") != "1",
                       reason="builds a real bundle (Docker, node image, mirrors): set SCCNLP_BUNDLE_TEST=1"),
]


def _sccnlp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sccnlp.cli", *args], capture_output=True, text=True, check=False,
                          timeout=900)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not shutil.which("docker") or subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True,
                                                    check=False).returncode != 0:
        pytest.skip(f"needs docker and the image {IMAGE}")
    tmp = tmp_path_factory.mktemp("bundle")
    inv = tmp / "hosts.yml"
    inv.write_text("all:\n  children:\n    scc_cluster:\n      hosts:\n        bnd-n1:\n"
                   "          ansible_host: 10.66.0.11\n  vars:\n    scc_bundle_roles: [python36]\n"
                   f"    scc_bundle_image: {IMAGE}\n    cpfs_client_backend: glusterfs\n")
    out = tmp / "b"
    proc = _sccnlp("bundle", "build", "-i", str(inv), "-o", str(out), "--container-name", f"bnd-it-{os.getpid()}")
    assert proc.returncode == 0, proc.stderr
    (tmp / "first.txt").write_text(proc.stdout)
    (tmp / "inventory").write_text(str(inv))
    return out


def _doc(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def test_manifest_hashes_match_the_files(bundle: Path) -> None:
    doc = _doc(bundle)
    assert doc["target"]["release"] == "debian-12" and doc["target"]["python"] == "3.11"
    kinds = {(e["source"], e["role"]) for e in doc["entries"]}
    assert {("pypi", "python36"), ("debian", "python36"), ("bundle", "bundle")} <= kinds
    for e in doc["entries"]:
        data = (bundle / e["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == e["sha256"] and len(data) == e["size"], e["file"]
    debs = {e["file"].split("/", 1)[1] for e in doc["entries"] if e["source"] == "debian"}
    index = (bundle / "deb" / "Packages").read_text()
    assert {f"./{name}" for name in debs} == {line.split(": ", 1)[1] for line in index.splitlines()
                                              if line.startswith("Filename: ")}
    assert any(name.startswith("python3-venv_") for name in debs)


def test_offline_container_installs_from_the_bundle(bundle: Path) -> None:
    """No network at all: apt and pip see only the bundle."""
    wheel = next(e for e in _doc(bundle)["entries"] if e["source"] == "pypi")
    script = (
        "set -e; rm -f /etc/apt/sources.list.d/*; echo 'deb [trusted=yes] file:/b/deb ./' > /etc/apt/sources.list;"
        " apt-get update -q >/dev/null; apt-get install -y -q --no-install-recommends python3-venv python3-pip"
        " python3-packaging >/dev/null; python3 -m venv /v;"
        f" echo '{wheel['name']}=={wheel['version']} --hash=sha256:{wheel['sha256']}' > /r.txt;"
        " /v/bin/pip install -q --no-index --find-links /b/wheels --require-hashes -r /r.txt;"
        " /v/bin/python -c 'import yaml; print(\"yaml\", yaml.__version__)'")
    proc = subprocess.run(["docker", "run", "--rm", "--network", "none", "--name", f"bnd-off-{os.getpid()}",
                           "-v", f"{bundle}:/b:ro", "--entrypoint", "bash", IMAGE, "-c", script],
                          capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"yaml {wheel['version']}" in proc.stdout


@contextlib.contextmanager
def _node(bundle: Path, tmp: Path) -> Iterator[tuple[str, Path]]:
    """A node container without any network, the bundle mounted read-only at NODE_DIR, removed afterwards (one
    container at a time); Ansible reaches it through the docker connection."""
    name = f"bnd-node-{os.getpid()}"
    subprocess.run(["docker", "run", "-d", "--network", "none", "--name", name, "-v", f"{bundle}:{NODE_DIR}:ro",
                    "--entrypoint", "sleep", IMAGE, "infinity"], check=True, capture_output=True, timeout=120)
    coll = tmp / "collections" / "ansible_collections" / "scc"
    coll.mkdir(parents=True)
    (coll / "nlp_training").symlink_to(ROOT)
    (tmp / "inventory.ini").write_text(
        f"[scc_cluster]\nbnd-node ansible_connection=community.docker.docker ansible_host={name} "
        "ansible_python_interpreter=/usr/bin/python3\n")
    (tmp / "play.yml").write_text(
        f"- name: Package sources\n  ansible.builtin.import_playbook: {ROOT}/playbooks/sources.yml\n"
        "- name: The training interpreter\n  hosts: scc_cluster\n  gather_facts: true\n"
        "  roles:\n    - role: scc.nlp_training.python36\n")
    try:
        yield name, tmp
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False, timeout=120)


def _deploy(tmp: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(tmp / "inventory.ini"), str(tmp / "play.yml"),
                           "-e", f"scc_bundle_dir={NODE_DIR}"], capture_output=True, text=True, env=env, cwd=tmp,
                          timeout=900, check=False)


def test_the_roles_deploy_a_node_without_network_from_the_bundle(bundle: Path, tmp_path: Path) -> None:
    with _node(bundle, tmp_path) as (name, tmp):
        _deploy_twice(bundle, name, tmp)


def _deploy_twice(bundle: Path, name: str, tmp: Path) -> None:
    proc = _deploy(tmp)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    wheel = next(e for e in _doc(bundle)["entries"] if e["source"] == "pypi")
    probe = subprocess.run(["docker", "exec", name, "/opt/scc/venv/bin/python", "-c",
                            "import yaml; print(yaml.__version__)"], capture_output=True, text=True, check=False)
    assert probe.stdout.strip() == wheel["version"], probe.stderr
    conf = subprocess.run(["docker", "exec", name, "cat", "/etc/pip.conf"], capture_output=True, text=True,
                          check=False).stdout
    assert f"{NODE_DIR}/wheels" in conf and "no-index = true" in conf
    again = _deploy(tmp)
    assert again.returncode == 0 and " changed=0 " in again.stdout, again.stdout[-3000:]


def test_rerun_reuses_and_tampering_is_refused_naming_the_file(bundle: Path, tmp_path: Path) -> None:
    inv = (bundle.parent / "inventory").read_text()
    before = _doc(bundle)["entries"]
    proc = _sccnlp("bundle", "build", "-i", inv, "-o", str(bundle), "--container-name", f"bnd-it2-{os.getpid()}")
    assert proc.returncode == 0, proc.stderr
    assert "reused 1 wheel" in proc.stdout
    after = _doc(bundle)["entries"]
    assert [(e["file"], e["sha256"]) for e in after if e["source"] != "bundle"] == \
        [(e["file"], e["sha256"]) for e in before if e["source"] != "bundle"]
    assert _sccnlp("bundle", "verify", str(bundle)).returncode == 0

    victim = next(e for e in after if e["source"] == "debian")
    with (bundle / victim["file"]).open("r+b") as handle:
        handle.seek(100)
        handle.write(b"\0tampered\0")
    proc = _sccnlp("bundle", "verify", str(bundle))
    assert proc.returncode == 2
    assert f"bundle file {victim['file']} ({victim['name']} {victim['version']}, for {victim['role']}) does not " \
           "match the manifest" in proc.stderr
    assert "Traceback" not in proc.stderr
    with _node(bundle, tmp_path) as (_name, tmp):
        refused = _deploy(tmp)
    out = " ".join((refused.stdout + refused.stderr).split())
    assert refused.returncode != 0
    assert f"bnd-node: bundle files in {NODE_DIR} do not match the manifest: {victim['file']}: FAILED" in out

    # A re-run repairs it: the file is checked against the mirror's index (apt alone keeps a file of the right size).
    proc = _sccnlp("bundle", "build", "-i", inv, "-o", str(bundle), "--container-name", f"bnd-it3-{os.getpid()}")
    assert proc.returncode == 0, proc.stderr
    assert hashlib.sha256((bundle / victim["file"]).read_bytes()).hexdigest() == victim["sha256"]
    assert _sccnlp("bundle", "verify", str(bundle)).returncode == 0
