"""Bundle files named by URL: fetched once into files/, checked against the setting's sha256, reused on a re-run,
refused (and not kept) when the sha256 differs; a URL's credentials never appear in a message or the manifest."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sccnlp.bundle import urls as u

DATA = b"openmpi tarball bytes"


def _item(url: str, data: bytes = DATA) -> u.UrlArtefact:
    return u.UrlArtefact("openmpi", "openmpi_source_url", url, hashlib.sha256(data).hexdigest())


def test_fetch_verify_and_reuse_from_a_file_url(tmp_path: Path) -> None:
    src = tmp_path / "src" / "openmpi-4.1.6.tar.bz2"
    src.parent.mkdir()
    src.write_bytes(DATA)
    item = _item(src.as_uri())
    bundle = tmp_path / "b"
    done, unfetched, reused = u.fetch(bundle, [item])
    assert done == [item] and not unfetched and reused == 0
    assert (bundle / "files" / "openmpi-4.1.6.tar.bz2").read_bytes() == DATA
    done, unfetched, reused = u.fetch(bundle, [item])
    assert done == [item] and reused == 1


def test_a_different_file_is_not_kept_and_credentials_are_not_shown(tmp_path: Path) -> None:
    def download(url: str, dest: Path, timeout: float) -> None:
        dest.write_bytes(b"a substitute")

    item = _item("https://user:s3cret@mirror.example/openmpi-4.1.6.tar.bz2?X-Sig=abc")
    done, unfetched, _reused = u.fetch(tmp_path, [item], download=download)
    why = unfetched["openmpi_source_url"]
    assert not done and "https://mirror.example/openmpi-4.1.6.tar.bz2 has sha256" in why
    assert "s3cret" not in why and "X-Sig" not in why
    assert list((tmp_path / "files").iterdir()) == []


def test_a_failed_download_is_named_without_credentials(tmp_path: Path) -> None:
    def download(url: str, dest: Path, timeout: float) -> None:
        raise OSError(f"connection refused for {url}")

    item = _item("https://user:s3cret@mirror.example/x.tar.bz2")
    _done, unfetched, _reused = u.fetch(tmp_path, [item], download=download)
    assert unfetched["openmpi_source_url"].startswith("https://mirror.example/x.tar.bz2: ")


def test_artefacts_follow_the_methods_and_want_a_sha256() -> None:
    sha = "CD" * 32
    s = {"cuda_method": "adopt", "cuda_runfile_url": "https://n.example/cuda.run", "cuda_runfile_checksum": sha,
         "nccl_tests_src": "https://g.example/nccl-tests.tar.gz", "nccl_tests_sha256": f"sha256:{sha}",
         "aiacc_wheel_url": "https://a.example/p.whl"}
    found, missing = u.artefacts("n1", s, ["cuda", "nccl_tests", "aiacc"])
    assert [(x.setting, x.sha256) for x in found] == [("nccl_tests_src", sha.lower())]
    assert missing == {"aiacc_wheel_url": "n1: aiacc_wheel_sha256 is not a sha256 (64 hex digits), so the bundle "
                                          "cannot check https://a.example/p.whl; set aiacc_wheel_sha256"}
    assert u.artefacts("n1", s, ["cuda"]) == ([], {})
