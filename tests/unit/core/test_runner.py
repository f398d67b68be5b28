"""`sccnlp.runner.run_playbook` against real tiny playbooks on this machine (connection local), through
ansible-runner and ansible-playbook: per-host counts, failures, unreachable nodes, and refusals before any task."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from sccnlp.errors import SccError
from sccnlp.runner import RunResult, print_summary, run_playbook

PLAY = """\
- name: Tiny play
  hosts: scc_cluster
  gather_facts: false
  tasks:
    - name: Change something
      ansible.builtin.command: "true"
      changed_when: true
    - name: Refuse on the bad node
      ansible.builtin.fail:
        msg: "{{ inventory_hostname }}: tiny_setting is wrong: set tiny_setting to 1"
      when: inventory_hostname == 'bad'
    - name: Skip everywhere but bad
      ansible.builtin.debug:
        msg: only bad would get here
      when: inventory_hostname == 'bad'
    - name: Finish
      ansible.builtin.debug:
        msg: finished
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, str]:
    import sys

    tmp = tmp_path_factory.mktemp("runner")
    (tmp / "tiny.yml").write_text(PLAY)
    inv = tmp / "inventory.ini"
    inv.write_text(
        "[scc_cluster]\n"
        f"good ansible_connection=local ansible_python_interpreter={sys.executable}\n"
        f"bad ansible_connection=local ansible_python_interpreter={sys.executable}\n"
        "gone ansible_connection=ssh ansible_host=127.0.0.2 ansible_port=1 ansible_user=nobody\n"
    )
    progress = io.StringIO()
    result = run_playbook(str(tmp / "tiny.yml"), inv, stream=progress)
    return result, progress.getvalue()


def test_per_host_counts_of_the_healthy_node(tiny: tuple[RunResult, str]) -> None:
    result, _unused = tiny
    assert set(result.hosts) == {"good", "bad", "gone"}
    good = result.hosts["good"]
    assert (good.ok, good.changed, good.failed, good.unreachable, good.skipped) == (2, 1, 0, 0, 2)
    assert good.healthy
    assert good.messages == []


def test_failing_task_fails_the_run_and_names_host_and_message(tiny: tuple[RunResult, str]) -> None:
    result, progress = tiny
    assert result.ok is False
    assert result.rc != 0
    bad = result.bad_hosts()
    assert "good" not in bad
    assert bad["bad"].failed == 1
    assert bad["bad"].changed == 1
    assert bad["bad"].messages == ["Refuse on the bad node: bad: tiny_setting is wrong: set tiny_setting to 1"]
    assert "bad            FAILED      Refuse on the bad node: bad: tiny_setting is wrong" in progress


def test_unreachable_node_is_reported_and_the_others_finish(tiny: tuple[RunResult, str]) -> None:
    result, progress = tiny
    gone = result.bad_hosts()["gone"]
    assert gone.unreachable == 1
    assert gone.ok == 0
    assert len(gone.messages) == 1
    assert gone.messages[0].startswith("Change something: ")
    assert "127.0.0.2 port 1" in gone.messages[0]
    assert "UNREACHABLE" in progress
    # The healthy node ran the last task although another node was unreachable and one failed.
    assert result.hosts["good"].ok == 2


def test_print_summary_has_one_line_per_host(tiny: tuple[RunResult, str]) -> None:
    result, _unused = tiny
    out = io.StringIO()
    print_summary(result, stream=out)
    text = out.getvalue()
    lines = [line.split() for line in text.splitlines() if line.startswith("  ") and not line.startswith("      ")]
    assert [(w[0], w[1]) for w in lines] == [("bad", "FAILED"), ("gone", "UNREACHABLE"), ("good", "ok")]
    assert "      Refuse on the bad node: bad: tiny_setting is wrong: set tiny_setting to 1" in text
    # The unreachable node is named with the fix; the failed one gets its own message, not this fix.
    assert text.count("      Fix: start ") == 1
    assert "      Fix: start gone or make it answer as the inventory says" in text


def test_missing_inventory_names_the_fix(tmp_path: Path) -> None:
    (tmp_path / "tiny.yml").write_text(PLAY)
    with pytest.raises(SccError, match=r"inventory .*nope\.ini does not exist: pass --inventory PATH"):
        run_playbook(str(tmp_path / "tiny.yml"), tmp_path / "nope.ini")


def test_missing_playbook_names_the_fix(tmp_path: Path, local_inventory: Path) -> None:
    with pytest.raises(SccError, match=r"^playbook file .*nope\.yml does not exist: give the path of a playbook, or "
                                       r"the name of one under .*/playbooks \(bert, cluster, .*site.*\)$"):
        run_playbook(str(tmp_path / "nope.yml"), local_inventory)


def test_missing_collection_playbook_names_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                   local_inventory: Path) -> None:
    monkeypatch.setenv("SCCNLP_COLLECTION", str(tmp_path))
    with pytest.raises(SccError, match=r"^no playbooks under .*/playbooks: SCCNLP_COLLECTION=.* is not the "
                                       r"collection root; point SCCNLP_COLLECTION at the folder"):
        run_playbook("site", local_inventory)


