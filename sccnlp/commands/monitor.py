"""`sccnlp monitor rdma`: per-port RDMA traffic (Gbit/s, packets/s): from Prometheus (PromQL rate(), live or any
past window) when a Prometheus URL is given, else live from the sysfs counters of this machine or, over ssh, of the
cluster's nodes."""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any

from sccnlp.commands import add_command, add_group
from sccnlp.errors import SccError
from sccnlp.monitor import prometheus, rdma


def register(subparsers: Any) -> None:
    sub = add_group(
        subparsers, "monitor", "watch live cluster metrics (RDMA traffic)",
        examples=["sccnlp monitor rdma", "sccnlp monitor rdma --inventory inventory/static/hosts.yml --count 10"],
        metavar="WHAT")
    p = add_command(
        sub, "rdma", "per-port RDMA transmit/receive rates from /sys/class/infiniband counters",
        details="With --prometheus URL (or $SCCNLP_PROMETHEUS_URL: the server playbooks/monitoring.yml runs, port\n"
                "9090 of the first node by default) the rates are PromQL rate() of node_exporter's infiniband\n"
                "counters over --window, live every --interval, or with --since one table per --step of that past\n"
                "window; --hosts/--inventory then pick the nodes by name. Without it, samples port_xmit_data/\n"
                "port_rcv_data (4-byte words) and the packet counters and prints rates per port: with --hosts or\n"
                "--inventory a small reader runs on each node over ssh, with host keys checked; --inventory reaches\n"
                "the nodes as Ansible does (ansible_host, ansible_user, ansible_port, ansible_ssh_private_key_file,\n"
                "ansible_ssh_common_args/extra_args, ansible_python_interpreter).",
        examples=["sccnlp monitor rdma --count 5", "sccnlp monitor rdma --inventory inventory/static/hosts.yml",
                  "sccnlp monitor rdma --hosts node1,node2 --interval 2 --json",
                  "sccnlp monitor rdma --prometheus http://node1:9090 --count 1",
                  "sccnlp monitor rdma --prometheus http://node1:9090 --since 1h --step 5m --json"])
    p.add_argument("--sysfs-root", default=rdma.DEFAULT_ROOT, metavar="PATH",
                   help="directory holding <device>/ports/<n>/counters (default: %(default)s)")
    p.add_argument("--interval", type=float, default=None, metavar="S",
                   help="seconds between samples (default 1; 15 with --prometheus, its scrape interval)")
    p.add_argument("--count", type=int, default=0, metavar="N",
                   help="print N rounds of rates, then stop (default 0: until Ctrl-C)")
    p.add_argument("--json", action="store_true", help="print JSON lines (one per port per round)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--hosts", metavar="H1,H2", help="comma-separated nodes to watch over ssh")
    where.add_argument("--inventory", metavar="INV", help="watch every host of the scc_cluster group over ssh")
    p.add_argument("--group", default="scc_cluster", help="inventory group for --inventory (default %(default)s)")
    prom = p.add_argument_group("from Prometheus")
    prom.add_argument("--prometheus", metavar="URL", default=os.environ.get(prometheus.ENV_URL, ""),
                      help=f"Prometheus server, e.g. http://node1:9090 (default: ${prometheus.ENV_URL})")
    prom.add_argument("--window", default="1m", metavar="DURATION",
                      help="rate() window (default %(default)s; at least two scrape intervals)")
    prom.add_argument("--since", default="", metavar="DURATION", help="history: the past DURATION (e.g. 1h), not live")
    prom.add_argument("--step", default="", metavar="DURATION", help="history: one table per STEP (default: --window)")
    prom.add_argument("--match", default=prometheus.DEFAULT_SELECTOR, metavar="LABELS",
                      help="label selector of node_exporter's series (default %(default)s)")
    p.set_defaults(func=run_rdma)


def run_rdma(args: argparse.Namespace) -> int:
    if args.prometheus:
        if args.sysfs_root != rdma.DEFAULT_ROOT:
            raise SccError("--sysfs-root is for the ssh reader; with --prometheus the nodes' node_exporter reads "
                           "sysfs (monitoring_node_exporter_sysfs_path): drop one of them")
        hosts: list[str] = []
        if args.hosts:
            hosts = [t.name for t in rdma.hosts_from_list(args.hosts)]
        elif args.inventory:
            hosts = [t.name for t in rdma.hosts_from_inventory(args.inventory, args.group)]
        interval = 15.0 if args.interval is None else args.interval
        return prometheus.monitor(args.prometheus, window=args.window, interval=interval,
                                  count=args.count, as_json=args.json, hosts=hosts, since=args.since,
                                  step=args.step, base_selector=args.match)
    if args.since or args.step:
        raise SccError("--since and --step read the history Prometheus keeps: give --prometheus URL (or set "
                       f"{prometheus.ENV_URL})")
    targets = None
    if args.hosts:
        targets = rdma.hosts_from_list(args.hosts)
    elif args.inventory:
        targets = rdma.hosts_from_inventory(args.inventory, args.group)
    return rdma.monitor(root=args.sysfs_root, interval=1.0 if args.interval is None else args.interval,
                        count=args.count, as_json=args.json,
                        targets=targets, host_label=socket.gethostname())
