"""The Debian packages of a bundle, resolved for the nodes, not for the controller: apt runs inside a throwaway
container of the nodes' image (`docker run --rm IMAGE`, the bundle bind-mounted), simulates each role's install to
learn the packages it pulls in that the image lacks, and downloads them (`apt-get install --download-only` into the
bundle: apt keeps files that already match its index, so a re-run downloads nothing new). The folder is then made a
flat apt repository (Packages, Packages.gz, Release) that the nodes use as `deb [trusted=yes] file:DIR/deb ./`; the
manifest's sha256 of every file is what is checked before anything is installed from it."""

from __future__ import annotations

import gzip
import hashlib
import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sccnlp.errors import SccError

DEB = "deb"
MOUNT = "/bundle"
_ARCH = {"amd64": "x86_64", "arm64": "aarch64"}
_INST = re.compile(r"^Inst (?P<name>\S+) (?:\[[^\]]*\] )?\((?P<version>\S+) ")
_PACKAGE_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$")


@dataclass(frozen=True)
class Deb:
    name: str
    version: str
    file: str  # relative to the bundle: deb/<file>
    role: str


def check_names(packages_by_role: Mapping[str, Sequence[str]]) -> None:
    """Refuse a package name that is not one (they go into a shell script)."""
    for role, packages in packages_by_role.items():
        for package in packages:
            if not _PACKAGE_NAME.match(package):
                raise SccError(f"{role}: {package!r} is not a Debian package name (name or name=version); fix the "
                               "role's package setting in the inventory")


# Roles whose apt task installs without Recommends (install_recommends: false); the others get apt's default.
NO_RECOMMENDS = frozenset({"python36", "openmpi", "cpfs_client"})


def _flags(role: str) -> str:
    return "--no-install-recommends" if role in NO_RECOMMENDS else "--install-recommends"


def script(packages_by_role: Mapping[str, Sequence[str]], owner: str = "") -> str:
    """The shell script run in the container: target, apt-get update, one simulation per role and package (to name
    a package that does not resolve), then the download of every package that resolved; the files are given to
    `owner` (uid:gid, the controller's user) at the end."""
    check_names(packages_by_role)
    if owner and not re.fullmatch(r"\d+:\d+", owner):
        raise SccError(f"owner {owner!r} is not uid:gid")
    lines = [
        "set -u", "export DEBIAN_FRONTEND=noninteractive", f"W={MOUNT}/.work", f"mkdir -p $W/sim {MOUNT}/{DEB}/partial",
        ": > $W/download.log", ": > $W/removed.txt",
        ". /etc/os-release", 'echo "$ID-$VERSION_ID $(dpkg --print-architecture)" > $W/target',
        "apt-get update -q > $W/update.log 2>&1 || { tail -n 5 $W/update.log >&2; exit 3; }",
        # apt keeps a file already in the archives folder when its size is right: first remove every file whose
        # sha256 is not the one the mirror's (signed) index gives for that package and version.
        f"for f in {MOUNT}/{DEB}/*.deb; do",
        '  [ -e "$f" ] || continue',
        '  p=$(dpkg-deb -f "$f" Package 2>/dev/null); v=$(dpkg-deb -f "$f" Version 2>/dev/null)',
        '  if [ -n "$p" ] && [ -n "$v" ]; then echo "$p=$v $(sha256sum "$f" | cut -d " " -f 1) $f"; '
        'else echo "- - $f"; fi',
        "done > $W/have.txt",
        "grep -v '^- ' $W/have.txt | cut -d ' ' -f 1 | xargs -r apt-cache show --no-all-versions 2>/dev/null "
        "| awk '/^Package: /{p=$2} /^Version: /{v=$2} /^SHA256: /{print p \"=\" v \" \" $2}' > $W/want.txt",
        'while read -r pv have f; do grep -qxF "$pv $have" $W/want.txt || { echo "$f" >> $W/removed.txt; '
        'rm -f "$f"; }; done < $W/have.txt',
    ]
    for role, packages in packages_by_role.items():
        lines.append("ok=''")
        for package in packages:
            out = f"$W/sim/{role}--{package}"
            lines.append(f"if apt-get install -s -y {_flags(role)} {shlex.quote(package)} > {out} 2>&1; "
                         f"then ok=\"$ok {package}\"; fi")
        # One download per role, with the role's Recommends setting; files an earlier role fetched are kept.
        lines += [
            'if [ -n "$ok" ]; then',
            f"  apt-get install --download-only -y {_flags(role)} -o APT::Sandbox::User=root "
            f"-o Dir::Cache::archives={MOUNT}/{DEB} $ok >> $W/download.log 2>&1 "
            "|| { tail -n 5 $W/download.log >&2; exit 4; }",
            "fi",
        ]
    lines.append(f"rm -rf {MOUNT}/{DEB}/partial {MOUNT}/{DEB}/lock")
    if owner:
        lines.append(f"chown -R {owner} {MOUNT}/{DEB} $W")
    return "\n".join(lines) + "\n"


