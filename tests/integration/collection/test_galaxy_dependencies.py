"""The tarball as a user with ansible-core alone gets it: a fresh virtual environment with only the pinned
ansible-core (requirements/ci.txt), `ansible-galaxy collection install` of the built tarball together with the
collections galaxy.yml declares, then the modules of those collections run from the install folder through the roles.

The dependency ranges are proven at both ends (parametrized `oldest`/`newest`): the collections of the oldest
`ansible` package on a supported ansible-core (11.0.0: community.general 10.0.1, ansible.posix 1.6.2) and of the
newest on the Python registry (14.5.0: community.general 13.5.0, ansible.posix 2.2.2). Each `ansible` wheel is
fetched once with `pip download --no-deps` into .cache/ansible-wheels/ (reused when present) and its sha256 checked
against the pin in ANSIBLE_ENDS; only the declared collections and what they need in turn (community.general 13 needs
community.library_inventory_filtering_v1) are read from it (zipfile). No Galaxy access: each dependency tarball is
`ansible-galaxy collection build` of those files, its MANIFEST.json turned back into a galaxy.yml. Without them the
install refuses (the dependencies are declared). Each check also runs against an install made with --no-deps and must
fail there on the module name (ansible-core 2.19 resolves module names when a task runs, not when it loads), so it
proves the dependency is what makes it pass. On this host, in check mode: cpfs_client's mount step
(ansible.posix.mount); the package-locking task files load, and community.general.dnf_versionlock itself runs up to
its own first check (no dnf on Debian; locking for real needs a RHEL-family node).

Its cost is in docs/BENCHMARKS.md (ecosystem checks)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from sccnlp.bundle.collections import build_installed
from sccnlp.node.filehash import sha256_file

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
FQCN = f"{GALAXY['namespace']}.{GALAXY['name']}"
DEPENDENCIES: dict[str, str] = GALAXY.get("dependencies") or {}


class AnsibleEnd(NamedTuple):
    """One end of the supported range: an `ansible` package, its wheel's sha256, a Python its wheel installs on."""

    version: str
    sha256: str
    python: str  # pip download --python-version: 14.x requires Python >= 3.12, the controller's may be older


# The oldest `ansible` package on the lowest supported ansible-core (2.18) and the newest on the Python registry.
# Moving an end: change the version and the sha256 (of the wheel pip downloads), then galaxy.yml's ranges if needed.
ANSIBLE_ENDS = {
    "oldest": AnsibleEnd("11.0.0", "367f6acc8e927575f1ce31c3f3c23f0ed15b1d03086997803226cd948745dce2", "3.11"),
    "newest": AnsibleEnd("14.5.0", "245623ccc2d31d0f6f4bdb63168d550cad305fb032cc43d96e8f61ce8ab0ba84", "3.12"),
}
WHEELS = ROOT / ".cache" / "ansible-wheels"  # gitignored; kept between runs
TASK_KEY = re.compile(r"^\s*(?:- )?([a-z0-9_]+\.[a-z0-9_]+)\.([a-z0-9_]+):\s*(?:$|[^\s])", re.M)


def _pin(name: str) -> str:
    for line in (ROOT / "requirements" / "ci.txt").read_text().splitlines():
        if line.lower().startswith(f"{name}=="):
            return line.strip()
    raise AssertionError(f"requirements/ci.txt pins no {name}")


def _env(collections_path: Path, venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=os.pathsep.join((str(venv / "bin"), "/usr/bin", "/bin")), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_CONFIG=str(collections_path / "ansible.cfg"))
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300)


def _explain(proc: subprocess.CompletedProcess[str]) -> str:
    return f"`{' '.join(map(str, proc.args))}` exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def _uses() -> dict[str, set[tuple[str, str]]]:
    """Collection -> {(role, tasks file relative to tasks/)} of every role task file that calls one of its modules."""
    uses: dict[str, set[tuple[str, str]]] = {}
    for path in sorted((ROOT / "roles").glob("*/tasks/**/*.yml")):
        for match in TASK_KEY.finditer(path.read_text()):
            if match.group(1) not in ("ansible.builtin", FQCN):
                role = path.relative_to(ROOT / "roles").parts[0]
                tasks_from = path.relative_to(ROOT / "roles" / role / "tasks").as_posix()
                uses.setdefault(match.group(1), set()).add((role, tasks_from))
    return uses


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("core-only")


