"""`sccnlp testbed`: spec validation refuses bad input before Docker is touched; the written inventory's shape."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sccnlp import cli
from sccnlp.errors import SccError
from sccnlp.testbed import cluster


@pytest.fixture
def no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any use of the Docker layer or the image builder fails the test: validation must come first."""

    def touched(*_: object, **__: object) -> None:
        raise AssertionError("validation let a bad spec through to Docker")

    for name in ("ensure_daemon", "run", "daemon_answers", "image_exists"):
        monkeypatch.setattr(cluster.dk, name, touched)
    monkeypatch.setattr(cluster, "build_image", touched)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--subnet", "10.88.0.0/33"], "sccnlp: error: --subnet '10.88.0.0/33' is not a network"),
        (["--subnet", "banana"], "sccnlp: error: --subnet 'banana' is not a network"),
        (["--subnet", "10.88.0.5/24"], "has host bits set); use e.g. 10.88.0.0/24"),
        (["--subnet", "8.8.8.0/24"], "error: --subnet 8.8.8.0/24 is not a private range; use e.g. 10.88.0.0/24"),
        (["--subnet", "127.0.0.0/24"], "sccnlp: error: --subnet 127.0.0.0/24 is not a private range"),
        (["--subnet", "fd00:88::/64"], "sccnlp: error: --subnet fd00:88::/64: the test bed needs an IPv4 network"),
        (["--subnet", "10.88.0.0/28"], "sccnlp: error: --subnet 10.88.0.0/28 is too small for 3 nodes; use a /24"),
        (["--nodes", "33"], "sccnlp: error: --nodes 33: the test bed runs 1 to 32 nodes"),
        (["--nodes", "0"], "sccnlp: error: --nodes 0: the test bed runs 1 to 32 nodes"),
        (["--nodes", "20", "--subnet", "10.88.0.0/27"], "is too small for 20 nodes; use a /24"),
        (["--name", "../.."], "sccnlp: error: --name '../..': use 1 to 40 letters"),
        (["--name", "my testbed"], "sccnlp: error: --name 'my testbed': use 1 to 40 letters"),
    ],
)
def test_up_refuses_a_bad_spec_in_one_line(no_docker: None, capsys: pytest.CaptureFixture[str],
                                           args: list[str], message: str) -> None:
    rc = cli.main(["testbed", "up", *args])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert message in err
    assert "Traceback" not in err


def test_nodes_must_be_a_number(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["testbed", "up", "--nodes", "three"])
    assert exc.value.code == 2
    assert "argument --nodes: invalid int value: 'three'" in capsys.readouterr().err


def test_validate_accepts_the_defaults_and_the_limits() -> None:
    assert str(cluster._validate(cluster.TestbedSpec())) == "10.88.0.0/24"
    assert str(cluster._validate(cluster.TestbedSpec(nodes=32, subnet="172.30.5.0/24"))) == "172.30.5.0/24"
    assert str(cluster._validate(cluster.TestbedSpec(nodes=1, subnet="192.168.7.0/27"))) == "192.168.7.0/27"


@pytest.mark.parametrize("name", ["..", "../..", "a/b", "-x", ""])
def test_down_and_load_refuse_names_that_are_paths(no_docker: None, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path, name: str) -> None:
    """`testbed down --name ../..` once meant `rm -rf` of a folder above the test-bed state."""
    monkeypatch.setenv("SCCNLP_HOME", str(tmp_path / "home"))
    keep = tmp_path / "home" / "keep.txt"
    keep.parent.mkdir()
    keep.write_text("precious")
    with pytest.raises(SccError, match=r"^--name .*: use 1 to 40 letters"):
        cluster.down(name)
    with pytest.raises(SccError, match=r"^--name .*: use 1 to 40 letters"):
        cluster.Testbed.load(name)
    assert keep.read_text() == "precious"


def test_load_of_an_unknown_testbed_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SCCNLP_HOME", str(tmp_path))
    with pytest.raises(SccError, match=r"no test bed named 'ghost' .*: run `sccnlp testbed up --name ghost`"):
        cluster.Testbed.load("ghost")


def _testbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wheel_dir: str | None) -> cluster.Testbed:
    monkeypatch.setenv("SCCNLP_HOME", str(tmp_path / "home"))
    spec = cluster.TestbedSpec(name="core-tb", nodes=3, subnet="10.99.0.0/24", wheel_dir=wheel_dir)
    tb = cluster.Testbed(spec, [cluster.Node(f"node{i}", f"core-tb-node{i}", f"10.99.0.{10 + i}")
                                for i in (1, 2, 3)])
    tb.dir.mkdir(parents=True)
    return tb


