"""Thin helpers over the docker CLI, and starting a daemon when none answers."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from sccnlp.errors import SccError

DOCKERD_LOG = Path("/var/log/sccnlp-dockerd.log")


def docker() -> str:
    path = shutil.which("docker")
    if path is None:
        raise SccError("docker is not installed: apt-get install -y docker.io")
    return path


def daemon_answers() -> bool:
    return subprocess.run([docker(), "info"], capture_output=True, check=False).returncode == 0


def ensure_daemon(log: Callable[[str], None] = print, timeout: float = 30.0) -> None:
    """Start dockerd in the background when no daemon answers and we run as root."""
    if daemon_answers():
        return
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise SccError("no Docker daemon answers and dockerd is not installed: apt-get install -y docker.io")
    if os.geteuid() != 0:
        raise SccError("no Docker daemon answers: start one (sudo dockerd &) or run sccnlp testbed as root")
    log("starting dockerd")
    with DOCKERD_LOG.open("ab") as out:
        subprocess.Popen([dockerd], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon_answers():
            return
        time.sleep(0.5)
    raise SccError(f"dockerd did not answer within {timeout:.0f} s: see {DOCKERD_LOG}")


def image_exists(tag: str) -> bool:
    return subprocess.run([docker(), "image", "inspect", tag], capture_output=True, check=False).returncode == 0


def run(args: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([docker(), *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise SccError(f"docker {' '.join(args[:2])} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc
