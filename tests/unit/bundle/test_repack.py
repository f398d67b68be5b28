"""sccnlp.bundle.repack: the dependency closure on a recorded status, and a real repack of a package installed on
this machine, checked file by file against dpkg's own md5sums and read back by apt from the flat repository."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sccnlp.bundle import repack

STATUS = """\
Package: cuda-toolkit-13-0
Status: install ok installed
Maintainer: cudatools <cudatools@nvidia.com>
Architecture: amd64
Version: 13.0.2-1
Depends: cuda-compiler-13-0 (>= 13.0.88), cuda-libraries-13-0 (>= 13.0.2), libc6

Package: cuda-compiler-13-0
Status: install ok installed
Maintainer: cudatools <cudatools@nvidia.com>
Architecture: amd64
Version: 13.0.2-1
Depends: cuda-nvcc-13-0 | cuda-nvcc-alt, nvidia-driver-580

Package: cuda-nvcc-13-0
Status: install ok installed
Maintainer: cudatools <cudatools@nvidia.com>
Architecture: amd64
Version: 13.0.88-1
Pre-Depends: libc6:amd64 (>= 2.17)

Package: cuda-libraries-13-0
Status: deinstall ok config-files
Maintainer: cudatools <cudatools@nvidia.com>
Architecture: amd64
Version: 13.0.2-1

Package: nvidia-driver-580
Status: install ok installed
Maintainer: NVIDIA <linux-bugs@nvidia.com>
Architecture: amd64
Version: 580.159.04-1

Package: libc6
Status: install ok installed
Maintainer: GNU Libc Maintainers <debian-glibc@lists.debian.org>
Architecture: amd64
Version: 2.39-0ubuntu8
"""


def test_closure_follows_nvidia_packages_and_never_the_driver() -> None:
    packages = repack.installed(STATUS)
    assert "cuda-libraries-13-0" not in packages   # only config files left: not installed
    names = repack.closure(packages, ["cuda-toolkit-13-0"], maintainer="nvidia")
    assert names == ["cuda-compiler-13-0", "cuda-nvcc-13-0", "cuda-toolkit-13-0"]


def test_closure_without_a_maintainer_filter_still_leaves_the_driver_out() -> None:
    names = repack.closure(repack.installed(STATUS), ["cuda-compiler-13-0"])
    assert "nvidia-driver-580" not in names and "libc6" in names


def test_a_root_that_is_not_installed_is_named() -> None:
    with pytest.raises(KeyError, match="cuda-libraries-13-0"):
        repack.closure(repack.installed(STATUS), ["cuda-libraries-13-0"])


def test_control_drops_the_installation_fields() -> None:
    fields = repack.installed(STATUS)["cuda-nvcc-13-0"]
    text = repack.control_text(fields)
    assert "Status:" not in text and text.startswith("Package: cuda-nvcc-13-0\n")
    assert "Pre-Depends: libc6:amd64 (>= 2.17)\n" in text


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg (a Debian machine)")
def test_repack_an_installed_package_and_read_it_back_with_apt(tmp_path: Path) -> None:
    name = "hostname"
    out = tmp_path / "repo"
    maintainer = subprocess.run(["dpkg-query", "-W", "-f=${Maintainer}", name], capture_output=True, text=True,
                                check=True).stdout
    assert repack.main(["--out", str(out), "--maintainer", re.escape(maintainer), name]) == 0
    debs = list(out.glob(f"{name}_*.deb"))
    assert len(debs) == 1, sorted(p.name for p in out.iterdir())
    deb = debs[0]
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True,
                             check=True).stdout
    fields = subprocess.run(["dpkg-deb", "--field", str(deb), "Package", "Version"], capture_output=True,
                            text=True, check=True).stdout
    assert fields == f"Package: {name}\nVersion: {version}\n"
    # Every file dpkg recorded a checksum for is in the .deb with that checksum.
    unpacked = tmp_path / "x"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
    md5sums = Path(f"/var/lib/dpkg/info/{name}.md5sums").read_text().split("\n")
    checked = 0
    for line in filter(None, md5sums):
        digest, rel = line.split(maxsplit=1)
        assert hashlib.md5((unpacked / rel).read_bytes()).hexdigest() == digest, rel
        checked += 1
    assert checked > 0
    # apt reads the flat repository and offers the repacked version from it.
    state = tmp_path / "apt"
    (state / "lists" / "partial").mkdir(parents=True)
    (state / "cache" / "archives" / "partial").mkdir(parents=True)
    sources = tmp_path / "sources.list"
    sources.write_text(f"deb [trusted=yes] file:{out} ./\n")
    opts = [f"-oDir::Etc::SourceList={sources}", "-oDir::Etc::SourceParts=/dev/null",
            f"-oDir::State::Lists={state / 'lists'}", f"-oDir::Cache={state / 'cache'}",
            "-oDir::State::status=/var/lib/dpkg/status"]
    subprocess.run(["apt-get", *opts, "update"], check=True, capture_output=True, text=True)
    policy = subprocess.run(["apt-cache", *opts, "policy", name], check=True, capture_output=True, text=True).stdout
    assert f"file:{out} ./ Packages" in policy, policy
