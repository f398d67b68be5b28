"""`-e` / `--extra-var` of every sccnlp command, read the way ansible-playbook reads `-e`.

Each value is one of: `KEY=VALUE` words (several in one value, shell-quoted; every value a string, as on the
ansible-playbook command line), a YAML or JSON mapping (`{"validate_floors_override": {...}}`, typed values), or
`@FILE`, a YAML or JSON file holding a mapping. Later values win, key by key. A value ansible-playbook would take as
something else (a bare word, a file name without `@`) is refused with one line that says what to write.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from sccnlp.errors import SccError
from sccnlp.runner import yaml_problem

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FORMS = "write KEY=VALUE, a YAML/JSON mapping such as '{\"bert_prepare_phases\": [1]}', or @FILE"


def parse_extra_vars(values: Sequence[str]) -> dict[str, Any]:
    """The variables of every `-e` value, merged in order."""
    out: dict[str, Any] = {}
    for value in values:
        if value:
            out.update(_one(value))
    return out


def _one(value: str) -> dict[str, Any]:
    if value.startswith("@"):
        data = _load(value, *_read(value[1:]))
    elif value[0] in "/.":
        raise SccError(f"-e {value!r}: a file of variables is written with @ in front: -e @{value}")
    elif value[0] in "[{":
        data = _load(value, value, "the value")
    else:
        return _key_values(value)
    if not isinstance(data, dict):
        raise SccError(f"-e {value!r}: {type(data).__name__ if data is not None else 'nothing'} where a mapping of "
                       f"variables belongs; {_FORMS}")
    bad = [str(k) for k in data if not isinstance(k, str) or not _NAME.fullmatch(k)]
    if bad:
        raise SccError(f"-e {value!r}: {', '.join(bad)} is not a variable name (letters, digits, _)")
    return data


def _key_values(value: str) -> dict[str, str]:
    from ansible.errors import AnsibleError  # type: ignore[import-untyped]
    from ansible.parsing.splitter import parse_kv  # type: ignore[import-untyped]

    try:
        pairs = parse_kv(value)
    except AnsibleError as exc:  # an unclosed quote
        raise SccError(f"-e {value!r}: {' '.join(str(exc).split())}; {_FORMS}") from None
    if "_raw_params" in pairs or any(not _NAME.fullmatch(k) for k in pairs):
        raise SccError(f"-e {value!r}: expected KEY=VALUE; {_FORMS}")
    return {str(k): str(v) for k, v in pairs.items()}


def _read(name: str) -> tuple[str, str]:
    path = Path(name).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SccError(f"-e @{name}: cannot read {path} ({exc}); give an existing YAML or JSON file") from None
    if text.startswith("$ANSIBLE_VAULT"):
        raise SccError(f"-e @{name}: the file is vault-encrypted, which sccnlp does not decrypt; put the variables "
                       "in group_vars (with the vault password in the Ansible configuration) instead")
    return text, str(path)


def _load(value: str, text: str, where: str) -> Any:
    """JSON first, then YAML, as Ansible's loader reads them (JSON's 1e-3 is a number, YAML 1.1's a string)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        position, problem = yaml_problem(exc)
        raise SccError(f"-e {value[:80]!r}: {where} is not valid YAML or JSON ({position + ': ' if position else ''}"
                       f"{problem}); {_FORMS}") from None
