"""`-e` of every sccnlp command reads as ansible-playbook's `-e` (ansible-core's own load_extra_vars on the same
values is the reference), and what ansible-playbook would misread is refused with one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sccnlp.errors import SccError
from sccnlp.extravars import parse_extra_vars


def ansible_reads(values: list[str], cwd: Path) -> dict[str, Any]:
    """What ansible-playbook makes of these -e values (ansible.utils.vars.load_extra_vars, its cache cleared)."""
    from ansible import context
    from ansible.module_utils.common.collections import ImmutableDict
    from ansible.parsing.dataloader import DataLoader
    from ansible.utils import vars as avars

    saved = context.CLIARGS
    context.CLIARGS = ImmutableDict(extra_vars=tuple(values))
    try:
        avars.load_extra_vars.extra_vars = None  # type: ignore[attr-defined]
        loader = DataLoader()
        loader.set_basedir(str(cwd))
        return dict(avars.load_extra_vars(loader))
    finally:
        avars.load_extra_vars.extra_vars = None  # type: ignore[attr-defined]
        context.CLIARGS = saved


CASES = [
    ["gpu_count=8"],
    ["scc_shared_dir=/mnt/cpfs", "empty=", "expr=a=b"],
    ["a=1 b='two words' c=\"x=y\""],
    ['{"validate_floors_override": {"gpu": {"H200": {"copy_tbps": 4}}}, "n": 2, "on": true}'],
    ["{bert_prepare_phases: [1], bert_lr: 0.001}"],
    ["a=1", '{"a": 2, "b": [1]}', "b=3"],
    ["@vars.yml"],
    ["@vars.json", "bert_steps=5"],
    [""],
]


@pytest.mark.parametrize("values", CASES, ids=[" ".join(c) or "empty" for c in CASES])
def test_the_same_variables_as_ansible_playbook(values: list[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "vars.yml").write_text("bert_model: base\nbert_steps: 40\nnested: {a: [1, 2]}\n")
    (tmp_path / "vars.json").write_text('{"bert_steps": 7, "bert_lr": 1e-3}\n')
    monkeypatch.chdir(tmp_path)
    got = parse_extra_vars(values)
    assert got == ansible_reads(values, tmp_path)
    assert got or values == [""]


@pytest.mark.parametrize(("values", "message"), [
    (["gpu_count"], "-e 'gpu_count': expected KEY=VALUE; write KEY=VALUE, a YAML/JSON mapping"),
    (["=8"], "-e '=8': expected KEY=VALUE"),
    (["1x=2"], "-e '1x=2': expected KEY=VALUE"),
    (["a='open"], "-e \"a='open\": "),
    (["./vars.yml"], "-e './vars.yml': a file of variables is written with @ in front: -e @./vars.yml"),
    (["[1, 2]"], "-e '[1, 2]': list where a mapping of variables belongs"),
    (["{a: [1"], "-e '{a: [1': the value is not valid YAML or JSON (line 1, column 7: expected ',' or ']'"),
    (["@missing.yml"], "-e @missing.yml: cannot read "),
    (["@list.yml"], "-e '@list.yml': list where a mapping of variables belongs"),
    (["@empty.yml"], "-e '@empty.yml': nothing where a mapping of variables belongs"),
    (["@bad.yml"], "is not valid YAML or JSON (line 2, column"),
    (["@vault.yml"], "-e @vault.yml: the file is vault-encrypted"),
    (['{"a b": 1}'], "a b is not a variable name"),
])
def test_what_ansible_would_misread_is_refused(values: list[str], message: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "list.yml").write_text("- a\n- b\n")
    (tmp_path / "empty.yml").write_text("")
    (tmp_path / "bad.yml").write_text("a: 1\n  b: [\n")
    (tmp_path / "vault.yml").write_text("$ANSIBLE_VAULT;1.1;AES256\n3132\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SccError) as refused:
        parse_extra_vars(["ok=1", *values])
    assert message in str(refused.value) and "\n" not in str(refused.value), str(refused.value)


class _Ran(Exception):
    """Raised by the stand-in for sccnlp.runner.run_playbook: the command got as far as running the playbook."""


@pytest.mark.parametrize("command", ["deploy", "validate", "train", "reboot"])
def test_every_command_passes_e_through_the_one_reader(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sccnlp deploy|validate|train|reboot hand the playbook what parse_extra_vars reads: a file, JSON and
    KEY=VALUE alike, a later value winning."""
    from sccnlp import cli, runner

    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[scc_cluster]\nn1\n")
    (tmp_path / "more.yml").write_text("bert_steps: 40\nvalidate_floors_override: {gpu: {}}\na: 0\n")
    seen: dict[str, Any] = {}

    def run_playbook(name: str, inventory: str, **options: Any) -> None:
        seen.update(options.get("extravars") or {})
        raise _Ran(name)

    monkeypatch.setattr(runner, "run_playbook", run_playbook)
    report = ["--report-dir", str(tmp_path / "report")] if command == "validate" else []
    with pytest.raises(_Ran):
        cli.main([command, "-i", str(inventory), *report, "-e", f"@{tmp_path / 'more.yml'}",
                  "-e", "a=1 c='two words'", "-e", '{"b": [2]}'])
    expected = {"bert_steps": 40, "validate_floors_override": {"gpu": {}}, "a": "1", "c": "two words", "b": [2]}
    assert expected.items() <= seen.items(), seen
