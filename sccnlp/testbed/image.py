"""Build the test-bed node image without any container registry: debootstrap + docker import, cached by recipe hash."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from sccnlp.errors import SccError
from sccnlp.testbed.docker import docker, image_exists

SUITE = "bookworm"
IMAGE_REPO = "scc-testbed"
# Base packages only at debootstrap time (a dev package there broke dependency resolution); extras go in afterwards.
BASE_PACKAGES = (
    "systemd", "systemd-sysv", "dbus", "openssh-server", "python3", "python3-apt", "iproute2", "iputils-ping",
    "procps", "sudo", "ca-certificates",
)
# The storage-service stand-in for CPFS (GlusterFS server); everything a node needs for training is installed by
# the collection's roles, not baked in.
EXTRA_PACKAGES = ("glusterfs-server", "locales")
# sshd needs host keys; generate them per container at first boot so every node has its own.
HOSTKEY_UNIT = """[Unit]
Description=Generate SSH host keys for this node
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target
"""
CACHE_DIR = Path(os.environ.get("SCCNLP_CACHE", "/var/cache/sccnlp"))


def recipe() -> dict[str, object]:
    return {"suite": SUITE, "base": BASE_PACKAGES, "extra": EXTRA_PACKAGES, "hostkey_unit": HOSTKEY_UNIT, "rev": 2}


def image_tag() -> str:
    digest = hashlib.sha256(json.dumps(recipe(), sort_keys=True).encode()).hexdigest()[:12]
    return f"{IMAGE_REPO}:{SUITE}-{digest}"


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise SccError(f"{what} failed ({' '.join(cmd[:3])} ...): {tail}")


def _chroot_apt(rootfs: Path, packages: tuple[str, ...]) -> None:
    policy = rootfs / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    script = (
        f"mount -t proc proc {rootfs}/proc && "
        f"chroot {rootfs} /usr/bin/env DEBIAN_FRONTEND=noninteractive "
        f"apt-get install -y -q --no-install-recommends {' '.join(packages)}; rc=$?; "
        f"umount {rootfs}/proc; exit $rc"
    )
    shutil.copy("/etc/resolv.conf", rootfs / "etc/resolv.conf")
    _run(["unshare", "--mount", "--fork", "sh", "-c", script], "installing test-bed extras in the rootfs")
    policy.unlink()


def _customise(rootfs: Path) -> None:
    for key in rootfs.glob("etc/ssh/ssh_host_*"):
        key.unlink()
    unit = rootfs / "etc/systemd/system/scc-ssh-hostkeys.service"
    unit.write_text(HOSTKEY_UNIT)
    wants = rootfs / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / unit.name
    if not link.exists():
        link.symlink_to(f"/etc/systemd/system/{unit.name}")
    # Units that make no sense (or hang) in a container.
    for name in ("systemd-resolved.service", "getty@tty1.service", "systemd-timesyncd.service"):
        (rootfs / "etc/systemd/system" / name).unlink(missing_ok=True)
        (rootfs / "etc/systemd/system" / name).symlink_to("/dev/null")
    (rootfs / "etc/locale.gen").write_text("en_US.UTF-8 UTF-8\n")
    (rootfs / "root/.ssh").mkdir(mode=0o700, exist_ok=True)
    (rootfs / "etc/machine-id").write_text("")
    (rootfs / "var/lib/apt/lists").mkdir(parents=True, exist_ok=True)


def build_image(force: bool = False, log: Callable[[str], None] = print) -> str:
    """Return the image tag, building it if the recipe changed or it is absent."""
    tag = image_tag()
    if image_exists(tag) and not force:
        return tag
    for tool in ("debootstrap", "unshare", "chroot"):
        if shutil.which(tool) is None:
            raise SccError(f"{tool} is not installed: apt-get install -y debootstrap util-linux (run as root)")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE_DIR, prefix="rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log(f"building {tag}: debootstrap {SUITE} (about a minute)")
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", SUITE, str(rootfs)],
             "debootstrap")
        log("installing extras: " + " ".join(EXTRA_PACKAGES))
        _chroot_apt(rootfs, EXTRA_PACKAGES)
        _customise(rootfs)
        _run(["sh", "-c", f"chroot {rootfs} apt-get clean && rm -rf {rootfs}/var/lib/apt/lists/*"], "apt clean")
        # No package lists in the image: make the folder old so `apt: cache_valid_time` updates on first use.
        os.utime(rootfs / "var/lib/apt/lists", (0, 0))
        log("importing the image")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        proc = subprocess.run(
            [docker(), "import", "--change", "ENV container=docker", "--change", 'CMD ["/lib/systemd/systemd"]',
             "-", tag], stdin=tar.stdout, capture_output=True, text=True, check=False)
        # Drop our end of the pipe: if docker import stopped reading early, tar gets EPIPE instead of blocking
        # forever on a full pipe (and tar.wait() with it).
        if tar.stdout is not None:
            tar.stdout.close()
        tar_rc = tar.wait()
        if proc.returncode != 0:
            raise SccError(f"docker import failed: {proc.stderr.strip()}")
        if tar_rc not in (0, 1):  # GNU tar: 1 = a file changed while read (harmless here), 2 = fatal
            raise SccError(f"packing the rootfs for docker import failed (tar exit code {tar_rc}): run "
                           "`sccnlp testbed image --force` again")
    _run([docker(), "tag", tag, f"{IMAGE_REPO}:{SUITE}"], "docker tag")
    return tag
