"""`sccnlp discover -i CONFIG`: list the nodes the scc inventory plugin finds, as a table (a thin wrapper)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from sccnlp.commands import add_command
from sccnlp.errors import SccError
from sccnlp.runner import _collections_path, check_inventory_yaml

_FAILED = re.compile(r"Failed to parse .*? with (?:\S+ )?plugin: (?P<msg>.+?)(?: Failed to parse |$)")


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers, "discover", "list the SCC nodes an inventory finds (hosts, GPUs, groups)",
        details="Runs the scc inventory plugin (scc.nlp_training.scc) on a *.scc.yml discovery config, or\n"
                "ansible-inventory on any inventory, and prints one row per node.",
        examples=["sccnlp discover -i inventory/discovery.scc.yml",
                  "sccnlp discover -i inventory/discovery.scc.yml --flush-cache --json"])
    parser.add_argument("-i", "--inventory", required=True, metavar="CONFIG",
                        help="a *.scc.yml discovery config (see inventory/discovery.scc.yml) or any inventory")
    parser.add_argument("--flush-cache", action="store_true", help="ignore the inventory cache")
    parser.add_argument("--json", action="store_true", help="print ansible-inventory's JSON instead of a table")
    parser.set_defaults(func=run)


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


def table(data: dict[str, Any]) -> list[str]:
    hostvars = plain(data.get("_meta", {}).get("hostvars", {}))
    groups: dict[str, list[str]] = {}
    for group, body in data.items():
        if group in ("_meta", "all") or not isinstance(body, dict):
            continue
        for host in body.get("hosts", []):
            groups.setdefault(host, []).append(group)
    rows = [("HOST", "ADDRESS", "TYPE", "ZONE", "GPUS", "ARCH", "RDMA", "SLOTS", "GROUPS")]
    for host in sorted(hostvars):
        hv = hostvars[host]
        rows.append((host, str(hv.get("ansible_host", "")), str(hv.get("scc_instance_type", "")),
                     str(hv.get("scc_zone", "")), str(hv.get("gpu_count", "")), str(hv.get("gpu_arch", "")),
                     "yes" if hv.get("rdma") else "no", str(hv.get("mpi_slots", "")),
                     ",".join(sorted(groups.get(host, [])))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    gpus = sum(int(hostvars[h].get("gpu_count") or 0) for h in hostvars)
    lines.append(f"{len(hostvars)} node(s), {gpus} GPU(s)")
    return lines


def run(args: argparse.Namespace) -> int:
    data = inventory_json(args.inventory, args.flush_cache)
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        print("\n".join(table(data)))
    return 0
