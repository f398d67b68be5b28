# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The shared-storage checks of roles/validate (tasks/cluster.yml): one node writes a probe file with dd, every node
looks for it; this judges what they saw.

A pure function over the dd result, the sizes the nodes saw and the run's unreached nodes. The filter
shared_storage_verdict is a thin wrapper; the role records the measurements and the blame it returns."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

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
