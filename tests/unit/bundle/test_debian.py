"""Bundle Debian packages: the container script, apt's simulation output, the files attributed to the first role
that pulls them in, stale files removed, the flat repository index, and the refusals for a controller without
docker or without the nodes' image."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from sccnlp.bundle import debian as d
from sccnlp.errors import SccError

SIM = """NOTE: This is only a simulation!
Inst libfuse3-3 (3.14.0-4 Debian:12.12/stable [amd64])
Inst fuse3 [3.14.0-3] (3.14.0-4 Debian:12.12/stable [amd64])
Inst glusterfs-client (10.3-5 Debian:12.12/stable [amd64])
Conf glusterfs-client (10.3-5 Debian:12.12/stable [amd64])
"""


def test_simulation_lists_installs_and_errors() -> None:
    assert d.parse_simulation(SIM) == ({"libfuse3-3": "3.14.0-4", "fuse3": "3.14.0-4",
                                        "glusterfs-client": "10.3-5"}, "")
    assert d.parse_simulation("E: Unable to locate package nope\n") == ({}, "Unable to locate package nope")


def test_script_simulates_each_package_then_downloads_into_the_bundle() -> None:
    text = d.script({"cpfs_client": ["glusterfs-client"], "openmpi": ["openmpi-bin=4.1.4-3+b1"]})
    assert "apt-get update" in text
    assert "apt-get install -s -y --no-install-recommends glusterfs-client > $W/sim/cpfs_client--glusterfs-client" \
        in text
    bert = d.script({"bert": ["python3-doc"]})
    assert "apt-get install -s -y --install-recommends python3-doc" in bert  # the bert role's apt task keeps them
    assert "--download-only -y --install-recommends" in bert
    assert "openmpi-bin=4.1.4-3+b1 > $W/sim/openmpi--openmpi-bin=4.1.4-3+b1" in text
    assert "--download-only" in text and "Dir::Cache::archives=/bundle/deb" in text
    assert "chown" not in text
    # a file apt would keep for its size alone is checked against the mirror's index first
    assert text.index("apt-cache show --no-all-versions") < text.index("--download-only")
    assert d.script({"bert": ["python3-doc"]}, "1000:1000").endswith("chown -R 1000:1000 /bundle/deb $W\n")
    with pytest.raises(SccError, match="not uid:gid"):
        d.script({"bert": ["python3-doc"]}, "root; id")


@pytest.mark.parametrize("bad", ["x; rm -rf /", "$(id)", "Capital", "a b"])
def test_script_refuses_what_is_not_a_package_name(bad: str) -> None:
    with pytest.raises(SccError, match="not a Debian package name"):
        d.script({"bert": [bad]})


def test_target_line() -> None:
    assert d.parse_target("debian-12 amd64\n") == ("debian-12", "x86_64")
    assert d.parse_target("debian-12 arm64") == ("debian-12", "aarch64")
    with pytest.raises(SccError, match="scc_bundle_image"):
        d.parse_target("")


def _sim(bundle: Path, role: str, package: str, text: str) -> None:
    folder = bundle / ".work" / "sim"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{role}--{package}").write_text(text)


def test_collect_attributes_to_the_first_role_and_prunes(tmp_path: Path) -> None:
    _sim(tmp_path, "cpfs_client", "glusterfs-client", SIM)
    _sim(tmp_path, "bert", "fuse3", "Inst fuse3 (3.14.0-4 Debian:12.12/stable [amd64])\n")
    _sim(tmp_path, "bert", "nope", "E: Unable to locate package nope\n")
    deb = tmp_path / "deb"
    deb.mkdir()
    for name in ("libfuse3-3_3.14.0-4_amd64.deb", "fuse3_3.14.0-4_amd64.deb", "old_1.0_amd64.deb",
                 "fuse3_3.14.0-3_amd64.deb"):
        (deb / name).write_bytes(name.encode())
    debs, unfetched = d.collect(tmp_path, {"cpfs_client": ["glusterfs-client"], "bert": ["fuse3", "nope"]})
    assert [(x.name, x.role, x.file) for x in debs] == [
        ("fuse3", "cpfs_client", "deb/fuse3_3.14.0-4_amd64.deb"),
        ("libfuse3-3", "cpfs_client", "deb/libfuse3-3_3.14.0-4_amd64.deb")]
    assert sorted(p.name for p in deb.iterdir()) == ["fuse3_3.14.0-4_amd64.deb", "libfuse3-3_3.14.0-4_amd64.deb"]
    assert unfetched["nope (for bert)"] == "Unable to locate package nope"
    assert "apt resolved it but did not download it" in unfetched["glusterfs-client 10.3-5 (for cpfs_client)"]


def test_epoch_versions_match_their_file_names(tmp_path: Path) -> None:
    _sim(tmp_path, "python36", "python3-pip", "Inst libexpat1 (2:2.5.0-1 Debian:12.12/stable [amd64])\n")
    (tmp_path / "deb").mkdir()
    (tmp_path / "deb" / "libexpat1_2%3a2.5.0-1_amd64.deb").write_bytes(b"x")
    debs, unfetched = d.collect(tmp_path, {"python36": ["python3-pip"]})
    assert [x.version for x in debs] == ["2:2.5.0-1"] and not unfetched


def test_packages_paragraphs_and_release() -> None:
    text = "Package: a\nVersion: 1\nDescription: x\n more\n\nPackage: b\nVersion: 2\nFilename: ./b_2_amd64.deb\n"
    paragraphs = d.parse_packages(text)
    assert paragraphs[0]["Description"] == "x\n more" and paragraphs[1]["Filename"] == "./b_2_amd64.deb"
    release = d.release_text({"Packages": b"abc"}, datetime(2026, 12, 4, tzinfo=timezone.utc))
    assert "Date: Fri, 04 Dec 2026 00:00:00 UTC" in release
    assert f" {hashlib.sha256(b'abc').hexdigest()}            3 Packages" in release


def test_write_index(tmp_path: Path) -> None:
    assert d.write_index(tmp_path, "Package: a\n") == ["Packages", "Packages.gz", "Release"]
    assert gzip.decompress((tmp_path / "Packages.gz").read_bytes()) == b"Package: a\n"
    assert "Packages.gz" in (tmp_path / "Release").read_text()


def test_no_docker_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(d.shutil, "which", lambda name: None)
    with pytest.raises(SccError, match=r"docker is not installed.*apt-get install docker.io"):
        d.docker_check("img")


def _fake(rc: int, err: str) -> Any:
    def run(argv: list[str], **_kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, rc, "", err)
    return run


def test_missing_image_or_daemon_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(d.shutil, "which", lambda name: "/usr/bin/" + name)
    with pytest.raises(SccError, match=r"scc_bundle_image img is not a local image.*sccnlp testbed image"):
        d.docker_check("img", run=_fake(1, "Error: No such image: img"))
    with pytest.raises(SccError, match=r"daemon does not answer.*start it"):
        d.docker_check("img", run=_fake(1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock"))
    d.docker_check("img", run=_fake(0, ""))


def test_a_failed_container_names_the_step(tmp_path: Path) -> None:
    with pytest.raises(SccError, match="apt-get update failed in a container of img: Temporary failure"):
        d.run_container(tmp_path, "img", "true", "bnd-x", run=_fake(3, "Temporary failure resolving"))