def parse_simulation(text: str) -> tuple[dict[str, str], str]:
    """({package: version} apt would install, the first error line or '')."""
    installs: dict[str, str] = {}
    errors = []
    for line in text.splitlines():
        found = _INST.match(line)
        if found:
            installs[found.group("name")] = found.group("version")
        elif line.startswith("E: "):
            errors.append(line[3:].strip())
    return installs, (errors[0] if errors else "")


def parse_target(text: str) -> tuple[str, str]:
    """(release, arch) from the container's 'ID-VERSION_ID dpkg-arch' line: ('debian-12', 'x86_64')."""
    parts = text.split()
    if len(parts) != 2:
        raise SccError(f"the node image did not report its release and architecture ({text.strip()!r}); "
                       "set scc_bundle_image to a Debian image of the nodes")
    return parts[0], _ARCH.get(parts[1], parts[1])


def parse_packages(text: str) -> list[dict[str, str]]:
    """The paragraphs of an apt Packages index (continuation lines folded into their field)."""
    out: list[dict[str, str]] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        fields: dict[str, str] = {}
        key = ""
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += "\n" + line
            elif ":" in line:
                key, _sep, value = line.partition(":")
                fields[key] = value.strip()
        if fields:
            out.append(fields)
    return out


def release_text(files: Mapping[str, bytes], now: datetime | None = None) -> str:
    """A flat repository's Release: the date and the size and sha256 of each index file."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%a, %d %b %Y %H:%M:%S UTC")
    lines = ["Origin: scc.nlp_training bundle", "Label: scc.nlp_training bundle", f"Date: {stamp}", "SHA256:"]
    for name in sorted(files):
        data = files[name]
        lines.append(f" {hashlib.sha256(data).hexdigest()} {len(data):>12} {name}")
    return "\n".join(lines) + "\n"


def scan_packages(folder: Path, run: Any = subprocess.run) -> str:
    """The Packages index of a folder of .deb files (Filename: ./NAME.deb), by dpkg-scanpackages or apt-ftparchive,
    whichever the controller has."""
    if shutil.which("dpkg-scanpackages"):
        argv = ["dpkg-scanpackages", "--multiversion", ".", "/dev/null"]
    elif shutil.which("apt-ftparchive"):
        argv = ["apt-ftparchive", "packages", "."]
    else:
        raise SccError("the controller has neither dpkg-scanpackages nor apt-ftparchive to index the bundle's "
                       "Debian packages: install dpkg-dev (apt-get install dpkg-dev) or apt-utils")
    proc = run(argv, cwd=folder, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SccError(f"{argv[0]} failed in {folder}: {' '.join(proc.stderr.split())[-300:]}")
    return str(proc.stdout)


def write_index(folder: Path, packages: str) -> list[str]:
    """Packages, Packages.gz and Release in the folder; their names."""
    raw = packages.encode()
    gz = gzip.compress(raw, mtime=0)
    (folder / "Packages").write_bytes(raw)
    (folder / "Packages.gz").write_bytes(gz)
    (folder / "Release").write_text(release_text({"Packages": raw, "Packages.gz": gz}))
    return ["Packages", "Packages.gz", "Release"]


def docker_check(image: str, run: Any = subprocess.run) -> None:
    """Refuse a controller without docker, without a running daemon, or without the nodes' image."""
    if not shutil.which("docker"):
        raise SccError("docker is not installed on the controller: the bundle resolves the nodes' Debian packages in "
                       "a container of their image. Fix: apt-get install docker.io and start dockerd")
    proc = run(["docker", "image", "inspect", "--format", "{{.Id}}", image], capture_output=True, text=True,
               check=False)
    if proc.returncode != 0:
        err = " ".join(proc.stderr.split())
        if "daemon" in err.lower() or "connect" in err.lower():
            raise SccError(f"the Docker daemon does not answer ({err[:200]}). Fix: start it (dockerd)")
        raise SccError(f"scc_bundle_image {image} is not a local image. Fix: build it (sccnlp testbed image) or set "
                       "scc_bundle_image to an image of the nodes' OS")


