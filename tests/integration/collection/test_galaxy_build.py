"""The collection as users get it: `ansible-galaxy collection build` of this checkout, `ansible-galaxy collection
install` of the tarball into an empty folder, then the installed play chain and inventory plugin used by FQCN with
nothing but that folder on ANSIBLE_COLLECTIONS_PATH. Also the same chain from a checkout (site.yml and by FQCN through
the collections-path shim). No Docker; about 40 s."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from plugins.plugin_utils import node_wheel
from sccnlp.node.filehash import sha256_file

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
FQCN = f"{GALAXY['namespace']}.{GALAXY['name']}"
TARBALL = f"{GALAXY['namespace']}-{GALAXY['name']}-{GALAXY['version']}.tar.gz"
# What a user's tarball must never carry: caches, build and tool state, the controller's wheel folder.
UNWANTED_TOP = (".git", ".venv", ".tox", ".cache", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".whl", ".device",
                ".testbed", "sccnlp.egg-info", "build", "dist", "out", ".ci", ".config", "tests", "molecule", "scripts",
                "Makefile", "tox.ini", "site.yml")
MAX_TARBALL_BYTES = 3 * 1024 * 1024


def _env(collections_path: Path | str, config: Path | None = None) -> dict[str, str]:
    """A clean Ansible environment: no settings inherited from the caller, color off, the venv's tools on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env["PATH"] = os.pathsep.join((str(BIN), env.get("PATH", "")))
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_COLLECTIONS_PATH"] = str(collections_path)
    if config is not None:
        env["ANSIBLE_CONFIG"] = str(config)
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300)


def _explain(proc: subprocess.CompletedProcess[str]) -> str:
    return f"`{' '.join(proc.args)}` exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("collection")
    (tmp / "ansible.cfg").write_text("[defaults]\n")  # neutral: nothing from the checkout's ansible.cfg
    return tmp


@pytest.fixture(scope="module")
def tarball(work: Path) -> Path:
    out = work / "dist"
    out.mkdir()
    proc = _run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(ROOT)],
                cwd=work, env=_env(work / "none", work / "ansible.cfg"))
    assert proc.returncode == 0, _explain(proc)
    path = out / TARBALL
    assert path.is_file(), f"no {TARBALL} in {sorted(p.name for p in out.iterdir())}"
    return path


@pytest.fixture(scope="module")
def installed(work: Path, tarball: Path) -> Path:
    dest = work / "installed"
    proc = _run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "--force", str(tarball),
                 "-p", str(dest)], cwd=work, env=_env(dest, work / "ansible.cfg"))
    assert proc.returncode == 0, _explain(proc)
    assert f"{FQCN}:{GALAXY['version']} was installed successfully" in proc.stdout, _explain(proc)
    return dest


def test_tarball_has_the_collection(tarball: Path) -> None:
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile("MANIFEST.json"))  # type: ignore[arg-type]
    info = manifest["collection_info"]
    assert (info["namespace"], info["name"], info["version"]) == (GALAXY["namespace"], GALAXY["name"],
                                                                  GALAXY["version"])
    for needed in ("README.md", "LICENSE", "ansible.cfg", "pyproject.toml", "meta/runtime.yml", "playbooks/site.yml",
                   "playbooks/knobs.yml",
                   "plugins/inventory/scc.py", "sccnlp/runner.py", "sccnlp/paths.py", "sccnlp/data/compat_matrix.yml",
                   "sccnlp/data/floors.yml", "sccnlp/data/instance_types.yml"):
        assert needed in names, f"{needed} is missing from {TARBALL}"
    roles = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks" / "main.yml").is_file())
    missing = [r for r in roles if f"roles/{r}/tasks/main.yml" not in names]
    assert not missing, f"roles missing from {TARBALL}: {missing}"


def test_dependencies_cover_the_modules_of_other_collections() -> None:
    """Every collection whose module a role or playbook calls is a dependency in galaxy.yml (and none is declared
    that nothing uses): a user's `ansible-galaxy collection install` of the tarball brings exactly what it needs."""
    own = {"ansible.builtin", FQCN}
    task_key = re.compile(r"^\s*(?:- )?([a-z0-9_]+\.[a-z0-9_]+)\.[a-z0-9_]+:\s*(?:$|[^\s])", re.M)
    used: dict[str, set[str]] = {}
    for top in ("roles", "playbooks"):
        for path in sorted((ROOT / top).rglob("*.yml")):
            for match in task_key.finditer(path.read_text()):
                if match.group(1) not in own:
                    used.setdefault(match.group(1), set()).add(str(path.relative_to(ROOT)))
    declared = set(GALAXY.get("dependencies") or {})
    assert "ansible.posix" in used and "community.general" in used, f"the scan found {sorted(used)}"
    undeclared = {c: sorted(files) for c, files in used.items() if c not in declared}
    assert not undeclared, f"galaxy.yml dependencies lack collections the content uses: {undeclared}"
    assert declared <= set(used), f"galaxy.yml declares collections nothing uses: {sorted(declared - set(used))}"
    for name, spec in GALAXY["dependencies"].items():
        assert re.fullmatch(r">=\d+\.\d+\.\d+,<\d+\.\d+\.\d+", spec), f"{name}: {spec!r} is not a >=X,<Y range"


