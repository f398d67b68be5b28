# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Whether a GlusterFS volume is whole: every brick online, every brick's server a connected peer, nothing waiting
to be healed; and, for each fault, the brick it concerns and the commands that mend it.

A mounted volume keeps working with a replica missing, so a token written and read back (the shared-storage check)
passes while a brick is lost: this verdict is what `gluster volume status` and `gluster volume heal ... info
summary` would tell a person. Pure functions over the probe's text (roles/_shared_storage/files/glusterfs_probe.sh
prints it: the XML answers of `gluster --xml` between `### ` lines); the filter glusterfs_volume_verdict is a thin
wrapper. Tested on real recorded probes (tests/fixtures/tool_outputs/glusterfs/)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

SECTIONS = ("volume info", "volume status", "volume heal", "pool list")


@dataclass
class Probe:
    """What the probe printed: where it ran, and each gluster command's XML answer (None: no answer)."""

    where: str = ""          # "local NODE" (that node's glusterd answered) or "remote SERVER"
    answers: dict[str, Optional[ET.Element]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def local(self) -> bool:
        return self.where.startswith("local ")

    @property
    def node(self) -> str:
        return self.where.split(" ", 1)[1] if " " in self.where else ""


def parse_probe(text: str) -> Probe:
    """Split the probe's output into its sections (`### probe local|remote NAME`, `### <command>`, XML, `### rc N`)."""
    probe = Probe()
    current, body = "", []  # type: str, list[str]
    for line in str(text or "").splitlines():
        if line.startswith("### probe "):
            probe.where = line[len("### probe "):].strip()
        elif line.startswith("### rc "):
            if current:
                _answer(probe, current, "\n".join(body), line[len("### rc "):].strip())
            current, body = "", []
        elif line.startswith("### "):
            current = next((s for s in SECTIONS if line[4:].startswith(s)), line[4:].strip())
            body = []
        elif current:
            body.append(line)
    return probe


def _answer(probe: Probe, section: str, xml: str, rc: str) -> None:
    start = xml.find("<?xml")
    root: Optional[ET.Element] = None
    if start >= 0:
        try:
            root = ET.fromstring(xml[start:].encode())
        except ET.ParseError:
            root = None
    text_before = " ".join(xml[:start if start >= 0 else len(xml)].split())
    if root is None:
        probe.answers[section] = None
        probe.errors[section] = text_before or ("exit status %s, no answer" % rc)
        return
    if (root.findtext("opRet") or "0").strip() != "0":
        probe.answers[section] = None
        probe.errors[section] = (root.findtext("opErrstr") or "").strip() or text_before or "exit status %s" % rc
        return
    probe.answers[section] = root


def _int(text: Optional[str]) -> int:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return 0


@dataclass
class Brick:
    name: str                # host:/path
    host: str
    path: str
    uuid: str


def _bricks(info: ET.Element, volume: str) -> tuple[Optional[ET.Element], list[Brick]]:
    for vol in info.iter("volume"):
        if vol.findtext("name") == volume:
            bricks = []
            for b in vol.iter("brick"):
                name = (b.findtext("name") or (b.text or "")).strip()
                host, _sep, path = name.rpartition(":")
                bricks.append(Brick(name, host, path, (b.findtext("hostUuid") or b.get("uuid") or "").strip()))
            return vol, bricks
    return None, []


def _online(status: Optional[ET.Element]) -> set[str]:
    """host:/path of every brick `gluster volume status` reports online (the self-heal daemons are left out)."""
    out: set[str] = set()
    if status is None:
        return out
    for node in status.iter("node"):
        path = (node.findtext("path") or "").strip()
        if path.startswith("/") and (node.findtext("status") or "").strip() == "1":
            out.add("%s:%s" % ((node.findtext("hostname") or "").strip(), path))
    return out


def _peers(pool: Optional[ET.Element]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    if pool is None:
        return out
    for peer in pool.iter("peer"):
        out[(peer.findtext("uuid") or "").strip()] = {
            "hostname": (peer.findtext("hostname") or "").strip(),
            "connected": (peer.findtext("connected") or "").strip(),
            "state": (peer.findtext("stateStr") or "").strip()}
    return out


def _heal(heal: Optional[ET.Element]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    if heal is None:
        return out
    for brick in heal.iter("brick"):
        out[(brick.findtext("name") or "").strip()] = {
            "pending": _int(brick.findtext("numberOfEntriesInHealPending")),
            "split": _int(brick.findtext("numberOfEntriesInSplitBrain"))}
    return out


def _repair(volume: str, brick: Brick, admin: str, replica: int, pure_replicate: bool) -> str:
    """The commands that bring `brick` back, each written as: on NODE, then the command in backquotes; NODE is `admin`
    (a server whose glusterd is in the pool) or the brick's node. `gluster --mode=script` answers the CLI's own
    questions."""
    g = "gluster --mode=script"
    host = brick.host
    down = ("if %s is only down or its glusterd stopped: on %s `systemctl start glusterd`, then on %s `%s volume start "
            "%s force && %s volume heal %s`" % (host, host, admin, g, volume, g, volume))
    rejoin = ("on %s `systemctl enable --now glusterd && mkdir -p %s`, on %s `%s peer probe %s`, and once gluster peer "
              "status on %s shows %s in state Peer in Cluster, on %s "
              % (host, brick.path, admin, g, host, admin, host, admin))
    if pure_replicate and replica >= 2:
        lost = ("if %s was re-imaged (its brick and GlusterFS state are gone): on %s `%s volume remove-brick %s "
                "replica %d %s force && %s peer detach %s force`, %s`%s volume add-brick %s replica %d %s force && %s "
                "volume heal %s full`" % (host, admin, g, volume, replica - 1, brick.name, g, host, rejoin, g, volume,
                                          replica, brick.name, g, volume))
    else:
        lost = ("if %s was re-imaged: on %s `%s peer detach %s force`, %s`%s volume reset-brick %s %s %s commit force "
                "&& %s volume heal %s full`" % (host, admin, g, host, rejoin, g, volume, brick.name, brick.name, g,
                                                volume))
    return "Fix: %s; %s" % (down, lost)


def volume_verdict(probe_text: str, volume: str, server: str, hosts: Sequence[str] = ()) -> dict[str, Any]:
    """{'problems': [...], 'blame': [{'host', 'msg'}], 'detail': one line}: no problem when the volume is Started,
    every brick online on a connected peer and no entry waits to be healed (or is in split-brain).

    `volume`/`server`: the volume's name and the server the nodes mount it from; `hosts`: the inventory's nodes
    (a fault on a brick of one of them is blamed on that node, any other on the node the probe ran on)."""
    probe = parse_probe(probe_text)
    where = probe.node or server
    fallback = probe.node if probe.node in hosts else (next(iter(hosts)) if hosts else where)

    def result(problems: list[str], detail: str, blamed: Sequence[str] = ()) -> dict[str, Any]:
        names = list(blamed) or ([fallback] if problems else [])
        return {"problems": problems, "detail": detail,
                "blame": [{"host": h, "msg": "%s: %s" % (h, "; ".join(problems))} for h in names]}

    if not probe.where:
        return result(["GlusterFS volume %s: the probe printed nothing it could read (%s)"
                       % (volume, " ".join(str(probe_text or "").split())[-200:] or "no output")],
                      "volume %s not checked" % volume)
    info = probe.answers.get("volume info")
    if info is None:
        why = probe.errors.get("volume info", "no answer")
        return result(["GlusterFS volume %s: %s could not read it (%s). Fix: start glusterd on %s (`systemctl start "
                       "glusterd`) and check that the volume exists (`gluster volume info %s`)"
                       % (volume, where, why, server, volume)], "volume %s not read" % volume)
    vol, bricks = _bricks(info, volume)
    if vol is None:
        return result(["GlusterFS volume %s does not exist on %s. Fix: create it, or correct "
                       "cpfs_client_glusterfs_volume" % (volume, where)], "volume %s missing" % volume)
    state = (vol.findtext("statusStr") or "").strip()
    replica = _int(vol.findtext("replicaCount"))
    kind = (vol.findtext("typeStr") or "").strip()
    pure_replicate = kind == "Replicate" and _int(vol.findtext("brickCount")) == replica
    if state != "Started":
        return result(["GlusterFS volume %s is %s, not Started. Fix: `gluster volume start %s` on %s"
                       % (volume, state or "in no state", volume, server)], "volume %s %s" % (volume, state))
    online = _online(probe.answers.get("volume status"))
    peers = _peers(probe.answers.get("pool list"))
    heal = _heal(probe.answers.get("volume heal"))
    up = [b for b in bricks if b.name in online]
    admin = probe.node if probe.local else (up[0].host if up else server)
    problems, blamed = [], []
    for brick in bricks:
        if brick.name in online:
            continue
        peer = peers.get(brick.uuid)
        if peer is None or peer["connected"] != "1":
            why = ("its server %s is disconnected from the trusted pool, state %s" % (brick.host, peer["state"])
                   if peer else "its server %s is not in the trusted pool" % brick.host)
        else:
            why = "its process does not run on %s" % brick.host
        waiting = max([h["pending"] for name, h in heal.items() if name != brick.name] or [0])
        problems.append("GlusterFS volume %s: brick %s is missing from `gluster volume status` (%s)%s. %s"
                        % (volume, brick.name, why, ("; %d entries wait to be healed onto it" % waiting)
                           if waiting else "", _repair(volume, brick, admin if admin != brick.host else server,
                                                       replica, pure_replicate)))
        blamed.append(brick.host if brick.host in hosts else fallback)
    if not problems:
        pending = {name: h["pending"] for name, h in heal.items() if h["pending"] > 0}
        split = {name: h["split"] for name, h in heal.items() if h["split"] > 0}
        if split:
            problems.append("GlusterFS volume %s: entries in split-brain on %s. Fix: resolve them (`gluster volume "
                            "heal %s info split-brain` on %s lists them)"
                            % (volume, ", ".join("%s (%d)" % kv for kv in sorted(split.items())), volume, admin))
        elif pending:
            problems.append("GlusterFS volume %s: entries wait to be healed on %s (the replicas differ). Fix: "
                            "`gluster volume heal %s` on %s, then `gluster volume heal %s info summary` until none "
                            "is pending" % (volume, ", ".join("%s (%d)" % kv for kv in sorted(pending.items())),
                                            volume, admin, volume))
    heal_note = ("no entry pending heal" if heal else
                 "heal state not read (%s)" % (probe.errors.get("volume heal") or "no answer"))
    detail = "volume %s (%s, %d bricks): %d of %d bricks online, %s; probed %s" % (
        volume, kind or "?", len(bricks), len(up), len(bricks), heal_note if not problems else "degraded",
        probe.where)
    return result(problems, detail, blamed)