def test_write_inventory_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    tb = _testbed(tmp_path, monkeypatch, str(wheels))
    path = cluster.write_inventory(tb)
    assert path == tmp_path / "home" / "testbed" / "core-tb" / "inventory.yml"
    text = path.read_text()
    assert text.startswith("# Written by `sccnlp testbed up --name core-tb`")
    data = yaml.safe_load(text)
    assert list(data) == ["all"]
    group = data["all"]["children"]["scc_cluster"]
    assert group["hosts"] == {"node1": {"ansible_host": "10.99.0.11"}, "node2": {"ansible_host": "10.99.0.12"},
                              "node3": {"ansible_host": "10.99.0.13"}}
    v = group["vars"]
    assert v["ansible_user"] == "root"
    assert v["ansible_ssh_private_key_file"] == str(tb.key)
    ssh_args = v["ansible_ssh_common_args"].split()
    assert f"UserKnownHostsFile={tb.known_hosts}" in ssh_args
    assert "StrictHostKeyChecking=yes" in ssh_args
    assert v["gpu_count"] == 0
    assert v["rdma"] is False
    assert v["scc_unsafe_writes"] is True
    assert v["scc_shared_dir"] == "/mnt/shared"
    assert v["cpfs_client_glusterfs_volume"] == "node1:/gv0"
    assert v["python36_pip_find_links"] == [str(wheels)]
    assert "StrictHostKeyChecking=no" not in text
    assert "StrictHostKeyChecking no" not in text
    assert "StrictHostKeyChecking=no" not in text.replace(" ", "")
    assert "tensorflow_enabled" not in v  # the runtime roles' default: no TensorFlow
    tb.spec.tensorflow = True  # sccnlp up --tensorflow
    assert yaml.safe_load(cluster.write_inventory(tb).read_text())["all"]["children"]["scc_cluster"]["vars"][
        "tensorflow_enabled"] is True


def test_write_inventory_without_a_wheel_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tb = _testbed(tmp_path, monkeypatch, str(tmp_path / "absent"))
    data = yaml.safe_load(cluster.write_inventory(tb).read_text())
    assert data["all"]["children"]["scc_cluster"]["vars"]["python36_pip_find_links"] == []


def test_written_inventory_parses_in_ansible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is an inventory Ansible reads: three hosts in scc_cluster with their addresses."""
    import json
    import subprocess
    import sys

    tb = _testbed(tmp_path, monkeypatch, None)
    path = cluster.write_inventory(tb)
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(path), "--list"],
                          capture_output=True, text=True, check=True)
    inv = json.loads(proc.stdout)
    assert sorted(inv["scc_cluster"]["hosts"]) == ["node1", "node2", "node3"]
    assert inv["_meta"]["hostvars"]["node2"]["ansible_host"] == "10.99.0.12"
    assert inv["_meta"]["hostvars"]["node2"]["ansible_ssh_common_args"].endswith("-o StrictHostKeyChecking=yes")


def test_node_addresses_follow_the_subnet(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """up() gives node i the address network + 10 + i; the test stops it at the first container start."""
    monkeypatch.setenv("SCCNLP_HOME", str(tmp_path))
    started: list[tuple[str, str, str]] = []

    class Stop(Exception):
        pass

    def start_node(tb: cluster.Testbed, node: cluster.Node, image: str, network: str) -> None:
        started.extend((n.name, n.container, n.ip) for n in tb.nodes)
        assert (image, network) == ("scc-testbed:unused", "core-tb-net")
        raise Stop

    monkeypatch.setattr(cluster.dk, "ensure_daemon", lambda *a, **k: None)
    monkeypatch.setattr(cluster, "build_image", lambda **k: "scc-testbed:unused")
    monkeypatch.setattr(cluster, "_ensure_network", lambda *a, **k: None)
    monkeypatch.setattr(cluster, "_allow_forwarding", lambda *a: None)
    monkeypatch.setattr(cluster, "_start_node", start_node)
    with pytest.raises(Stop):
        cluster.up(cluster.TestbedSpec(name="core-tb", nodes=3, subnet="172.31.8.0/24"), log=lambda _: None)
    assert started == [("node1", "core-tb-node1", "172.31.8.11"), ("node2", "core-tb-node2", "172.31.8.12"),
                       ("node3", "core-tb-node3", "172.31.8.13")]


def test_a_bundle_dir_without_offline_is_refused(no_docker: None, capsys: pytest.CaptureFixture[str]) -> None:
    """`sccnlp up --bundle-dir DIR` alone would build and use nothing: refused before the test bed starts."""
    rc = cli.main(["up", "--bundle-dir", "/srv/scc-bundle"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.strip() == ("sccnlp: error: --bundle-dir /srv/scc-bundle: only --offline builds and uses a bundle. "
                           "Fix: add --offline, or drop --bundle-dir")