def test_relative_paths_and_a_venv_that_is_not_activated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`/path/to/venv/bin/sccnlp deploy -i inv.ini --playbook one.yml` from the folder holding both files, with
    the venv not on PATH: the runner finds ansible-playbook next to its interpreter and makes the paths absolute."""
    import shutil
    import sys

    (tmp_path / "one.yml").write_text(
        "- name: One\n  hosts: scc_cluster\n  gather_facts: false\n  tasks:\n"
        "    - name: Ping\n      ansible.builtin.ping:\n")
    (tmp_path / "inv.ini").write_text(
        f"[scc_cluster]\nlocal1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
    assert shutil.which("ansible-playbook") is None, "this test needs a PATH without ansible-playbook"
    result = run_playbook("one.yml", "inv.ini", stream=io.StringIO())
    assert result.ok
    assert result.hosts["local1"].ok == 1


def test_unparsable_inventory_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "tiny.yml").write_text(PLAY)
    inv = tmp_path / "broken.ini"
    inv.write_text("[scc_cluster\nnode1\n")
    with pytest.raises(SccError) as exc:
        run_playbook(str(tmp_path / "tiny.yml"), inv, stream=io.StringIO())
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg == (f"ansible-playbook could not run tiny.yml with inventory {inv}: the inventory did not parse: "
                   "Failed to parse inventory with 'ini' plugin: Failed to parse inventory: not enough values to "
                   "unpack (expected 3, got 2)")


def test_discovery_inventory_without_credentials_passes_on_the_plugins_fix(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    """A *.scc.yml discovery config the plugin refuses: its message (with the fix) is the one line, where an
    unparsed inventory used to be a silent, successful run on zero hosts."""
    for name in [k for k in os.environ if k.startswith(("ALIBABA_CLOUD_", "ALICLOUD_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aliyun/config.json
    (tmp_path / "tiny.yml").write_text(PLAY)
    inv = tmp_path / "cluster.scc.yml"
    inv.write_text("plugin: scc.nlp_training.scc\nregions: [cn-hangzhou]\n")
    with pytest.raises(SccError) as exc:
        run_playbook(str(tmp_path / "tiny.yml"), inv, stream=io.StringIO())
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"ansible-playbook could not run tiny.yml with inventory {inv}: the inventory did not "
                          "parse: ")
    assert "no Alibaba Cloud credentials found" in msg
    assert "ALIBABA_CLOUD_ACCESS_KEY_ID" in msg


def test_playbook_error_is_one_clear_error(tmp_path: Path, local_inventory: Path) -> None:
    book = tmp_path / "typo.yml"
    book.write_text("- name: Typo\n  hosts: scc_cluster\n  tasks:\n    - name: Oops\n"
                    "      ansible.builtin.no_such_module: {}\n")
    with pytest.raises(SccError) as exc:
        run_playbook(str(book), local_inventory, stream=io.StringIO())
    msg = str(exc.value)
    assert "\n" not in msg
    assert "ansible.builtin.no_such_module" in msg
    assert f"{book}:4" in msg


def test_inventory_without_the_cluster_group_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tiny.yml").write_text(PLAY)
    inv = tmp_path / "other.ini"
    inv.write_text("[workers]\nw1 ansible_connection=local\n")
    with pytest.raises(SccError, match=r"no host of inventory .*other\.ini matched the plays of tiny\.yml: put the "
                                       r"nodes in the group 'scc_cluster'"):
        run_playbook(str(tmp_path / "tiny.yml"), inv, stream=io.StringIO())


def test_rescued_failure_is_not_a_reason_the_node_did_not_finish(tmp_path: Path) -> None:
    """playbooks/validate.yml rescues a failed nccl-tests build: the node is healthy and its summary is clean."""
    import sys

    book = tmp_path / "rescue.yml"
    book.write_text(
        "- name: Rescue\n  hosts: scc_cluster\n  gather_facts: false\n  tasks:\n"
        "    - name: Try the build\n      block:\n"
        "        - name: Build\n          ansible.builtin.fail:\n            msg: build broke\n"
        "      rescue:\n"
        "        - name: Fall back\n          ansible.builtin.debug:\n            msg: fallback\n")
    inv = tmp_path / "inv.ini"
    inv.write_text(f"[scc_cluster]\nl1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    result = run_playbook(str(book), inv, stream=io.StringIO())
    assert result.ok
    assert result.bad_hosts() == {}
    assert result.hosts["l1"].messages == []
    out = io.StringIO()
    print_summary(result, stream=out)
    assert "build broke" not in out.getvalue()


def test_collections_shim_honours_sccnlp_collections_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The shim goes where scripts/link-collection.sh puts it; a stale link (another checkout) is replaced."""
    from sccnlp.runner import _collections_path

    root = Path(__file__).resolve().parents[3]
    shim = tmp_path / "shim"
    link = shim / "ansible_collections" / "scc" / "nlp_training"
    link.parent.mkdir(parents=True)
    link.symlink_to(tmp_path, target_is_directory=True)
    monkeypatch.delenv("SCCNLP_COLLECTION", raising=False)
    monkeypatch.setenv("SCCNLP_COLLECTIONS_PATH", str(shim))
    monkeypatch.setenv("ANSIBLE_COLLECTIONS_PATH", "/opt/other")
    assert _collections_path() == f"{shim}:/opt/other"
    assert link.resolve() == root
    assert sorted(p.name for p in link.parent.iterdir()) == ["nlp_training"]


