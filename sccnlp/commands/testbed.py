"""`sccnlp testbed up|down|status|inventory`: the local test cluster."""

from __future__ import annotations

import argparse

from sccnlp.commands import add_command, add_group
from sccnlp.testbed import cluster


def register(sub: argparse._SubParsersAction) -> None:
    tsub = add_group(
        sub, "testbed", "the local Docker test cluster (Debian 12 nodes, GlusterFS, sshd)",
        examples=["sccnlp testbed up --nodes 3", "sccnlp testbed status", "sccnlp testbed inventory",
                  "sccnlp testbed down"])

    up = add_command(
        tsub, "up", "build the node image if needed and start the nodes; writes an inventory",
        details="Nodes are containers with systemd and sshd on a private network; the inventory it prints holds\n"
                "their addresses, the test bed's own SSH key and known_hosts. GlusterFS serves /mnt/shared's volume.",
        examples=["sccnlp testbed up", "sccnlp testbed up --name tb2 --nodes 2 --subnet 10.89.0.0/24 --no-storage",
                  "sccnlp testbed up --name dark --subnet 10.90.0.0/24 --no-egress"])
    up.add_argument("--name", default="scc-tb", help="test bed name (container prefix) [%(default)s]")
    up.add_argument("--nodes", type=int, default=3, help="number of nodes [%(default)s]")
    up.add_argument("--subnet", default="10.88.0.0/24", help="private network of the nodes [%(default)s]")
    up.add_argument("--wheel-dir", default="/opt/wheels",
                    help="controller wheel directory mounted read-only into the nodes [%(default)s]")
    up.add_argument("--no-storage", action="store_true", help="do not serve the GlusterFS volume")
    up.add_argument("--no-egress", action="store_true",
                    help="nodes without a route out (nothing forwarded beyond their network; deploy with --bundle)")
    up.add_argument("--tensorflow", action="store_true",
                    help="the deploy installs TensorFlow CPU as well (tensorflow_enabled), for sccnlp train "
                         "--framework tensorflow")
    up.set_defaults(func=_up)

    for action, summary, details, examples, func in (
            ("down", "remove the nodes, their network and the test bed's state", "",
             ["sccnlp testbed down", "sccnlp testbed down --name tb2"], _down),
            ("status", "show the nodes, their state and whether SSH answers",
             "Exit status 0 when every node runs and answers on SSH, 1 otherwise.",
             ["sccnlp testbed status", "sccnlp testbed status --name tb2"], _status),
            ("inventory", "print the path of the test bed's inventory", "",
             ["sccnlp testbed inventory", 'sccnlp deploy -i "$(sccnlp testbed inventory)" --check'], _inventory)):
        one = add_command(tsub, action, summary, examples=examples, details=details)
        one.add_argument("--name", default="scc-tb", help="test bed name [%(default)s]")
        one.set_defaults(func=func)

    img = add_command(tsub, "image", "build the node image (debootstrap + import) unless cached",
                      examples=["sccnlp testbed image", "sccnlp testbed image --force"])
    img.add_argument("--force", action="store_true", help="rebuild even if the recipe's image exists")
    img.set_defaults(func=_image)


def _up(args: argparse.Namespace) -> int:
    spec = cluster.TestbedSpec(name=args.name, nodes=args.nodes, subnet=args.subnet, wheel_dir=args.wheel_dir,
                               egress=not args.no_egress, tensorflow=args.tensorflow)
    tb = cluster.up(spec, storage=not args.no_storage)
    print(tb.inventory)
    return 0


def _down(args: argparse.Namespace) -> int:
    cluster.down(args.name)
    return 0


def _status(args: argparse.Namespace) -> int:
    rows = cluster.status(args.name)
    print(f"{'node':<8} {'container':<18} {'ip':<14} {'state':<10} ssh")
    for r in rows:
        print(f"{r['node']:<8} {r['container']:<18} {r['ip']:<14} {r['state']:<10} {r['ssh']}")
    return 0 if all(r["state"] == "running" and r["ssh"] == "ok" for r in rows) else 1


def _image(args: argparse.Namespace) -> int:
    from sccnlp.testbed.docker import ensure_daemon
    from sccnlp.testbed.image import build_image

    ensure_daemon()
    print(build_image(force=args.force))
    return 0


def _inventory(args: argparse.Namespace) -> int:
    print(cluster.Testbed.load(args.name).inventory)
    return 0