@pytest.fixture(scope="module")
def core_venv(work: Path) -> Path:
    """A virtual environment with the pinned ansible-core and its own requirements, nothing else."""
    venv = work / "venv"
    proc = _run([sys.executable, "-m", "venv", str(venv)], cwd=work)
    assert proc.returncode == 0, _explain(proc)
    proc = _run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", _pin("ansible-core"),
                 "-c", str(ROOT / "requirements" / "ci.txt")], cwd=work)
    assert proc.returncode == 0, _explain(proc)
    proc = _run([str(venv / "bin" / "python"), "-c", "import importlib.util as u; "
                 "print(u.find_spec('ansible_collections') is not None, u.find_spec('ansible_runner') is not None)"],
                cwd=work)
    assert proc.stdout.split() == ["False", "False"], f"the venv has more than ansible-core: {proc.stdout}"
    return venv


@pytest.fixture(scope="module")
def tarball(work: Path) -> Path:
    """This collection built from the checkout."""
    out = work / "dist"
    out.mkdir()
    proc = _run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(ROOT)], cwd=work)
    assert proc.returncode == 0, _explain(proc)
    return out / f"{GALAXY['namespace']}-{GALAXY['name']}-{GALAXY['version']}.tar.gz"


def _ansible_wheel(end: AnsibleEnd) -> Path:
    """The `ansible` wheel of one end: from .cache/ansible-wheels/ when its sha256 is the pinned one, else fetched
    with `pip download --no-deps` (a cached file with another digest is replaced) and checked again."""
    wheel = WHEELS / f"ansible-{end.version}-py3-none-any.whl"
    if wheel.is_file() and sha256_file(wheel) == end.sha256:
        return wheel
    wheel.unlink(missing_ok=True)
    WHEELS.mkdir(parents=True, exist_ok=True)
    proc = _run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                 "--only-binary=:all:", "--python-version", end.python, "-d", str(WHEELS), f"ansible=={end.version}"],
                cwd=WHEELS)
    assert proc.returncode == 0, (f"{_explain(proc)}\nFix: give this machine access to the Python registry, or put "
                                  f"ansible-{end.version}-py3-none-any.whl (sha256 {end.sha256}) into {WHEELS}")
    digest = sha256_file(wheel)
    assert digest == end.sha256, (f"{wheel} has sha256 {digest}, ANSIBLE_ENDS pins {end.sha256} for ansible "
                                  f"{end.version}: the download is not the reviewed artefact; remove it and check")
    return wheel


def _extract(archive: zipfile.ZipFile, name: str, dest: Path) -> Path:
    """Only the files of one collection (ansible_collections/<namespace>/<name>/) out of an `ansible` wheel."""
    prefix = "ansible_collections/" + name.replace(".", "/") + "/"
    members = [m for m in archive.namelist() if m.startswith(prefix) and "/__pycache__/" not in m]
    assert members, f"{archive.filename} holds no {name}"
    archive.extractall(dest, members)
    return dest.joinpath(*prefix.split("/"))


def _closure(archive: zipfile.ZipFile) -> list[str]:
    """The declared dependencies and, as Galaxy would bring them, theirs (community.general 13 needs
    community.library_inventory_filtering_v1), each read from its MANIFEST.json in the wheel."""
    todo, seen = list(DEPENDENCIES), []
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.append(name)
        manifest = json.loads(archive.read("ansible_collections/" + name.replace(".", "/") + "/MANIFEST.json"))
        todo.extend(manifest["collection_info"].get("dependencies") or {})
    return seen


@pytest.fixture(scope="module", params=sorted(ANSIBLE_ENDS, reverse=True),
                ids=[f"{end}-ansible-{ANSIBLE_ENDS[end].version}" for end in sorted(ANSIBLE_ENDS, reverse=True)])
