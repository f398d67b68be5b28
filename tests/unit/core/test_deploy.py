"""`sccnlp deploy`: bad input (missing inventory, malformed -e) is one clear line before anything runs."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from sccnlp import cli
from sccnlp.commands import deploy
from sccnlp.errors import SccError


def test_missing_inventory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "hosts.yml"
    rc = cli.main(["deploy", "-i", str(missing)])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err.splitlines() == [f"sccnlp: error: inventory {missing} does not exist: pass --inventory PATH "
                                "(or run `sccnlp testbed up`)"]


def test_inventory_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["deploy"])
    assert exc.value.code == 2
    assert "the following arguments are required: -i/--inventory" in capsys.readouterr().err


def test_unknown_playbook_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = tmp_path / "hosts.ini"
    inv.write_text("[scc_cluster]\nn1\n")
    rc = cli.main(["deploy", "-i", str(inv), "--playbook", "no_such_phase"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("sccnlp: error: no playbook ")
    assert "playbooks/no_such_phase.yml" in err
    assert len(err.splitlines()) == 1


def _ns(*items: str) -> argparse.Namespace:
    return argparse.Namespace(extra_var=list(items))


def test_extra_vars_parse() -> None:
    assert deploy.extravars(_ns()) == {}
    assert deploy.extravars(_ns("gpu_count=8", "scc_shared_dir=/mnt/cpfs", "empty=", "expr=a=b")) == {
        "gpu_count": "8", "scc_shared_dir": "/mnt/cpfs", "empty": "", "expr": "a=b"}


@pytest.mark.parametrize("item", ["gpu_count", "=8", ""])
def test_malformed_extra_var_is_refused(item: str) -> None:
    with pytest.raises(SccError, match=r"^-e '.*': expected KEY=VALUE$"):
        deploy.extravars(_ns("ok=1", item))


def test_malformed_extra_var_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = tmp_path / "hosts.ini"
    inv.write_text("[scc_cluster]\nn1\n")
    rc = cli.main(["deploy", "-i", str(inv), "-e", "gpu_count"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err == "sccnlp: error: -e 'gpu_count': expected KEY=VALUE\n"


TINY = """\
- name: Tiny deploy
  hosts: scc_cluster
  gather_facts: false
  tasks:
    - name: Write a marker
      ansible.builtin.copy:
        dest: "{{ marker_dir }}/{{ inventory_hostname }}.txt"
        content: "{{ greeting | default('hello') }}\\n"
        mode: "0644"
    - name: Refuse on the bad node
      ansible.builtin.fail:
        msg: "{{ inventory_hostname }}: marker setting is wrong: set greeting"
      when: inventory_hostname == 'bad'
"""


@pytest.fixture
def tiny_deploy(tmp_path: Path) -> tuple[Path, Path, Path]:
    import sys

    book = tmp_path / "tiny.yml"
    book.write_text(TINY)
    inv = tmp_path / "hosts.ini"
    inv.write_text("[scc_cluster]\n"
                   f"good ansible_connection=local ansible_python_interpreter={sys.executable}\n"
                   f"bad ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    markers = tmp_path / "markers"
    markers.mkdir()
    return book, inv, markers


def test_deploy_reports_the_nodes_that_did_not_finish(tiny_deploy: tuple[Path, Path, Path],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    book, inv, markers = tiny_deploy
    rc = cli.main(["deploy", "-i", str(inv), "--playbook", str(book), "-e", f"marker_dir={markers}",
                   "-e", "greeting=hi=there"])
    out = capsys.readouterr().out
    assert rc == 1
    assert (markers / "good.txt").read_text() == "hi=there\n"
    assert "Nodes that did not finish: bad\n" in out
    assert f"{book}: FAILED in " in out
    assert ", 2 changes" in out
    assert "Refuse on the bad node: bad: marker setting is wrong: set greeting" in out


def test_deploy_check_mode_changes_nothing(tiny_deploy: tuple[Path, Path, Path],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    book, inv, markers = tiny_deploy
    rc = cli.main(["deploy", "-i", str(inv), "--playbook", str(book), "-e", f"marker_dir={markers}",
                   "--check", "--limit", "good"])
    out = capsys.readouterr().out
    assert rc == 0
    assert list(markers.iterdir()) == []
    assert f"{book}: OK in " in out
    assert "1 changes" in out  # would change, in check mode


def test_limit_that_matches_nothing_is_one_line(tiny_deploy: tuple[Path, Path, Path],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    book, inv, _ = tiny_deploy
    rc = cli.main(["deploy", "-i", str(inv), "--playbook", str(book), "--limit", "node9"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"sccnlp: error: ansible-playbook could not run tiny.yml with inventory {inv}: ")
    assert "no hosts" in err
    assert "Per-host summary" not in out