def run_container(bundle: Path, image: str, text: str, name: str, timeout: int = 1800,
                  run: Any = subprocess.run) -> None:
    """Run the script in a throwaway container of the image with the bundle mounted; SccError with apt's last lines
    when it fails."""
    argv = ["docker", "run", "--rm", "--name", name, "-v", f"{bundle.resolve()}:{MOUNT}", "--entrypoint", "bash",
            image, "-c", text]
    try:
        proc = run(argv, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        raise SccError(f"apt in the container of {image} took more than {timeout} s; check the nodes' package mirror "
                       "(the image's /etc/apt/sources.list) and re-run: what was downloaded is kept") from None
    if proc.returncode != 0:
        what = {3: "apt-get update", 4: "the download"}.get(proc.returncode, "the container")
        raise SccError(f"{what} failed in a container of {image}: {' '.join(proc.stderr.split())[-400:]}. Fix: give "
                       "the controller's containers a route to the nodes' package mirror, then re-run")


def collect(bundle: Path, packages_by_role: Mapping[str, Sequence[str]]) -> tuple[list[Deb], dict[str, str]]:
    """After the container ran: the downloaded files attributed to the first role that pulls them in (the order of
    packages_by_role), and what did not resolve or download (package -> why). Files no role needs are removed."""
    work = bundle / ".work" / "sim"
    folder = bundle / DEB
    wanted: dict[str, tuple[str, str]] = {}  # package -> (version, role)
    unfetched: dict[str, str] = {}
    for role, packages in packages_by_role.items():
        for package in packages:
            path = work / f"{role}--{package}"
            text = path.read_text(errors="replace") if path.is_file() else ""
            installs, error = parse_simulation(text)
            if error or not path.is_file():
                unfetched[f"{package} (for {role})"] = error or "apt did not run for it"
                continue
            for name, version in installs.items():
                wanted.setdefault(name, (version, role))
    files = {}
    for deb in sorted(folder.glob("*.deb")):
        name, _sep, rest = deb.name.partition("_")
        version = rest.rsplit("_", 1)[0].replace("%3a", ":")
        if name in wanted and wanted[name][0] == version:
            files[name] = deb.name
        else:
            deb.unlink()
    debs = []
    for name, (version, role) in sorted(wanted.items()):
        if name in files:
            debs.append(Deb(name, version, f"{DEB}/{files[name]}", role))
        else:
            unfetched[f"{name} {version} (for {role})"] = ("apt resolved it but did not download it; see "
                                                           ".work/download.log")
    return debs, unfetched