def dependencies(request: pytest.FixtureRequest, work: Path) -> dict[str, Path]:
    """Each declared dependency (and each of theirs) as a tarball, built from the `ansible` wheel of one end."""
    end = ANSIBLE_ENDS[request.param]
    wheel = _ansible_wheel(end)
    base = work / request.param
    out = base / "dist"
    out.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as archive:
        return {name: build_installed(_extract(archive, name, base / "wheel"), base / "src" / name, out,
                                      galaxy_bin=str(BIN / "ansible-galaxy"))
                for name in _closure(archive)}


def _install(work: Path, venv: Path, dest: Path, paths: list[Path]) -> subprocess.CompletedProcess[str]:
    dest.mkdir(exist_ok=True)
    (dest / "ansible.cfg").write_text("[defaults]\n")
    return _run([str(venv / "bin" / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(dest),
                 *map(str, paths)], cwd=work, env=_env(dest, venv))


@pytest.fixture(scope="module")
def installed(work: Path, core_venv: Path, tarball: Path, dependencies: dict[str, Path]) -> Path:
    # not "collections": Ansible also searches collections/ beside a playbook
    dest = dependencies[next(iter(DEPENDENCIES))].parents[1] / "with-deps"
    proc = _install(work, core_venv, dest, [tarball, *dependencies.values()])
    assert proc.returncode == 0, _explain(proc)
    return dest


@pytest.fixture(scope="module")
def installed_alone(work: Path, core_venv: Path, tarball: Path) -> Path:
    """The collection without its dependencies (--no-deps): the play must fail there, or it proves nothing."""
    dest = work / "no-deps"
    dest.mkdir()
    (dest / "ansible.cfg").write_text("[defaults]\n")
    proc = _run([str(core_venv / "bin" / "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "-p",
                 str(dest), str(tarball)], cwd=work, env=_env(dest, core_venv))
    assert proc.returncode == 0, _explain(proc)
    return dest


def test_content_uses_exactly_the_declared_dependencies() -> None:
    uses = _uses()
    assert set(uses) == set(DEPENDENCIES), (f"collections the roles call: {sorted(uses)}; "
                                            f"galaxy.yml declares: {sorted(DEPENDENCIES)}")


def test_install_without_the_dependencies_is_refused(work: Path, core_venv: Path, tarball: Path) -> None:
    proc = _install(work, core_venv, work / "alone", [tarball])
    assert proc.returncode != 0, "the tarball installed without its dependencies: galaxy.yml declares none?"
    out = proc.stdout + proc.stderr
    assert "Could not satisfy the following requirements" in out, _explain(proc)
    assert any(f"{name}:{DEPENDENCIES[name]} (dependency of {FQCN}" in out for name in DEPENDENCIES), _explain(proc)


def test_install_brings_the_collection_and_its_dependencies(installed: Path, core_venv: Path,
                                                            dependencies: dict[str, Path]) -> None:
    """The install holds this collection and exactly the dependency versions of this end's `ansible` package."""
    proc = _run([str(core_venv / "bin" / "ansible-galaxy"), "collection", "list", "--format", "json"],
                cwd=installed, env=_env(installed, core_venv))
    assert proc.returncode == 0, _explain(proc)
    listed = json.loads(proc.stdout).get(str(installed / "ansible_collections"), {})
    assert set(listed) == {FQCN, *dependencies}, f"installed: {sorted(listed)}"
    wanted = {name: path.name.removesuffix(".tar.gz").rsplit("-", 1)[1] for name, path in dependencies.items()}
    assert {name: listed[name]["version"] for name in dependencies} == wanted, f"installed: {listed}"


def _playbook(venv: Path, *args: str) -> list[str]:
    return [str(venv / "bin" / "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", f"ansible_python_interpreter={venv / 'bin' / 'python'}", *args]


def test_cpfs_client_mounts_with_ansible_posix_from_the_install(work: Path, installed: Path, installed_alone: Path,
                                                                core_venv: Path) -> None:
    """cpfs_client's mount step (ansible.posix.mount) runs from the installed collections: in check mode on this
    host, from the read-only probe of the mount point and fstab on (the mount step judges what it read; the trial
    mount between them is skipped in check mode), so nothing is mounted and /etc/fstab stays as it is. Without
    ansible.posix the same play fails on the module name."""
    mnt = work / "mnt"
    play = [{"name": "Shared storage from the installed collection", "hosts": "localhost", "gather_facts": False,
             "vars": {"cpfs_client_backend": "nfs", "cpfs_client_nfs_export": "192.0.2.1:/scc-galaxy-test",
                      "cpfs_client_mountpoint": str(mnt)},
             "tasks": [{"name": "Mount", "ansible.builtin.import_role": {
                 "name": f"{FQCN}.cpfs_client", "tasks_from": "configure.yml"}}]}]
    book = work / "cpfs_client.yml"
    book.write_text(yaml.safe_dump(play, sort_keys=False))
    fstab = Path("/etc/fstab").read_bytes() if Path("/etc/fstab").exists() else None
    cmd = _playbook(core_venv, "--check", "--start-at-task",
                    "Read what is mounted on the mount point and the fstab line for it", str(book))
    alone = _run(cmd, cwd=work, env=_env(installed_alone, core_venv))
    assert alone.returncode != 0 and "ansible.posix.mount" in alone.stdout + alone.stderr, _explain(alone)
    proc = _run(cmd, cwd=work, env=_env(installed, core_venv))
    assert proc.returncode == 0, _explain(proc)
    assert re.search(r"TASK \[scc\.nlp_training\.cpfs_client : Mount the shared storage[^\n]*\n(changed|ok): "
                     r"\[localhost\]", proc.stdout), _explain(proc)
    assert re.search(r"localhost +: ok=\d+ +changed=\d+ +unreachable=0 +failed=0", proc.stdout), _explain(proc)
    assert (Path("/etc/fstab").read_bytes() if Path("/etc/fstab").exists() else None) == fstab
    assert not mnt.exists(), "check mode created the mount point"


def test_dnf_versionlock_runs_from_the_installed_community_general(work: Path, installed: Path,
                                                                   installed_alone: Path, core_venv: Path) -> None:
    """The roles that lock NVIDIA packages on the RHEL family (community.general.dnf_versionlock) load from the
    install, and the module itself runs from it: on this Debian host it stops at its own first check (no dnf),
    where without community.general the name does not resolve. Locking for real needs a RHEL-family node."""
    files = sorted(_uses()["community.general"])
    play = [{"name": "Roles locking packages", "hosts": "localhost", "gather_facts": False,
             "tasks": [{"name": f"Load {role} {tasks_from}", "ansible.builtin.import_role": {
                 "name": f"{FQCN}.{role}", "tasks_from": tasks_from}} for role, tasks_from in files]}]
    book = work / "versionlock.yml"
    book.write_text(yaml.safe_dump(play, sort_keys=False))
    proc = _run(_playbook(core_venv, "--list-tasks", str(book)), cwd=work, env=_env(installed, core_venv))
    assert proc.returncode == 0, _explain(proc)
    locking = [line for line in proc.stdout.splitlines() if re.search(r"\bLock the\b.*\bversions\b", line)]
    assert len(locking) >= 1, _explain(proc)
    module = [str(core_venv / "bin" / "ansible"), "localhost", "-i", "localhost,", "-c", "local", "--check",
              "-e", f"ansible_python_interpreter={core_venv / 'bin' / 'python'}",
              "-m", "community.general.dnf_versionlock", "-a", "name=cuda-toolkit-12-9 state=present"]
    alone = _run(module, cwd=work, env=_env(installed_alone, core_venv))
    assert alone.returncode != 0 and "Cannot resolve 'community.general.dnf_versionlock'" in (
        alone.stdout + alone.stderr), _explain(alone)
    ran = _run(module, cwd=work, env=_env(installed, core_venv))
    # community.general 10.x: "/usr/bin/dnf was not found"; 13.x: 'Failed to find required executable "dnf"'.
    assert re.search(r'Failed to find required executable "dnf"|/usr/bin/dnf was not found', ran.stdout), _explain(ran)
    assert "Cannot resolve" not in ran.stdout + ran.stderr, _explain(ran)
