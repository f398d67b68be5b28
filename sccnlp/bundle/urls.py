"""Artefacts the roles download from a URL named in a setting (a runfile, a tarball, a wheel, a corpus), each with
the sha256 setting that goes with it: fetched once into the bundle's files/ folder and checked against that sha256.
A URL can carry credentials (a signed AIACC wheel URL): it is never printed or recorded whole, only as scheme, host
and path."""

from __future__ import annotations

import re
import shutil
import tempfile
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from sccnlp.bundle.manifest import safe_source
from sccnlp.node.filehash import sha256_file

FILES = "files"
_HEX = re.compile(r"^(sha256:)?(?P<hex>[0-9a-fA-F]{64})$")


def _is(key: str, value: str) -> Callable[[Mapping[str, Any]], bool]:
    return lambda s: str(s.get(key, "")) == value


def _always(_s: Mapping[str, Any]) -> bool:
    return True


def _firmware(s: Mapping[str, Any]) -> bool:
    return str(s.get("ib_check_firmware_update", "")).lower() in ("true", "1", "yes")


# (role, URL setting, sha256 setting, when the role downloads it with these settings)
URL_SETTINGS: tuple[tuple[str, str, str, Callable[[Mapping[str, Any]], bool]], ...] = (
    ("gpu_driver", "gpu_driver_runfile_url", "gpu_driver_runfile_checksum", _is("gpu_driver_method", "runfile")),
    ("cuda", "cuda_runfile_url", "cuda_runfile_checksum", _is("cuda_method", "runfile")),
    ("nccl", "nccl_tarball_url", "nccl_tarball_checksum", _is("nccl_method", "tarball")),
    ("cudnn", "cudnn_tarball_url", "cudnn_tarball_checksum", _is("cudnn_method", "tarball")),
    ("openmpi", "openmpi_source_url", "openmpi_source_checksum", _is("openmpi_method", "source")),
    ("aiacc", "aiacc_wheel_url", "aiacc_wheel_sha256", _always),
    ("aiacc", "aiacc_conda_archive", "aiacc_conda_sha256", _always),
    ("ib_check", "ib_check_firmware_url", "ib_check_firmware_sha256", _firmware),
    ("nccl_tests", "nccl_tests_src", "nccl_tests_sha256", _always),
    ("bert", "bert_corpus_url", "bert_corpus_sha256", _is("bert_corpus_source", "url")),
)
KEYS = (*(k for row in URL_SETTINGS for k in row[1:3]), "gpu_driver_method", "ib_check_firmware_update",
        "bert_corpus_source")


@dataclass(frozen=True)
class UrlArtefact:
    role: str
    setting: str
    url: str
    sha256: str

    @property
    def file(self) -> str:
        """files/<name> (the URL's last path segment; the sha256's first 12 digits when it has none)."""
        name = PurePosixPath(unquote(urlsplit(self.url).path)).name or self.sha256[:12]
        return f"{FILES}/{name}"


def artefacts(node: str, s: Mapping[str, Any], roles: Any) -> tuple[list[UrlArtefact], dict[str, str]]:
    """The URL artefacts of one node's settings (remote URLs only; a local path is the user's own copy), and the
    ones without a usable sha256 setting (setting -> why)."""
    found: list[UrlArtefact] = []
    missing: dict[str, str] = {}
    for role, url_key, sha_key, wanted in URL_SETTINGS:
        url = str(s.get(url_key) or "")
        if role not in roles or not url or urlsplit(url).scheme not in ("http", "https", "ftp") or not wanted(s):
            continue
        match = _HEX.match(str(s.get(sha_key) or "").strip())
        if not match:
            missing[url_key] = (f"{node}: {sha_key} is not a sha256 (64 hex digits), so the bundle cannot check "
                                f"{safe_source(url)}; set {sha_key}")
            continue
        found.append(UrlArtefact(role, url_key, url, match.group("hex").lower()))
    return found, missing


def _download(url: str, dest: Path, timeout: float) -> None:
    with urllib.request.urlopen(url, timeout=timeout) as response, dest.open("wb") as out:
        shutil.copyfileobj(response, out, 1 << 20)


def fetch(bundle: Path, items: list[UrlArtefact], download: Callable[[str, Path, float], None] = _download,
          timeout: float = 120) -> tuple[list[UrlArtefact], dict[str, str], int]:
    """Fetch what is missing or changed; (present and verified, unfetched setting -> why, reused count)."""
    folder = bundle / FILES
    folder.mkdir(parents=True, exist_ok=True)
    done: list[UrlArtefact] = []
    unfetched: dict[str, str] = {}
    reused = 0
    for item in items:
        path = bundle / item.file
        if path.is_file() and sha256_file(path) == item.sha256:
            reused += 1
            done.append(item)
            continue
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".part-", delete=False) as handle:
            part = Path(handle.name)
        try:
            download(item.url, part, timeout)
            digest = sha256_file(part)
        except (OSError, ValueError) as exc:
            part.unlink(missing_ok=True)
            reason = " ".join(str(getattr(exc, "reason", exc)).split())
            unfetched[item.setting] = f"{safe_source(item.url)}: {reason[:200]}"
            continue
        if digest != item.sha256:
            part.unlink()
            unfetched[item.setting] = (f"{safe_source(item.url)} has sha256 {digest}, not the {item.sha256} the "
                                       "setting expects; nothing was kept")
            continue
        part.replace(path)
        done.append(item)
    return done, unfetched, reused
