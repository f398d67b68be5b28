# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The shared-storage check (roles/_shared_storage, called by cpfs_client, bert, node_reboot and validate): one node
writes a probe file, every node looks for it; this judges what they saw, and, for a GlusterFS volume, whether the
volume itself is whole (plugin_utils.glusterfs_health: a mount keeps working with a replica missing). Also the
GlusterFS bricks a smaller inventory would orphan.

Pure functions over what the nodes printed and the run's unreached nodes: storage_check (filter
shared_storage_check) judges the check; shared_storage_verdict (filter of the same name, the dd form of release 0.3)
and orphan_bricks (filter gluster_orphan_bricks) are thin-wrapped too."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from .glusterfs_health import volume_verdict

MIB = 1048576
_DD_SECONDS = re.compile(r"copied, ([0-9.]+) s")


def _seconds(stderr: str) -> float:
    """The seconds dd reports ('... copied, 0.52 s, ...'), 0.0 when it reports none."""
    match = _DD_SECONDS.search(stderr)
    try:
        return float(match.group(1)) if match else 0.0
    except ValueError:
        return 0.0


def shared_storage_verdict(dd: Mapping[str, Any], hosts: Sequence[str], sizes: Sequence[Any], probe_mib: Any,
                           unreached: Sequence[str], first: str, shared_dir: str,
                           write_floor: Any = None) -> dict[str, list[dict[str, Any]]]:
    """`measurements`: shared_storage_visible (nodes that saw the probe file at its full size; None when no probe
    was written, as in check mode) and shared_storage_write_mbps (dd's write rate); `blame`: the reached nodes that
    did not see the file and the nodes not reached, once the probe was written.

    `dd`: the registered dd result (rc, stderr, skipped); `sizes`: the size each of `hosts` saw (-1 for none)."""
    size = int(probe_mib) * MIB
    rc = dd.get("rc")
    stderr = str(dd.get("stderr") or "")
    written = dd.get("rc", 1) == 0 and not dd.get("skipped", False)
    seen = sum(1 for s in sizes if s == size)
    blind = [h for h, s in zip(hosts, sizes) if s != size]
    blind_reached = list(dict.fromkeys(h for h in blind if h not in unreached))
    not_reached = ("; not reached in this run: %s (start the node or fix its connection, then run again)"
                   % ", ".join(unreached)) if unreached else ""
    if rc != 0:
        detail = ("cannot write to %s: %s; mount the shared storage (playbooks/storage.yml)"
                  % (shared_dir, stderr[-200:]))
    elif blind:
        detail = "file written by %s in %s not seen (same size) by %s%s%s" % (
            first, shared_dir, ", ".join(blind_reached) or "no reached node",
            " (check shared_storage_mounted of those nodes)" if blind_reached else "", not_reached)
    else:
        detail = "a %d MiB file written by %s in %s seen by every node" % (size // MIB, first, shared_dir)
    secs = _seconds(stderr)
    mbps = round(size / secs / 1000000, 1) if rc == 0 and secs > 0 else None
    measurements = [
        {"name": "shared_storage_visible", "value": seen if written else None, "unit": "nodes", "floor": len(hosts),
         "detail": detail},
        {"name": "shared_storage_write_mbps", "value": mbps,
         "unit": "MB/s", "floor": write_floor, "detail": "dd conv=fsync of %d MiB from %s" % (size // MIB, first)},
    ]
    blame = [{"host": h, "msg": "%s: did not see the file %s wrote in %s (shared storage not shared with this node)"
              % (h, first, shared_dir)} for h in (blind_reached if written else [])]
    blame += [{"host": h, "msg": "%s: not reached, so the shared-storage check could not include it" % h}
              for h in (unreached if written else [])]
    return {"measurements": measurements, "blame": blame}


def orphan_bricks(volume_info: str, known: Sequence[str]) -> list[dict[str, str]]:
    """The bricks of `gluster volume info` (lines 'BrickN: HOST:/PATH') on a host that is none of `known` (the
    inventory's names, addresses and short names), by its name or its short name."""
    out = []
    for line in str(volume_info or "").splitlines():
        if not re.match(r"^Brick[0-9]+:\s", line):
            continue
        brick = line.split(None, 1)[1].strip()
        host = brick.rsplit(":", 1)[0]
        if host not in known and host.split(".", maxsplit=1)[0] not in known:
            out.append({"host": host, "brick": brick})
    return out


def _reading(seen: Mapping[str, Any]) -> dict[str, Any]:
    """What a node's read of the probe printed (roles/_shared_storage/files/storage_probe.py), {} when not read."""
    if not seen or seen.get("rc") != 0:
        return {}
    try:
        return dict(json.loads((seen.get("stdout") or "").strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return {}


def storage_check(writer: str, written: Mapping[str, Any], seen: Mapping[str, Mapping[str, Any]],
                  hosts: Sequence[str], unreached: Sequence[str], token: str, shared_dir: str, mountpoint: str = "",
                  source: str = "", fix: str = "", situation: str = "", stop: str = "",
                  write_floor: Any = None, probe: bool = True, volume: str = "",
                  volume_probe: Optional[str] = None) -> dict[str, Any]:
    """The shared-storage check of roles/_shared_storage: `writer` wrote a probe file holding `token` in
    `shared_dir` (`written`: what the write printed, rc/bytes/seconds/error; {} when the token was written earlier);
    every node of `hosts` looked for it (`seen`: each node's registered read). A node passes when `mountpoint` (if
    set) is a mount point, mounted from `source` (if set), and the file is there with the token (and, when its size
    is known, the size written). With `probe` false no file was written: only the mount is judged.

    `volume` (SERVER:/NAME, a GlusterFS volume) and `volume_probe` (what roles/_shared_storage/files/glusterfs_probe.sh
    printed; None when the volume was not asked): whether the volume is whole (volume_verdict), blamed on the brick's
    node when it is one of `hosts`.

    Returns `problems` (host -> the message naming the node, what it saw, `situation`, `stop` and `fix`, where
    '{node}' in `fix` is the node), `mounted` (host -> the report's check shared_storage_mounted),
    `measurements` and `blame` for the report (shared_storage_visible, shared_storage_write_mbps) and `volume` (None
    when no volume was asked, else its `problems`, `blame`, `detail` and the report's check
    shared_storage_volume_whole)."""
    size = int(written.get("bytes") or 0) if written else 0
    wrote = not written or written.get("rc") == 0
    problems: dict[str, str] = {}
    mounted: dict[str, dict[str, Any]] = {}

    def say(host: str, what: str) -> str:
        return "%s: %s%s; %sFix: %s" % (host, what, situation, (stop + " ") if stop else "",
                                        fix.replace("{node}", host))

    if not wrote:
        problems[writer] = say(writer, "cannot write to %s: %s" % (shared_dir, written.get("error")))
    blind = []
    for host in hosts:
        if host in unreached:
            continue
        got = _reading(seen.get(host) or {})
        mount = got.get("mount")
        if mountpoint:
            if mount:
                said = "%s: %s is mounted (%s %s)" % (host, mountpoint, mount.get("fstype"), mount.get("source"))
            else:
                said = ("%s: %s is not a mount point: the shared storage is not mounted on this node. Fix: run "
                        "playbooks/storage.yml --limit %s (or `mount %s` on the node, from /etc/fstab)"
                        % (host, mountpoint, host, mountpoint))
            mounted[host] = {"name": "shared_storage_mounted", "status": "pass" if mount else "fail",
                             "measured": None, "floor": None, "unit": "", "detail": said}
        if not wrote or (not probe and mount is not None and (not source or mount.get("source") == source)):
            continue
        if mountpoint and mount is None:
            what = "the shared storage is not mounted at %s" % mountpoint
        elif mountpoint and source and mount is not None and mount.get("source") != source:
            what = "%s is mounted from %s (%s), not from %s" % (mountpoint, mount.get("source"), mount.get("fstype"),
                                                                source)
        elif not got.get("exists"):
            what = "the file %s wrote in %s is not visible here (%s)" % (writer, shared_dir,
                                                                         got.get("error") or "not read")
        elif got.get("head") != token or (size and got.get("size") != size):
            what = "the file %s wrote in %s is another one here (%s bytes, another storage is mounted)" % (
                writer, shared_dir, got.get("size"))
        else:
            continue
        blind.append(host)
        problems[host] = say(host, what)
    not_reached = ("; not reached in this run: %s (start the node or fix its connection, then run again)"
                   % ", ".join(unreached)) if unreached else ""
    mib = size // MIB
    if not wrote:
        detail = "cannot write to %s: %s; mount the shared storage (playbooks/storage.yml)" % (
            shared_dir, str(written.get("error"))[-200:])
    elif blind or unreached:
        detail = "file written by %s in %s not seen (same size) by %s%s%s" % (
            writer, shared_dir, ", ".join(blind) or "no reached node",
            " (check shared_storage_mounted of those nodes)" if blind else "", not_reached)
    else:
        detail = "a %d MiB file written by %s in %s seen by every node" % (mib, writer, shared_dir)
    seconds = float(written.get("seconds") or 0) if written else 0.0
    measurements = [
        {"name": "shared_storage_visible", "value": len(hosts) - len(blind) - len(unreached) if wrote else None,
         "unit": "nodes", "floor": len(hosts), "detail": detail},
        {"name": "shared_storage_write_mbps", "value": round(size / seconds / 1000000, 1) if wrote and seconds > 0
         else None, "unit": "MB/s", "floor": write_floor,
         "detail": "fsync'd write of %d MiB from %s" % (mib, writer)},
    ]
    blame = [{"host": h, "msg": "%s: did not see the file %s wrote in %s (shared storage not shared with this node)"
              % (h, writer, shared_dir)} for h in (blind if wrote else [])]
    blame += [{"host": h, "msg": "%s: not reached, so the shared-storage check could not include it" % h}
              for h in (unreached if wrote else [])]
    return {"problems": problems, "mounted": mounted, "measurements": measurements, "blame": blame,
            "volume": volume_check(volume, volume_probe, hosts)}


def volume_check(volume: str, probe: Optional[str], hosts: Sequence[str]) -> Optional[dict[str, Any]]:
    """The GlusterFS volume `volume` (SERVER:/NAME) judged from its probe: {problems, blame, detail, check} with the
    report's check shared_storage_volume_whole; None when the volume was not asked (no volume, or check mode)."""
    if not volume or probe is None:
        return None
    server, _sep, name = volume.rpartition(":/")
    verdict = volume_verdict(probe, name or volume, server or volume, list(hosts))
    problems = list(verdict["problems"])
    check = {"name": "shared_storage_volume_whole", "status": "fail" if problems else "pass", "measured": None,
             "floor": None, "unit": "", "detail": "; ".join(problems) or verdict["detail"]}
    return {"problems": problems, "blame": list(verdict["blame"]), "detail": verdict["detail"], "check": check}


def mount_state(fstab: str, mounted: Optional[Mapping[str, Any]], path: str, src: str, fstype: str,
                opts: str) -> dict[str, bool]:
    """Whether the node already has what ansible.posix.mount (state mounted) would make: `fstab` has the line
    'SRC PATH FSTYPE OPTS 0 0' for the mount point (its last entry for it counts), and `mounted` (what is mounted at
    PATH: fstype, source; None for nothing) is that source."""
    entry = None
    for line in str(fstab or "").splitlines():
        fields = line.split()
        if len(fields) >= 4 and not fields[0].startswith("#") and fields[1] == path:
            entry = fields + ["0"] * (6 - len(fields))
    in_fstab = entry is not None and entry[:6] == [src, path, fstype, opts, "0", "0"]
    return {"fstab": in_fstab, "mounted": mounted is not None and mounted.get("source") == src}
