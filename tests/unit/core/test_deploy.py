"""`sccnlp deploy`: bad input (missing inventory, malformed -e) is one clear line before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from sccnlp import cli

ROOT = Path(__file__).resolve().parents[3]


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


@pytest.fixture
def one_node(tmp_path: Path) -> Path:
    """An inventory of one node, n1, in the cluster group."""
    inv = tmp_path / "hosts.ini"
    inv.write_text("[scc_cluster]\nn1\n")
    return inv


def test_unknown_playbook_lists_the_playbooks(one_node: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = one_node
    rc = cli.main(["deploy", "-i", str(inv), "--playbook", "no_such_phase"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    names = sorted(p.stem for p in (ROOT / "playbooks").glob("*.yml"))
    assert {"site", "cluster", "storage", "validate"} <= set(names)
    assert err == (f"sccnlp: error: no playbook 'no_such_phase' in {ROOT / 'playbooks'}: choose one of "
                   f"{', '.join(names)} (or give the path of a .yml file)\n")


def test_missing_playbook_file_is_one_line(one_node: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    inv = one_node
    rc = cli.main(["deploy", "-i", str(inv), "--playbook", str(tmp_path / "mine.yml")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"sccnlp: error: playbook file {tmp_path / 'mine.yml'} does not exist: give the path of a "
                          f"playbook, or the name of one under {ROOT / 'playbooks'} (bert, cluster, ")
    assert len(err.splitlines()) == 1


def test_collection_without_playbooks_blames_sccnlp_collection(one_node: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    inv = one_node
    monkeypatch.setenv("SCCNLP_COLLECTION", str(tmp_path))
    assert cli.main(["deploy", "-i", str(inv)]) == 2
    assert capsys.readouterr().err == (
        f"sccnlp: error: no playbooks under {tmp_path / 'playbooks'}: SCCNLP_COLLECTION={tmp_path} is not the "
        "collection root; point SCCNLP_COLLECTION at the folder that holds galaxy.yml and playbooks/, or unset it\n")


def test_malformed_extra_var_through_the_cli(one_node: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = one_node
    rc = cli.main(["deploy", "-i", str(inv), "-e", "gpu_count"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err == ("sccnlp: error: -e 'gpu_count': expected KEY=VALUE; write KEY=VALUE, a YAML/JSON mapping such as "
                   "'{\"bert_prepare_phases\": [1]}', or @FILE\n")


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
    book, inv, _unused = tiny_deploy
    rc = cli.main(["deploy", "-i", str(inv), "--playbook", str(book), "--limit", "node9"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"sccnlp: error: ansible-playbook could not run tiny.yml with inventory {inv}: ")
    assert "no hosts" in err
    assert "Per-host summary" not in out


TAGGED = """\
- name: Tagged deploy
  hosts: scc_cluster
  gather_facts: false
  tasks:
    - name: Write a marker
      ansible.builtin.copy:
        dest: "{{ marker_dir }}/{{ inventory_hostname }}.txt"
        content: "tagged\\n"
        mode: "0644"
      tags: [marker, marker_write]
"""


@pytest.mark.parametrize("tags", ["nosuchtag", "marker,nosuchtag"])
def test_unknown_tag_is_refused_before_anything_runs(tiny_deploy: tuple[Path, Path, Path], tags: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Ansible runs zero tasks for a tag nothing has and reports success (`OK, 0 changes`): refuse it instead."""
    _book, inv, markers = tiny_deploy
    book = markers.parent / "tagged.yml"
    book.write_text(TAGGED)
    rc = cli.main(["deploy", "-i", str(inv), "--playbook", str(book), "-e", f"marker_dir={markers}", "-t", tags])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err == ("sccnlp: error: tag nosuchtag not in tagged.yml: it selects nothing. Tags of tagged.yml: "
                   "marker, marker_write\n")
    assert list(markers.iterdir()) == []


def test_known_tag_runs(tiny_deploy: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _book, inv, markers = tiny_deploy
    book = markers.parent / "tagged.yml"
    book.write_text(TAGGED)
    rc = cli.main(["deploy", "-i", str(inv), "--playbook", str(book), "-e", f"marker_dir={markers}",
                   "-t", "marker_write", "-l", "good"])
    assert rc == 0, capsys.readouterr()
    assert (markers / "good.txt").read_text() == "tagged\n"


def test_unknown_tag_of_site_lists_the_role_tags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The tags come from the playbooks themselves (`ansible-playbook --list-tags`): the roles' tags are there,
    `storage` (the old help example) is not a tag."""
    inv = tmp_path / "hosts.ini"
    inv.write_text("[scc_cluster]\nn1 ansible_host=127.0.0.2 ansible_port=1\n")
    rc = cli.main(["deploy", "-i", str(inv), "-t", "cluster,storage"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err.startswith("sccnlp: error: tag storage not in site.yml: it selects nothing. Tags of site.yml: ")
    listed = err.split("Tags of site.yml: ", 1)[1].strip().split(", ")
    assert {"cluster", "cpfs_client", "openmpi", "nccl", "pytorch", "python36"} <= set(listed)
    assert "storage" not in listed and "always" not in listed
    assert len(err.splitlines()) == 1


def test_empty_tag_name_is_refused(one_node: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = one_node
    assert cli.main(["deploy", "-i", str(inv), "-t", "cluster,"]) == 2
    assert capsys.readouterr().err == ("sccnlp: error: -t/--tags 'cluster,' has an empty name: give tags separated "
                                       "by commas, e.g. -t cluster,nccl\n")


BAD_INDENT = """\
all:
  children:
    scc_cluster:
      hosts:
        node1:
          ansible_host: 10.0.0.1
         gpu_count: 8
"""


def test_yaml_error_in_the_inventory_names_file_line_and_column(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    inv = tmp_path / "hosts.yml"
    inv.write_text(BAD_INDENT)
    rc = cli.main(["deploy", "-i", str(inv)])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err == (f"sccnlp: error: inventory {inv}, line 7, column 10: YAML error: expected <block end>, but found "
                   "'<block mapping start>' (while parsing a block mapping at line 5, column 9); fix the YAML there "
                   "(indentation, a missing ':', an unclosed bracket or quote)\n")


def test_yaml_error_in_group_vars_names_that_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = tmp_path / "hosts.ini"
    inv.write_text("[scc_cluster]\nnode1\n")
    (tmp_path / "group_vars").mkdir()
    bad = tmp_path / "group_vars" / "scc_cluster.yml"
    bad.write_text("gpu_count: 8\nscc_shared_dir: [/mnt/cpfs\n")
    assert cli.main(["validate", "-i", str(inv), "--report-dir", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sccnlp: error: inventory {bad}, line 3, column 1: YAML error: expected ',' or ']', "
                          "but got '<stream end>' (while parsing a flow sequence at line 2, column 17)")
    assert len(err.splitlines()) == 1


def test_ansible_yaml_tags_are_not_syntax_errors(tmp_path: Path) -> None:
    """!vault and !unsafe are Ansible's: the syntax check composes the YAML and constructs nothing."""
    from sccnlp.runner import check_inventory_yaml

    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  vars:\n    secret: !vault |\n      $ANSIBLE_VAULT;1.1;AES256\n      6162\n"
                   "    raw: !unsafe '{{ not a template }}'\n  hosts:\n    node1: {}\n")
    check_inventory_yaml(inv)
