"""Each checkout, and each installed copy, resolves the collection on its own (issue 25, item 5): two clones at
different commits run their own playbooks at the same time; a non-editable `pip install` runs the copy it carries;
README's ansible-runner command and Python example work as written and leave nothing in the checkout; ansible-lint
works from a fresh clone with the project's configuration. No Docker; about 90 s."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
README = (ROOT / "README.md").read_text()
LINK = Path(".cache/collections/ansible_collections/scc/nlp_training")


def _env(**extra: str) -> dict[str, str]:
    """The caller's environment without any Ansible or sccnlp setting (a user's shell), the venv's tools on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "SCCNLP_"))}
    env.pop("PYTHONPATH", None)
    env["PATH"] = os.pathsep.join((env.get("PATH", ""), str(BIN)))
    env.update(ANSIBLE_NOCOLOR="1", **extra)
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=timeout)


def _explain(proc: subprocess.CompletedProcess[str]) -> str:
    cmd = shlex.join(str(a) for a in proc.args)
    return f"`{cmd}` exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def _clone(dest: Path) -> Path:
    """A clone of this checkout's HEAD (what a user or a CI job gets)."""
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(dest)], check=True, capture_output=True)
    return dest


def _commit(repo: Path, path: str, text: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "add", path], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-q", "-m", f"test: {path}"], check=True, capture_output=True)


def _local_inventory(folder: Path) -> Path:
    """This machine as a one-node cluster over the local connection, no GPU."""
    inv = folder / "local.yml"
    inv.write_text(textwrap.dedent(f"""\
        scc_cluster:
          hosts:
            loopback:
              ansible_host: 127.0.0.1
              ansible_connection: local
              ansible_python_interpreter: {sys.executable}
              gpu_count: 0
              rdma: false
          vars:
            cpfs_client_backend: glusterfs
            cpfs_client_glusterfs_volume: 127.0.0.1:/gv0
        """))
    return inv


# A playbook that says which collection Ansible resolved scc.nlp_training to (the data lookup of the collection,
# made a real path) and what that collection's sccnlp/data/ident.txt holds.
IDENT_BOOK = textwrap.dedent("""\
    ---
    - name: Say which collection runs
      hosts: all
      gather_facts: false
      tasks:
        - name: Show the resolved collection
          ansible.builtin.debug:
            msg: "IDENT {{ lookup('ansible.builtin.file', _p) }} FROM {{ _p | realpath }}"
          vars:
            _p: "{{ lookup('scc.nlp_training.data', 'ident.txt', path=true) }}"
    """)
IDENT_RUN = textwrap.dedent("""\
    import sys
    import sccnlp
    msgs = []
    def keep(event):
        res = event.get("event_data", {}).get("res") or {}
        if isinstance(res.get("msg"), str) and res["msg"].startswith("IDENT"):
            msgs.append(res["msg"])
        return True
    result = sccnlp.run_playbook("ident", sys.argv[1], event_handler=keep)
    print(result.ok, *msgs, sep="\\n")
    """)


def test_checkout_has_its_own_relative_collection_link() -> None:
    link = ROOT / LINK
    assert link.is_symlink() and os.readlink(link) == "../../../..", \
        f"{LINK} must be the committed relative link ../../../.. (scripts/link-collection.sh restores it)"
    assert link.resolve() == ROOT.resolve()
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", str(LINK)],
                             capture_output=True, text=True, check=True)
    assert tracked.stdout.strip() == str(LINK), f"{LINK} is not committed: a fresh clone would not have it"