def test_every_role_has_galaxy_metadata() -> None:
    roles = sorted(p for p in (ROOT / "roles").iterdir() if (p / "tasks" / "main.yml").is_file())
    problems = []
    for role in roles:
        meta = role / "meta" / "main.yml"
        info = (yaml.safe_load(meta.read_text()) or {}).get("galaxy_info", {}) if meta.is_file() else {}
        for key in ("description", "platforms", "min_ansible_version", "license"):
            if not info.get(key):
                problems.append(f"roles/{role.name}/meta/main.yml: galaxy_info.{key} missing")
    assert not problems, "\n".join(problems)


def test_tarball_leaves_out_caches_and_build_state(tarball: Path) -> None:
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    size = tarball.stat().st_size
    unwanted = sorted({n.split("/")[0] for n in names if n.split("/")[0] in UNWANTED_TOP})
    compiled = [n for n in names if "__pycache__" in n.split("/") or n.endswith(".pyc")]
    assert not unwanted, (f"{TARBALL} carries {unwanted}: add them to build_ignore in galaxy.yml "
                          f"(tarball is {size / 1e6:.2f} MB)")
    assert not compiled, f"{TARBALL} carries compiled Python: {compiled[:5]}"
    assert size < MAX_TARBALL_BYTES, f"{TARBALL} is {size / 1e6:.2f} MB: something big is not in build_ignore"


def test_installed_layout(installed: Path) -> None:
    root = installed / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"]
    manifest = json.loads((root / "MANIFEST.json").read_text())
    assert manifest["collection_info"]["version"] == GALAXY["version"]
    assert (root / "playbooks" / "site.yml").is_file()
    assert (root / "plugins" / "inventory" / "scc.py").is_file()
    assert not (root / "playbooks" / "site.yml").is_symlink()


def test_installed_site_passes_syntax_check(work: Path, installed: Path) -> None:
    proc = _run([str(BIN / "ansible-playbook"), f"{FQCN}.site", "--syntax-check", "-i", "localhost,"],
                cwd=work, env=_env(installed, work / "ansible.cfg"))
    assert proc.returncode == 0, _explain(proc)
    assert "playbook: " in proc.stdout


def test_installed_inventory_plugin_documents_itself(work: Path, installed: Path) -> None:
    proc = _run([str(BIN / "ansible-doc"), "-t", "inventory", f"{FQCN}.scc"], cwd=work,
                env=_env(installed, work / "ansible.cfg"))
    assert proc.returncode == 0, _explain(proc)
    assert "not found" not in proc.stderr, _explain(proc)
    assert f"{FQCN}.scc" in proc.stdout
    assert str(installed) in proc.stdout, "ansible-doc did not read the plugin from the installed collection"
    for option in ("plugin", "regions", "hostnames"):
        assert f"{option}" in proc.stdout, f"option {option} is not documented:\n{proc.stdout[:2000]}"
    assert "OPTIONS" in proc.stdout


def test_top_level_site_imports_the_collection_chain() -> None:
    plays = yaml.safe_load((ROOT / "site.yml").read_text())
    imports = [p.get("ansible.builtin.import_playbook") for p in plays]
    assert imports == ["playbooks/site.yml"], f"site.yml should only import playbooks/site.yml, imports {imports}"