def test_installed_collection_needs_no_shim(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sccnlp.runner import _collections_path

    installed = tmp_path / "coll" / "ansible_collections" / "scc" / "nlp_training"
    installed.mkdir(parents=True)
    monkeypatch.setenv("SCCNLP_COLLECTION", str(installed))
    monkeypatch.setenv("SCCNLP_COLLECTIONS_PATH", str(tmp_path / "must-not-exist"))
    monkeypatch.setenv("ANSIBLE_COLLECTIONS_PATH", str(tmp_path / "users"))
    # The installed folder first, the caller's own entries after it.
    assert _collections_path() == f"{tmp_path / 'coll'}:{tmp_path / 'users'}"
    assert not (tmp_path / "must-not-exist").exists()


def test_a_json_stdout_callback_in_the_environment_keeps_the_messages(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's ANSIBLE_STDOUT_CALLBACK=json must not reduce failures to a bare "failed" (it did for sccnlp train)."""
    import sys

    monkeypatch.setenv("ANSIBLE_STDOUT_CALLBACK", "json")
    monkeypatch.setenv("ANSIBLE_LOAD_CALLBACK_PLUGINS", "1")
    (tmp_path / "tiny.yml").write_text(PLAY)
    inv = tmp_path / "inventory.ini"
    inv.write_text(f"[scc_cluster]\nbad ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    progress = io.StringIO()
    result = run_playbook(str(tmp_path / "tiny.yml"), inv, stream=progress)
    assert result.hosts["bad"].failed == 1
    assert "bad: tiny_setting is wrong: set tiny_setting to 1" in progress.getvalue() + " ".join(
        result.hosts["bad"].messages)


def test_host_key_checking_stays_on_through_ansible_runner(tmp_path: Path) -> None:
    """ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False unless told; ssh then got StrictHostKeyChecking=no ahead of
    the inventory's =yes (ssh keeps the first). The setting the ssh connection reads must be on."""
    import sys

    (tmp_path / "hkc.yml").write_text(
        "- name: Host key checking\n  hosts: scc_cluster\n  gather_facts: false\n  tasks:\n"
        "    - name: Fail unless host key checking is on\n      ansible.builtin.assert:\n"
        "        that: lookup('ansible.builtin.config', 'HOST_KEY_CHECKING') | bool\n"
        "        fail_msg: host key checking is off\n")
    inv = tmp_path / "inventory.ini"
    inv.write_text(f"[scc_cluster]\ngood ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    progress = io.StringIO()
    result = run_playbook(str(tmp_path / "hkc.yml"), inv, stream=progress)
    assert result.ok and result.hosts["good"].failed == 0, progress.getvalue()


def test_artifacts_of_the_last_runs_are_kept_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed run can be read afterwards: ansible-runner's record of the last KEEP_RUNS runs of each playbook stays
    under $SCCNLP_HOME/runs/<playbook>/ (older ones rotated out), and the summary of a failed run names it."""
    import sys

    from sccnlp import runner

    monkeypatch.setenv("SCCNLP_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(runner, "KEEP_RUNS", 2)
    (tmp_path / "tiny.yml").write_text(PLAY)
    inv = tmp_path / "inventory.ini"
    inv.write_text(f"[scc_cluster]\nbad ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    results = [run_playbook(str(tmp_path / "tiny.yml"), inv, stream=io.StringIO()) for _run in range(3)]
    kept = sorted((tmp_path / "home" / "runs" / "tiny").iterdir())
    assert len(kept) == 2 and str(kept[-1]) == results[-1].artifacts
    assert "tiny_setting is wrong" in (kept[-1] / "stdout").read_text()
    out = io.StringIO()
    print_summary(results[-1], out)
    assert f"\nThe run's full record (events, output): {results[-1].artifacts}\n" in out.getvalue()


def test_pruning_keeps_the_newest_runs_and_tolerates_a_folder_already_gone(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs of one playbook pruning at once: the second finds a folder the first removed; neither fails."""
    import os
    import shutil

    from sccnlp import runner

    keep = tmp_path / "runs" / "site"
    keep.mkdir(parents=True)
    for age in range(7):
        run = keep / f"run{age}"
        run.mkdir()
        (run / "stdout").write_text("x")
        os.utime(run, (1000 + age, 1000 + age))
    real_rmtree = shutil.rmtree

    def raced_rmtree(path, *args, **kwargs):  # another process removed it a moment before
        real_rmtree(path)
        return real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(runner.shutil, "rmtree", raced_rmtree)
    runner.prune_runs(keep, 4)
    assert sorted(p.name for p in keep.iterdir()) == ["run3", "run4", "run5", "run6"]
    runner.prune_runs(keep, 4)  # nothing to do: nothing removed
    assert sorted(p.name for p in keep.iterdir()) == ["run3", "run4", "run5", "run6"]