def test_two_checkouts_at_different_commits_run_their_own_playbooks_at_once(tmp_path: Path) -> None:
    inv = tmp_path / "inv.yml"
    inv.write_text(f"all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
                   f"      ansible_python_interpreter: {sys.executable}\n")
    clones = {}
    for name in ("alpha", "beta"):
        repo = _clone(tmp_path / name)
        _commit(repo, "playbooks/ident.yml", IDENT_BOOK)
        _commit(repo, "sccnlp/data/ident.txt", f"{name}\n")
        clones[name] = repo
    procs = {name: subprocess.Popen([sys.executable, "-c", IDENT_RUN, str(inv)], cwd=tmp_path,
                                    env=_env(PYTHONPATH=str(repo)), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for name, repo in clones.items()}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{name}: {out[-2000:]}\n{err[-2000:]}"
        lines = out.splitlines()
        assert lines[0] == "True", f"{name}: the run failed:\n{out[-2000:]}\n{err[-2000:]}"
        want = f"IDENT {name} FROM {clones[name].resolve()}/sccnlp/data/ident.txt"
        assert want in lines, f"{name} ran another checkout's collection: {lines[1:]} (wanted {want!r})"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install .` (regular, not editable) of a clone of this checkout into a folder of its own."""
    tmp = tmp_path_factory.mktemp("pip")
    repo = _clone(tmp / "src")
    target = tmp / "site"
    proc = _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                 "--disable-pip-version-check", "--target", str(target), str(repo)], cwd=tmp, env=_env(),
                timeout=300)
    assert proc.returncode == 0, _explain(proc)
    return target


def test_regular_pip_install_runs_the_collection_it_carries(installed: Path, tmp_path: Path) -> None:
    code = textwrap.dedent("""\
        import subprocess, sys
        from sccnlp.paths import collection_root, playbook
        from sccnlp.runner import _collections_path
        print(collection_root()); print(playbook('site').is_file()); print(_collections_path())
        """)
    proc = _run([sys.executable, "-c", code], cwd=tmp_path, env=_env(PYTHONPATH=str(installed)))
    assert proc.returncode == 0, _explain(proc)
    root, has_site, path = proc.stdout.splitlines()
    bundled = installed / "sccnlp" / "_collection"
    assert root == str(bundled / "ansible_collections" / "scc" / "nlp_training"), proc.stdout
    assert has_site == "True", f"the installed sccnlp finds no playbooks under {root}"
    assert path == str(bundled), "the installed copy needs no link: its folder is the collections path"
    book = _run([str(BIN / "ansible-playbook"), "--syntax-check", "-i", "localhost,", "scc.nlp_training.site"],
                cwd=tmp_path, env=_env(ANSIBLE_COLLECTIONS_PATH=path))
    assert book.returncode == 0, _explain(book)
    assert not list(tmp_path.iterdir()), f"the run left files in its working folder: {list(tmp_path.iterdir())}"


def _untracked(repo: Path) -> list[str]:
    proc = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
                          capture_output=True, text=True, check=True)
    return [line for line in proc.stdout.splitlines() if line.startswith("??")]


def test_readme_ansible_runner_command_works_as_written(tmp_path: Path) -> None:
    """README's command, from a fresh clone with nothing set up: the collection's roles resolve (the preflight's
    inventory check runs and refuses an inventory without nodes, in its own words) and the clone stays clean."""
    lines = [x.strip() for x in README.splitlines() if x.strip().startswith("ansible-runner run ")]
    assert len(lines) == 1, f"README should show one ansible-runner command, shows {lines}"
    repo = _clone(tmp_path / "clone")
    inv = tmp_path / "empty.yml"
    inv.write_text("scc_cluster:\n  hosts: {}\n")
    command = lines[0].replace('"$PWD/INVENTORY"', shlex.quote(str(inv)))
    assert command != lines[0], f"README's command has no \"$PWD/INVENTORY\" placeholder: {lines[0]}"
    proc = _run(["bash", "-c", command], cwd=repo, env=_env())
    out = proc.stdout + proc.stderr
    assert "was not found" not in out, f"the collection did not resolve:\n{out[-3000:]}"
    assert "scc.nlp_training.inventory_check" in out, f"the collection's preflight did not run:\n{out[-3000:]}"
    refused = "no nodes" in out.lower() or "empty" in out.lower()
    assert refused, f"expected the inventory check's refusal:\n{out[-3000:]}"
    assert _untracked(repo) == [], f"the command left files in the checkout: {_untracked(repo)}"


def test_readme_python_example_runs(tmp_path: Path) -> None:
    """README's Python example, on this machine as a one-node cluster (preflight in check mode: reads only)."""
    match = re.search(r"From Python.*?```python\n(.*?)```", README, re.S)
    assert match, "README has no Python example after 'From Python'"
    code = match.group(1)
    assert '"inventory/static/hosts.yml"' in code
    code = code.replace('"inventory/static/hosts.yml"', repr(str(_local_inventory(tmp_path))))
    proc = _run([sys.executable, "-c", code], cwd=tmp_path, env=_env(PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, _explain(proc)
    assert "loopback ok changed: 0" in proc.stdout, _explain(proc)
    assert proc.stdout.strip().endswith("all nodes ready: True"), _explain(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local.yml"], "the example left files behind"


def test_ansible_lint_works_from_a_fresh_clone(tmp_path: Path) -> None:
    """ansible-lint with the project's configuration (.ansible-lint: offline) in a clone with nothing set up: the
    play chain's syntax check resolves scc.nlp_training (the clone's own link) and passes."""
    repo = _clone(tmp_path / "clone")
    proc = _run([str(BIN / "ansible-lint"), "site.yml", "playbooks/validate.yml"], cwd=repo, env=_env())
    assert proc.returncode == 0, _explain(proc)
    assert "syntax-check" not in proc.stdout + proc.stderr, _explain(proc)
