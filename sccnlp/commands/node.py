"""`sccnlp node reimaged NODE`: a node that was re-imaged (or replaced under the same name) joins the cluster again."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from sccnlp.commands import add_command, add_extra_vars_option, add_group
from sccnlp.errors import SccError
from sccnlp.extravars import parse_extra_vars

CLUSTER_GROUP = "scc_cluster"


EXAMPLES = ["sccnlp node reimaged node2 -i inventory/static/hosts.yml",
            "sccnlp node reimaged node2 -i inventory/static/hosts.yml --fingerprint SHA256:abc",
            "sccnlp node reimaged node2 -i inventory/static/hosts.yml -e scc_bundle_dir=/mnt/cpfs/scc-bundle"]


def register(sub: argparse._SubParsersAction) -> None:
    actions = add_group(sub, "node", "day-2 operations on one node (a re-imaged node joins again)", examples=EXAMPLES)
    reimaged = add_command(
        actions, "reimaged", "trust a re-imaged node's new host keys and set it up again",
        details="The node was re-imaged or replaced under the same name and address: it sends new SSH host keys\n"
                "and has nothing installed. Only on your word (this command) are its keys in this controller's\n"
                "known_hosts replaced by the ones it sends now (fingerprints printed; with --fingerprint, one must\n"
                "match); strict host key checking stays on for every other run. Then the cluster phase runs on\n"
                "every node (each node's /etc/hosts, known hosts, authorized key and MPI hostfile learn the node's\n"
                "new keys) and the deploy chain on the node alone (--limit NODE). A GlusterFS brick the node held\n"
                "is named by the storage check with the commands that add it back.",
        examples=EXAMPLES)
    reimaged.add_argument("node", metavar="NODE", help="the node's inventory name")
    reimaged.add_argument("-i", "--inventory", required=True, help="the cluster's inventory")
    reimaged.add_argument("--fingerprint", action="append", default=[], metavar="SHA256:...",
                          help="a fingerprint the node's new key must have (from its console or provisioning "
                               "output); repeatable. Without it, the keys are trusted on your word and printed")
    reimaged.add_argument("--playbook", default="site",
                          help="what to run on the node after the cluster phase: a playbook under playbooks/ or a "
                               "path to a .yml file [%(default)s]")
    add_extra_vars_option(reimaged, "-e scc_bundle_dir=/mnt/cpfs/scc-bundle")
    reimaged.add_argument("-v", "--verbose", action="store_true", help="print every task and ok result")
    reimaged.set_defaults(func=run_reimaged)


def _node_hostvars(inventory: str, node: str) -> dict:
    from sccnlp.inventory import group_hosts, inventory_json, plain

    data = inventory_json(inventory)
    hostvars = plain(data.get("_meta", {}).get("hostvars", {}))
    group = next((str(v["scc_cluster_group"]) for v in hostvars.values() if v.get("scc_cluster_group")), CLUSTER_GROUP)
    members = group_hosts(data, group)
    if node not in members:
        known = ", ".join(sorted(members)) or "none"
        raise SccError(f"{node} is not a node of group {group!r} in {inventory} (its nodes: {known}); nothing was "
                       "changed. Fix: give the node's inventory name")
    return dict(hostvars.get(node, {}))


def trust_new_keys(inventory: str, node: str, wanted: list[str], out: TextIO | None = None) -> None:
    """Replace the node's keys in the controller's known_hosts by the ones it sends now (printed)."""
    from sccnlp import hostkeys

    out = out or sys.stdout
    access = hostkeys.access_from_hostvars(node, _node_hostvars(inventory, node))
    if not access.over_ssh:
        print(f"{node}: reached with ansible_connection={access.connection}: this controller keeps no SSH host key "
              "for it", file=out)
        return
    config = hostkeys.effective_config(access)
    names = hostkeys.host_names(config, access.address, access.port)
    files = hostkeys.known_hosts_files(config)
    if not files:
        raise SccError(f"{node}: ssh reads no known_hosts file for {names[0]} (UserKnownHostsFile none): strict host "
                       "key checking cannot hold its key; set UserKnownHostsFile in ansible_ssh_common_args")
    lines = hostkeys.scan(access, config)
    prints = hostkeys.fingerprints(lines)
    print(f"{node}: {names[0]} sends {len(lines)} host key(s): {', '.join(prints)}", file=out)
    if wanted and not any(p.split()[0] in wanted for p in prints):
        sent = ", ".join(p.split()[0] for p in prints)
        raise SccError(f"{node}: none of the keys {names[0]} sends has the fingerprint {', '.join(wanted)} (it sends "
                       f"{sent}); nothing was changed. Do not trust this node until you know which machine answers at "
                       "its address")
    global_files = [Path(f) for f in config.get("globalknownhostsfile", []) if f.lower() != "none"]
    stale = hostkeys.recorded([f for f in global_files if f not in files], names)
    if stale:
        where = ", ".join(str(p) for p in stale)
        raise SccError(f"{node}: {where} (the system-wide known hosts) holds keys of {names[0]}, which this command "
                       f"does not edit; nothing was changed. Fix: remove them (`ssh-keygen -R {names[0]} -f "
                       f"{next(iter(stale))}` as root), then run this command again")
    before = hostkeys.recorded(files, names)
    keys_before = sorted({" ".join(line.split()[1:3]) for old in before.values() for line in old})
    if keys_before == sorted({" ".join(line.split()[1:3]) for line in lines}):
        print(f"{node}: {', '.join(str(p) for p in before)} already hold exactly these keys: nothing to replace",
              file=out)
        return
    for line in hostkeys.replace(files, names, lines):
        print(f"{node}: {line}", file=out)
    if not wanted:
        print(f"{node}: trusted on your word that it was re-imaged; compare the fingerprints above with its console "
              "output", file=out)


def run_reimaged(args: argparse.Namespace) -> int:
    from sccnlp.commands.deploy import bundle_dir
    from sccnlp.runner import run_and_report

    variables = parse_extra_vars(args.extra_var)   # for both runs
    if variables.get("scc_bundle_dir"):
        variables["scc_bundle_dir"] = bundle_dir(variables["scc_bundle_dir"], "-e scc_bundle_dir=")
    if not Path(args.inventory).exists():
        raise SccError(f"inventory {args.inventory} does not exist: pass -i with the cluster's inventory")
    trust_new_keys(args.inventory, args.node, args.fingerprint)
    print(f"\n== {args.node}: the cluster phase on every node (their cluster files learn its new keys)", flush=True)
    wired = run_and_report("cluster", args.inventory, label="cluster.yml", extravars=variables,
                           verbose=args.verbose)
    if not wired.ok:
        print(f"{args.node} was not set up again: the cluster phase failed (above). Fix what it names, then run "
              f"`sccnlp node reimaged {args.node} -i {args.inventory}` again", flush=True)
        return 1
    label = args.playbook if args.playbook.endswith((".yml", ".yaml")) else f"{args.playbook}.yml"
    print(f"\n== {args.node}: {label} on {args.node} alone", flush=True)
    # localhost too: the inventory check of the preflight runs there.
    result = run_and_report(args.playbook, args.inventory, label=label, extravars=variables,
                            limit=f"{args.node},localhost",
                            verbose=args.verbose)
    return 0 if result.ok else 1
