"""An inventory as Ansible sees it (`ansible-inventory --list`), for the commands and libraries that read one
(discover, bundle build, monitor rdma)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sccnlp.errors import SccError
from sccnlp.runner import _collections_path, check_inventory_yaml

_FAILED = re.compile(r"Failed to parse .*? with (?:\S+ )?plugin: (?P<msg>.+?)(?: Failed to parse |$)")


def inventory_json(source: str, flush_cache: bool = False) -> dict[str, Any]:
    """`ansible-inventory --list` of a source, with the collection importable; one-line SccError on failure."""
    if not Path(source).exists():
        raise SccError(f"inventory {source} does not exist: pass -i with a *.scc.yml config")
    check_inventory_yaml(Path(source))
    tool = str(Path(sys.executable).parent / "ansible-inventory")
    cmd = [tool, "-i", source, "--list"] + (["--flush-cache"] if flush_cache else [])
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": _collections_path(), "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1",
           "ANSIBLE_FORCE_COLOR": "0", "NO_COLOR": "1"}
    if source.endswith((".scc.yml", ".scc.yaml")):
        env["ANSIBLE_INVENTORY_ENABLED"] = "scc.nlp_training.scc"
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        flat = " ".join(proc.stderr.split())
        found = _FAILED.search(flat)
        message = found.group("msg") if found else flat[-400:]
        message = re.split(r" \[ERROR\]| \[WARNING\]", message)[0]
        raise SccError(f"discovery with {source} failed: {message}")
    return json.loads(proc.stdout)


def plain(value: Any) -> Any:
    """ansible-inventory shows API strings in their unsafe envelope ({"__ansible_unsafe": "..."}): unwrap them."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def group_hosts(data: Mapping[str, Any], group: str, seen: set[str] | None = None) -> set[str]:
    """Hosts of a group of `ansible-inventory --list` output, children included."""
    seen = seen if seen is not None else set()
    if group in seen:
        return set()
    seen.add(group)
    body = data.get(group) or {}
    hosts = set(body.get("hosts") or [])
    for child in body.get("children") or []:
        hosts |= group_hosts(data, child, seen)
    return hosts
