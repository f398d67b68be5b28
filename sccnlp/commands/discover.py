"""`sccnlp discover -i CONFIG`: list the nodes the scc inventory plugin finds, as a table (a thin wrapper)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sccnlp.commands import add_command
from sccnlp.inventory import inventory_json, plain


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
