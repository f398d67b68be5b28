"""The node_files module (plugins/modules/node_files.py): its marked blocks are the ones ansible.builtin.blockinfile
writes (the same files, from one real ansible-playbook run of both), a re-run writes nothing, check mode writes
nothing, folders, links, removal and local facts."""

from __future__ import annotations

import grp
import json
import os
import pwd
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from sccnlp.runner import _collections_path

MARKER = "# {mark} scc.nlp_training cluster"
BLOCK = "10.91.0.11 clu-node1\n10.91.0.12 clu-node2"
CASES = {  # the file before, by case
    "missing": None,
    "empty": "",
    "no_newline": "127.0.0.1 localhost",
    "other_block": ("127.0.0.1 localhost\n# BEGIN scc.nlp_training cluster\nold\n# END scc.nlp_training cluster\n"
                    "::1 x\n"),
    "reversed": "# END scc.nlp_training cluster\nold\n# BEGIN scc.nlp_training cluster\n",
}


def _play(tmp_path: Path, tasks: list[dict[str, Any]], *args: str) -> subprocess.CompletedProcess[str]:
    book = tmp_path / "book.yml"
    book.write_text(yaml.safe_dump([{"name": "Files", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    return subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), str(book),
                           "-e", f"ansible_python_interpreter={sys.executable}", *args],
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def _changed(proc: subprocess.CompletedProcess[str]) -> list[bool]:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    plays = json.loads(proc.stdout)["plays"]
    return [t["hosts"]["localhost"].get("changed", False) for t in plays[0]["tasks"]]


def test_blocks_are_blockinfiles(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for folder in (ours, theirs):
        folder.mkdir()
        for case, text in CASES.items():
            if text is not None:
                (folder / case).write_text(text)
    tasks: list[dict[str, Any]] = [
        {"name": "blockinfile", "ansible.builtin.blockinfile": {"path": str(theirs / case), "block": BLOCK,
                                                                "marker": MARKER, "create": True}}
        for case in CASES]
    tasks.append({"name": "node_files", "scc.nlp_training.node_files": {"files": [
        {"path": str(ours / case), "state": "block", "block": BLOCK, "marker": MARKER} for case in CASES]}})
    assert all(_changed(_play(tmp_path, tasks)))
    for case in CASES:
        assert (ours / case).read_text() == (theirs / case).read_text(), case
    # blockinfile's files are unchanged for node_files, and the other way round
    again = [{"name": "ours on theirs", "scc.nlp_training.node_files": {"files": [
        {"path": str(theirs / case), "state": "block", "block": BLOCK, "marker": MARKER} for case in CASES]}}]
    again += [{"name": "theirs on ours",
               "ansible.builtin.blockinfile": {"path": str(ours / "other_block"), "block": BLOCK, "marker": MARKER}}]
    assert _changed(_play(tmp_path, again)) == [False, False]


def test_files_folders_links_facts_and_check_mode(tmp_path: Path) -> None:
    entries = [{"path": str(tmp_path / "etc" / "scc"), "state": "directory", "mode": "0750"},
               {"path": str(tmp_path / "etc" / "scc" / "mpihosts"), "content": "n1 slots=1\n", "mode": "0640"},
               {"path": str(tmp_path / "etc" / "cuda"), "state": "link", "src": "/opt/cuda-13.0"},
               {"path": str(tmp_path / "gone"), "state": "absent"}]
    (tmp_path / "gone").write_text("x")
    task = {"name": "apply", "scc.nlp_training.node_files": {
        "files": entries, "facts": {"scc_cluster": {"nodes": ["n1"], "total_slots": 1}},
        "facts_dir": str(tmp_path / "facts.d")}}
    assert _changed(_play(tmp_path, [task], "--check")) == [True]
    assert not (tmp_path / "etc").exists() and (tmp_path / "gone").exists()
    assert _changed(_play(tmp_path, [task])) == [True]
    assert (tmp_path / "etc" / "scc" / "mpihosts").read_text() == "n1 slots=1\n"
    assert oct((tmp_path / "etc" / "scc").stat().st_mode & 0o777) == "0o750"
    assert oct((tmp_path / "etc" / "scc" / "mpihosts").stat().st_mode & 0o777) == "0o640"
    assert os.readlink(tmp_path / "etc" / "cuda") == "/opt/cuda-13.0" and not (tmp_path / "gone").exists()
    assert json.loads((tmp_path / "facts.d" / "scc_cluster.fact").read_text()) == {"nodes": ["n1"], "total_slots": 1}
    assert _changed(_play(tmp_path, [task])) == [False]
    assert _changed(_play(tmp_path, [task], "--check")) == [False]


def test_node_probe_reads_commands_files_globs_and_mounts(tmp_path: Path) -> None:
    (tmp_path / "a.pub").write_text("ssh-ed25519 AAAA a\n")
    (tmp_path / "b.pub").write_text("ssh-rsa BBBB b\n")
    task = {"name": "probe", "register": "probe", "scc.nlp_training.node_probe": {
        "commands": {"echo": {"argv": ["sh", "-c", "echo $X; exit 3"], "env": {"X": "hello"}},
                     "missing": {"argv": ["/nonexistent/tool"]},
                     "slow": {"argv": ["sleep", "30"], "timeout": 1},
                     "stdin": {"argv": ["cat"], "stdin": "given"}},
        "files": {"a": {"path": str(tmp_path / "a.pub"), "read": True, "checksum": True},
                  "none": {"path": str(tmp_path / "none")}},
        "globs": {"keys": {"pattern": [str(tmp_path / "*.pub"), str(tmp_path / "a*")], "read": True}},
        "mounts": ["/", str(tmp_path)]}}
    show = {"name": "show", "ansible.builtin.debug": {"var": "probe"}}
    proc = _play(tmp_path, [task, show], "--check")
    assert proc.returncode == 0, proc.stdout[-3000:]
    probe = json.loads(proc.stdout)["plays"][0]["tasks"][1]["hosts"]["localhost"]["probe"]
    assert probe["changed"] is False
    assert probe["commands"]["echo"] == {"rc": 3, "stdout": "hello", "stderr": "", "stdout_lines": ["hello"]}
    assert probe["commands"]["missing"]["rc"] == 127
    assert probe["commands"]["slow"]["rc"] == 124 and probe["commands"]["slow"]["stderr"] == "timed out after 1s."
    assert probe["commands"]["stdin"]["stdout"] == "given"
    assert probe["files"]["a"]["content"] == "ssh-ed25519 AAAA a\n" and len(probe["files"]["a"]["sha256"]) == 64
    assert (probe["files"]["a"]["owner"], probe["files"]["a"]["group"]) == (
        pwd.getpwuid(os.getuid())[0], grp.getgrgid(os.getgid())[0])
    assert probe["files"]["none"]["exists"] is False
    assert [k["path"] for k in probe["globs"]["keys"]] == [str(tmp_path / "a.pub"), str(tmp_path / "b.pub")]
    assert probe["mounts"]["/"]["fstype"] and probe["mounts"][str(tmp_path)] is None