@pytest.mark.parametrize("book", ["site.yml", f"{FQCN}.site"])
def test_checkout_passes_syntax_check(book: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """From a checkout, as README says: the repository's site.yml, and the same chain by FQCN through the shim
    (a private one here, so that a copy of the tree under test never re-points the shared link)."""
    from sccnlp.runner import _collections_path

    monkeypatch.delenv("SCCNLP_COLLECTION", raising=False)
    monkeypatch.delenv("ANSIBLE_COLLECTIONS_PATH", raising=False)
    monkeypatch.setenv("SCCNLP_COLLECTIONS_PATH", str(tmp_path / "shim"))
    shim = _collections_path()
    assert shim == str(tmp_path / "shim")
    proc = _run([str(BIN / "ansible-playbook"), book, "--syntax-check", "-i", "localhost,"], cwd=ROOT,
                env=_env(shim, ROOT / "ansible.cfg"))
    assert proc.returncode == 0, _explain(proc)
    assert "playbook: " in proc.stdout


def test_installed_sccnlp_finds_its_collection(work: Path, installed: Path) -> None:
    """The `sccnlp` package shipped inside the installed collection locates that collection (not this checkout) and
    hands Ansible the install folder itself, without a shim."""
    root = installed / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"]
    code = ("from sccnlp.paths import collection_root, playbook\n"
            "from sccnlp.runner import _collections_path\n"
            "print(collection_root()); print(playbook('site').is_file()); print(_collections_path())\n")
    env = _env("", None)
    env.pop("ANSIBLE_COLLECTIONS_PATH")
    env.pop("SCCNLP_COLLECTION", None)
    env["PYTHONPATH"] = str(root)
    proc = _run([sys.executable, "-c", code], cwd=work, env=env)
    assert proc.returncode == 0, _explain(proc)
    assert proc.stdout.splitlines() == [str(root), "True", str(installed)]


@pytest.mark.parametrize("name", ["compat_check_plan", "compat_check_kernels", "compat_arch", "compat_version_matches",
                                  "compat_package_repo"])
def test_installed_compat_filter_has_its_own_documentation(work: Path, installed: Path, name: str) -> None:
    """The five filters of plugins/filter/compat.py: each page is that filter's (its own file, name and options),
    not the first filter's page repeated."""
    proc = _run([str(BIN / "ansible-doc"), "-t", "filter", "--json", f"{FQCN}.{name}"], cwd=work,
                env=_env(installed, work / "ansible.cfg"))
    assert proc.returncode == 0, _explain(proc)
    page = json.loads(proc.stdout)[f"{FQCN}.{name}"]
    assert page["doc"]["name"] == name, f"ansible-doc shows {page['doc']['name']}'s page for {name}"
    assert page["doc"]["filename"].endswith(f"plugins/filter/{name}.yml")
    assert page["doc"]["short_description"] and page["examples"] and page["return"]["_value"]["description"]
    assert f"{FQCN}.{name}" in page["examples"], f"the examples of {name} do not use it"


def test_installed_data_lookup_reads_the_installed_data(work: Path, installed: Path) -> None:
    """The one data resolver (lookup scc.nlp_training.data) finds sccnlp/data in an installed collection, not in
    this checkout, and sccnlp's own resolver (the same plugin_utils function) agrees."""
    root = installed / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"]
    book = work / "data_lookup.yml"
    book.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                    "    - ansible.builtin.debug:\n"
                    f"        msg: \"DATA {{{{ lookup('{FQCN}.data', 'floors.yml', path=true) }}}} "
                    f"{{{{ lookup('{FQCN}.data', 'compat_matrix.yml').schema }}}}\"\n")
    proc = _run([str(BIN / "ansible-playbook"), str(book), "-i", "localhost,"], cwd=work,
                env=_env(installed, work / "ansible.cfg"))
    assert proc.returncode == 0, _explain(proc)
    assert f"DATA {root}/sccnlp/data/floors.yml 1" in proc.stdout, _explain(proc)
    env = _env("", None)
    env.pop("ANSIBLE_COLLECTIONS_PATH")
    env["PYTHONPATH"] = str(root)
    proc = _run([sys.executable, "-c", "from sccnlp.paths import data_dir; print(data_dir())"], cwd=work, env=env)
    assert proc.returncode == 0, _explain(proc)
    assert proc.stdout.strip() == f"{root}/sccnlp/data", _explain(proc)


def test_installed_collection_builds_the_same_node_wheel(work: Path, installed: Path) -> None:
    """The node wheel (lookup scc.nlp_training.node_wheel, what _node_programs delivers) builds from an installed
    collection, from its own sources, to the same bytes as from this checkout."""
    book = work / "node_wheel.yml"
    out = work / "node-wheel"
    book.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                    "    - ansible.builtin.debug:\n"
                    f"        msg: \"WHEEL {{{{ lookup('{FQCN}.node_wheel', dir='{out}') | to_json }}}}\"\n")
    proc = _run([str(BIN / "ansible-playbook"), str(book), "-i", "localhost,"], cwd=work,
                env=_env(installed, work / "ansible.cfg"))
    assert proc.returncode == 0, _explain(proc)
    built = json.loads(re.search(r'"msg": "WHEEL (\{.*\})"', proc.stdout.replace('\\"', '"')).group(1))
    assert built["path"] == str(out / built["name"]) and (out / built["name"]).is_file(), built
    assert built["sha256"] == sha256_file(out / built["name"])
    assert built["sha256"] == node_wheel.build(str(work / "node-wheel-checkout"))["sha256"]
