"""`sccnlp monitor rdma`: live per-port RDMA traffic (Gbit/s, packets/s) on this machine or across the cluster."""

from __future__ import annotations

import argparse
import socket
from typing import Any

from sccnlp.commands import add_command, add_group
from sccnlp.monitor import rdma


def register(subparsers: Any) -> None:
    sub = add_group(
        subparsers, "monitor", "watch live cluster metrics (RDMA traffic)",
        examples=["sccnlp monitor rdma", "sccnlp monitor rdma --inventory inventory/static/hosts.yml --count 10"],
        metavar="WHAT")
    p = add_command(
        sub, "rdma", "per-port RDMA transmit/receive rates from /sys/class/infiniband counters",
        details="Samples port_xmit_data/port_rcv_data (4-byte words) and the packet counters and prints rates per\n"
                "port. With --hosts or --inventory it runs a small reader on each node over ssh, with host keys\n"
                "checked: --inventory reaches the nodes as Ansible does (ansible_host, ansible_user, ansible_port,\n"
                "ansible_ssh_private_key_file, ansible_ssh_common_args/extra_args, ansible_python_interpreter).",
        examples=["sccnlp monitor rdma --count 5", "sccnlp monitor rdma --inventory inventory/static/hosts.yml",
                  "sccnlp monitor rdma --hosts node1,node2 --interval 2 --json"])
    p.add_argument("--sysfs-root", default=rdma.DEFAULT_ROOT, metavar="PATH",
                   help="directory holding <device>/ports/<n>/counters (default: %(default)s)")
    p.add_argument("--interval", type=float, default=1.0, metavar="S", help="seconds between samples (default 1)")
    p.add_argument("--count", type=int, default=0, metavar="N",
                   help="print N rounds of rates, then stop (default 0: until Ctrl-C)")
    p.add_argument("--json", action="store_true", help="print JSON lines (one per port per round)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--hosts", metavar="H1,H2", help="comma-separated nodes to watch over ssh")
    where.add_argument("--inventory", metavar="INV", help="watch every host of the scc_cluster group over ssh")
    p.add_argument("--group", default="scc_cluster", help="inventory group for --inventory (default %(default)s)")
    p.set_defaults(func=run_rdma)


def run_rdma(args: argparse.Namespace) -> int:
    targets = None
    if args.hosts:
        targets = rdma.hosts_from_list(args.hosts)
    elif args.inventory:
        targets = rdma.hosts_from_inventory(args.inventory, args.group)
    return rdma.monitor(root=args.sysfs_root, interval=args.interval, count=args.count, as_json=args.json,
                        targets=targets, host_label=socket.gethostname())
