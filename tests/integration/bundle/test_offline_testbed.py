"""A cluster without internet, deployed from the offline bundle (issue 14), on the e2e test bed.

`scripts/test.sh e2e` runs `sccnlp up --offline`: the host refuses to forward anything from the nodes' network to any
other address (no route out; they reach each other and the controller), `sccnlp bundle build` collects what the
deploy needs on the controller, and site.yml installs only from it (the inventory carries scc_bundle_src), then
validates and trains the demo BERT. These tests check that the nodes really have no egress, that what they run is
what the bundle holds (the same end state an online deploy reaches: the pip lock's versions, installed with
--require-hashes, and the Debian versions the bundle resolved), and that a tampered bundle or one built for another
release is refused naming the node and the file, with nothing installed from it. Run: `pytest -m testbed
tests/integration/bundle` with SCCNLP_TESTBED_INVENTORY set.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.integration.bert.test_bert_testbed import _env
from tests.integration.reboot.test_reboot_testbed import in_node

pytestmark = pytest.mark.testbed

NODE_DIR = "/var/lib/scc-bundle"
VENV = "/opt/scc/venv"


@pytest.fixture(scope="module")
def testbed(testbed_inventory: str) -> dict:
    state = Path(testbed_inventory).parent / "state.json"
    if not state.is_file():
        pytest.fail(f"{testbed_inventory} is not a test bed inventory (no {state})")
    data = json.loads(state.read_text())
    if data["spec"].get("egress", True) or not data["spec"].get("bundle"):
        pytest.fail(f"{testbed_inventory}: the test bed has egress or no bundle: bring it up with "
                    "`sccnlp up --offline`")
    return data


@pytest.fixture(scope="module")
def containers(testbed: dict) -> dict[str, str]:
    return {n["name"]: n["container"] for n in testbed["nodes"]}


@pytest.fixture(scope="module")
def bundle(testbed: dict) -> Path:
    return Path(testbed["spec"]["bundle"])


@pytest.fixture(scope="module")
def doc(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def deploy(inventory: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sccnlp.cli", "deploy", "-i", inventory, *args],
                          capture_output=True, text=True, env=_env(), timeout=900, check=False)


def dpkg(container: str) -> dict[str, str]:
    out = in_node(container, "dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n'").stdout
    return {f[1].split(":")[0]: f[2] for f in (line.split() for line in out.splitlines()) if f[0] == "ii"}


def test_the_nodes_have_no_egress(containers: dict[str, str]) -> None:
    """The package mirror the node image was built from answers the controller and not the nodes."""
    first = next(iter(containers.values()))
    source = in_node(first, "grep -h '^deb ' /etc/apt/sources.list").stdout.split()
    assert source and source[1].startswith("http"), source
    url = source[1].rstrip("/") + f"/dists/{source[2]}/Release"
    with urllib.request.urlopen(url, timeout=30) as answer:  # the controller: reachable, so the check can fail
        assert answer.status == 200
    probe = f"import urllib.request; urllib.request.urlopen('{url}', timeout=5)"
    for name, container in containers.items():
        got = in_node(container, f"python3 -c \"{probe}\"", check=False)
        assert got.returncode != 0, f"{name} fetched {url}: the test bed has egress"
        assert re.search(r"URLError|timed out|unreachable|Name or service|resolution", got.stderr), (name, got.stderr)


def test_apt_and_pip_read_only_the_bundle(containers: dict[str, str]) -> None:
    for name, container in containers.items():
        apt = in_node(container, "apt-config dump | grep -iE '^Dir::Etc::source(list|parts) '").stdout.lower()
        assert 'dir::etc::sourcelist "/etc/apt/scc-bundle.list"' in apt, (name, apt)
        assert 'dir::etc::sourceparts "/etc/apt/scc-bundle.list.d"' in apt, (name, apt)
        assert in_node(container, "ls -A /etc/apt/scc-bundle.list.d").stdout == "", name
        assert in_node(container, "cat /etc/apt/scc-bundle.list").stdout.strip().endswith(f"file:{NODE_DIR}/deb ./")
        pip = dict(line.split("=", 1) for line in in_node(container, f"{VENV}/bin/pip config list").stdout.splitlines())
        assert pip["global.find-links"].strip("'").replace("\\n", " ").split() == [f"{NODE_DIR}/wheels"], (name, pip)
        assert pip["global.no-index"] == "'true'" and not any("index-url" in key for key in pip), (name, pip)


def test_the_nodes_run_what_the_bundle_holds(containers: dict[str, str], doc: dict) -> None:
    """Each node's bundle matches the manifest; every Debian package the roles asked for is installed at the
    bundle's version; the venv is the pip lock (the requirement files with --hash lines), the same on every node."""
    debs = {e["name"]: e["version"] for e in doc["entries"] if e["source"] == "debian"}
    wheels = {e["name"].lower().replace("_", "-"): e["version"] for e in doc["entries"] if e["source"] == "pypi"}
    freezes = {}
    corpus: set[str] = set()  # the BERT corpus package: installed where the data is prepared
    for name, container in containers.items():
        sums = "".join(f"{e['sha256']}  {e['file']}\n" for e in doc["entries"])
        check = subprocess.run(["docker", "exec", "-i", "-w", NODE_DIR, container, "sha256sum", "--strict", "-c", "-"],
                               input=sums, capture_output=True, text=True, timeout=300, check=False)
        assert check.returncode == 0, (name, check.stdout[-2000:], check.stderr[-1000:])
        shipped = set(in_node(container, f"cd {NODE_DIR} && find . -type f -printf '%P\\n'").stdout.split())
        assert shipped == {e["file"] for e in doc["entries"]} | {"manifest.json"}, (name, sorted(shipped)[:20])
        installed = dpkg(container)
        for pkg in ("openmpi-bin", "fuse3", "python3.11-venv"):
            assert pkg in debs and installed.get(pkg) == debs[pkg], (name, pkg, installed.get(pkg), debs.get(pkg))
        from_bundle = {p: v for p, v in debs.items() if p in installed}
        assert all(installed[p] == v for p, v in from_bundle.items()), name
        corpus.update(p for p in ("python3-doc",) if installed.get(p) == debs.get(p))
        freeze = {line.split("==")[0].lower().replace("_", "-"): line.split("==")[1] for line in in_node(
            container, f"{VENV}/bin/python -m pip freeze --all").stdout.split() if "==" in line}
        for req in ("python36", "pytorch"):
            pins = [line for line in in_node(container, f"cat {VENV}/scc-requirements/{req}.txt").stdout.splitlines()
                    if line.strip()]
            assert pins and all(" --hash=sha256:" in line for line in pins), (name, req)
            for line in pins:
                pkg, version = line.split(" ")[0].split("==")
                assert freeze.get(pkg) == version == wheels.get(pkg), (name, pkg, freeze.get(pkg), wheels.get(pkg))
        freezes[name] = {p: v for p, v in freeze.items() if p != "sccnlp"}
    assert len({json.dumps(f, sort_keys=True) for f in freezes.values()}) == 1, freezes
    assert corpus == {"python3-doc"}


