"""The node side of the shared-storage check: write a probe file, or look for it. Prints one JSON line.

  storage_probe.py write PATH TOKEN MIB [MOUNTPOINT]   the token, then zeros up to MIB MiB (at least the token),
                                            fsync'd, unless MOUNTPOINT (when given) is not a mount point; prints
                                            {"rc", "bytes", "seconds", "error"}
  storage_probe.py read PATH MOUNTPOINT SETTLE   waits up to SETTLE seconds for MOUNTPOINT to be a mount point
                                            ('' = not checked), then looks at PATH; prints {"mount": {"fstype",
                                            "source"} or null, "exists", "size", "head", "error"}

Runs with the node's own Python 3 and nothing else (no Ansible module utils): one process per node and phase."""

import json
import os
import sys
import time

MIB = 1048576


def mount_of(mountpoint):
    """fstype and source of the file system mounted at `mountpoint` (/proc/self/mountinfo), else None."""
    want = os.path.realpath(mountpoint)
    found = None
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            left, _sep, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) > 4 and len(tail) > 1 and fields[4].replace("\\040", " ") == want:
                found = {"fstype": tail[0], "source": tail[1]}  # the last one mounted there wins
    return found


def write(path, token, mib, mountpoint=""):
    size = max(int(mib) * MIB, len(token) + 1)
    started = time.monotonic()
    if mountpoint and mount_of(mountpoint) is None:
        return {"rc": 1, "bytes": 0, "seconds": 0.0,
                "error": f"{mountpoint} is not a mount point here (the file would land on this node's own disk)"}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write((token + "\n").encode())
            left = size - len(token) - 1
            block = b"\0" * MIB
            while left > 0:
                handle.write(block[:min(left, MIB)])
                left -= min(left, MIB)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        return {"rc": 1, "bytes": 0, "seconds": 0.0, "error": str(exc)}
    return {"rc": 0, "bytes": size, "seconds": round(time.monotonic() - started, 6), "error": ""}


def read(path, mountpoint, settle):
    deadline = time.monotonic() + float(settle)
    mount = mount_of(mountpoint) if mountpoint else None
    while mountpoint and mount is None and time.monotonic() < deadline:
        time.sleep(5)
        mount = mount_of(mountpoint)
    out = {"mount": mount, "exists": False, "size": -1, "head": "", "error": ""}
    try:
        with open(path, "rb") as handle:
            out["head"] = handle.readline(256).decode(errors="replace").rstrip("\n")
        out.update(exists=True, size=os.path.getsize(path))
    except OSError as exc:
        out["error"] = str(exc)
    return out


def main(argv):
    if argv[1] == "write":
        print(json.dumps(write(*argv[2:6])))
    else:
        print(json.dumps(read(argv[2], argv[3], argv[4])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
