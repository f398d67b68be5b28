"""Installed Debian packages turned back into .deb files and a signed flat apt repository of them.

What `dpkg-repack` does, for a machine without it and without a network: each package's files (dpkg's file list),
control fields, conffiles, maintainer scripts and md5sums, as dpkg recorded them, built again with `dpkg-deb`. The
device check uses it to stand in for NVIDIA's repository on a GPU machine whose CUDA, NCCL and cuDNN came from
NVIDIA's packages (scripts/device/package_path.sh):

    python -m sccnlp.bundle.repack --out DIR [--maintainer REGEX] [--exclude REGEX] PACKAGE...

repacks the packages and their installed dependencies whose maintainer matches (NVIDIA's), never those the exclude
pattern names (the driver), and writes DIR/Packages, Packages.gz and Release next to them."""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from sccnlp.bundle.debian import parse_packages, write_index

STATUS = Path("/var/lib/dpkg/status")
INFO = Path("/var/lib/dpkg/info")
# Fields dpkg keeps about the installation, not the package.
_LOCAL_FIELDS = ("Status", "Conffiles", "Config-Version")
_SCRIPTS = ("preinst", "postinst", "prerm", "postrm", "config", "templates", "triggers", "shlibs", "symbols")
# Driver and kernel parts: never repacked or removed (the GPU must keep working).
DRIVER = (r"^(nvidia-(driver|dkms|kernel|firmware|utils|compute-utils|settings|prime|modprobe|persistenced"
          r"|fabricmanager)|libnvidia-|cuda-drivers|xserver-xorg-video-nvidia|linux-)")


def installed(status_text: str) -> dict[str, dict[str, str]]:
    """Installed packages of a dpkg status file, by name (the first architecture seen for a multi-arch name)."""
    out: dict[str, dict[str, str]] = {}
    for fields in parse_packages(status_text):
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            out.setdefault(fields["Package"], fields)
    return out


def depends(fields: Mapping[str, str]) -> list[list[str]]:
    """Depends and Pre-Depends as alternatives of package names (versions and architectures dropped)."""
    groups = []
    for key in ("Pre-Depends", "Depends"):
        for group in filter(None, (g.strip() for g in fields.get(key, "").replace("\n", " ").split(","))):
            groups.append([re.split(r"[\s(:]", alt.strip(), maxsplit=1)[0] for alt in group.split("|")])
    return groups


def closure(packages: Mapping[str, Mapping[str, str]], roots: Iterable[str], maintainer: str = "",
            exclude: str = DRIVER) -> list[str]:
    """The roots and the installed packages they depend on, transitively, whose Maintainer matches `maintainer`
    (all when empty) and whose name `exclude` does not match; sorted. A root that is not installed raises KeyError."""
    keep = re.compile(maintainer, re.I) if maintainer else None
    skip = re.compile(exclude) if exclude else None
    todo = list(roots)
    for name in todo:
        if name not in packages:
            raise KeyError(f"{name} is not installed")
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for group in depends(packages[name]):
            for alt in group:
                fields = packages.get(alt)
                if fields is None or (skip and skip.search(alt)):
                    continue
                if keep and not keep.search(fields.get("Maintainer", "")):
                    continue
                todo.append(alt)
                break
    return sorted(seen)


def control_text(fields: Mapping[str, str]) -> str:
    """DEBIAN/control from dpkg's status paragraph: the installation's own fields left out."""
    return "".join(f"{k}: {v}\n" for k, v in fields.items() if k not in _LOCAL_FIELDS)


def conffiles(fields: Mapping[str, str]) -> list[str]:
    """Conffile paths from the status paragraph (` /etc/x md5` lines; obsolete ones included, as dpkg-repack does)."""
    return [line.split()[0] for line in fields.get("Conffiles", "").splitlines() if line.strip()]


def _info(info: Path, name: str, arch: str, suffix: str) -> Path | None:
    for stem in (f"{name}:{arch}", name):
        path = info / f"{stem}.{suffix}"
        if path.exists():
            return path
    return None


def repack(fields: Mapping[str, str], out: Path, info: Path = INFO, root: Path = Path("/"),
           compression: str = "none") -> Path:
    """One installed package as a .deb in `out` (NAME_VERSION_ARCH.deb, the version's epoch dropped)."""
    name, version, arch = fields["Package"], fields["Version"], fields.get("Architecture", "all")
    listing = _info(info, name, arch, "list")
    if listing is None:
        raise FileNotFoundError(f"dpkg has no file list for {name}")
    deb = out / f"{name}_{version.split(':')[-1]}_{arch}.deb"
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        stage = Path(tmp)
        paths = [rel for rel in (line.strip().lstrip("/") for line in listing.read_text().splitlines()) if rel]
        # A listed path that other listed paths lie under was a folder in the package, even where the system has
        # a link there now (merged /usr: /bin -> usr/bin).
        parents = {str(Path(rel).parent) for rel in paths}
        for rel in paths:
            src, dst = root / rel, stage / rel
            if rel in parents:
                dst.mkdir(parents=True, exist_ok=True)
            elif src.is_symlink():
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.symlink_to(src.readlink())
            elif src.is_dir():
                dst.mkdir(parents=True, exist_ok=True)
                shutil.copymode(src, dst)
            elif src.exists():   # a file removed by hand since is left out, as dpkg-repack does
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
        control = stage / "DEBIAN"
        control.mkdir()
        (control / "control").write_text(control_text(fields))
        if conf := [c for c in conffiles(fields) if (stage / c.lstrip("/")).exists()]:
            (control / "conffiles").write_text("\n".join(conf) + "\n")
        for suffix in (*_SCRIPTS, "md5sums"):
            if (path := _info(info, name, arch, suffix)) is not None:
                shutil.copy2(path, control / suffix)
        subprocess.run(["dpkg-deb", "--root-owner-group", f"-Z{compression}", "--build", str(stage), str(deb)],
                       check=True, capture_output=True, text=True)
    return deb


def packages_index(folder: Path) -> str:
    """The Packages index of the .deb files in `folder` (what dpkg-scanpackages writes: the control paragraph with
    Filename, Size and hashes), from `dpkg-deb --field` alone."""
    paragraphs = []
    for deb in sorted(folder.glob("*.deb")):
        control = subprocess.run(["dpkg-deb", "--field", str(deb)], check=True, capture_output=True,
                                 text=True).stdout.rstrip("\n")
        data = deb.read_bytes()
        paragraphs.append(f"{control}\nFilename: ./{deb.name}\nSize: {len(data)}\n"
                          f"MD5sum: {hashlib.md5(data).hexdigest()}\nSHA256: {hashlib.sha256(data).hexdigest()}\n")
    return "\n".join(paragraphs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Repack installed Debian packages into a flat apt repository.")
    parser.add_argument("--out", type=Path, required=True, help="the repository folder (created)")
    parser.add_argument("--maintainer", default="", help="follow dependencies only to packages of this maintainer")
    parser.add_argument("--exclude", default=DRIVER, help="never repack packages whose name matches")
    parser.add_argument("--status", type=Path, default=STATUS, help=argparse.SUPPRESS)
    parser.add_argument("roots", nargs="+", help="installed packages to repack, with their dependencies")
    args = parser.parse_args(argv)
    packages = installed(args.status.read_text())
    try:
        names = closure(packages, args.roots, args.maintainer, args.exclude)
    except KeyError as exc:
        print(f"sccnlp.bundle.repack: {exc.args[0]}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        print(repack(packages[name], args.out).name)
    write_index(args.out, packages_index(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