def test_a_tampered_bundle_is_refused_naming_node_and_file(testbed_inventory: str, containers: dict[str, str],
                                                           bundle: Path, doc: dict, tmp_path: Path) -> None:
    victim = next(e for e in doc["entries"] if e["file"].startswith("deb/openmpi"))
    tampered = tmp_path / "tampered"
    shutil.copytree(bundle, tampered)
    data = bytearray((tampered / victim["file"]).read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte changed
    (tampered / victim["file"]).write_bytes(bytes(data))
    node, container = sorted(containers.items())[-1]
    before = dpkg(container)

    # sccnlp deploy --bundle checks the controller's copy before anything runs.
    got = deploy(testbed_inventory, "--bundle", str(tampered), "-l", node)
    assert got.returncode == 2, got.stdout[-2000:] + got.stderr
    assert f"controller: bundle file {victim['file']} ({victim['name']} {victim['version']}, for openmpi) does not " \
           "match" in got.stderr
    assert "PLAY" not in got.stdout and "==" not in got.stdout

    # The variable path (ansible-playbook users): the node checks the files it unpacked before using them.
    got = deploy(testbed_inventory, "-e", f"scc_bundle_src={tampered}", "-l", node)
    out = " ".join(got.stdout.split())
    assert got.returncode != 0, got.stdout[-3000:]
    assert f"{node}: bundle files in {NODE_DIR}.new do not match the manifest: {victim['file']}: FAILED" in out, \
        got.stdout[-3000:]
    assert "Nothing was installed from the bundle" in out
    assert "== Wire the cluster" not in got.stdout  # the run stopped in the sources phase
    assert dpkg(container) == before
    good = "".join(f"{e['sha256']}  {e['file']}\n" for e in doc["entries"])
    check = subprocess.run(["docker", "exec", "-i", "-w", NODE_DIR, container, "sha256sum", "--strict", "-c", "-"],
                           input=good, capture_output=True, text=True, timeout=300, check=False)
    assert check.returncode == 0, f"{node}: the bundle in use changed: {check.stdout[-1000:]}"

    # The good bundle again: the node's archive is put back; a second run sends and changes nothing.
    got = deploy(testbed_inventory, "--playbook", "sources", "-l", node)
    assert got.returncode == 0, got.stdout[-3000:]
    got = deploy(testbed_inventory, "--playbook", "sources", "-l", node)
    assert got.returncode == 0 and "OK" in got.stdout and ", 0 changes" in got.stdout, got.stdout[-3000:]

    # A file changed on the node itself: the next run finds it, unpacks the archive again and checks it first.
    in_node(container, f"printf x >> {NODE_DIR}/{victim['file']}")
    got = deploy(testbed_inventory, "--playbook", "sources", "-l", node)
    assert got.returncode == 0 and "Put the checked bundle in place (changed)" in got.stdout, got.stdout[-3000:]
    check = subprocess.run(["docker", "exec", "-i", "-w", NODE_DIR, container, "sha256sum", "--strict", "-c", "-"],
                           input=good, capture_output=True, text=True, timeout=300, check=False)
    assert check.returncode == 0, f"{node}: the changed file was not replaced: {check.stdout[-1000:]}"


def test_a_bundle_for_another_release_is_refused_before_any_change(testbed_inventory: str, doc: dict,
                                                                   tmp_path: Path) -> None:
    other = tmp_path / "bullseye"
    other.mkdir()
    (other / "manifest.json").write_text(json.dumps({**doc, "target": {**doc["target"], "release": "debian-11",
                                                                       "arch": "aarch64"}}))
    got = deploy(testbed_inventory, "-e", f"scc_bundle_src={other}")
    out = " ".join(got.stdout.split())
    assert got.returncode != 0
    for node in ("node1", "node2"):
        assert f"{node}: the bundle was built for release debian-11 (the node has debian-12), arch aarch64 (the " \
               "node has x86_64); nothing was changed" in out, got.stdout[-3000:]
    assert ", 0 changes" in got.stdout and "Package sources" not in got.stdout, got.stdout[-3000:]
