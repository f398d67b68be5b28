"""Node-side RDMA counter reader: prints one JSON line per sample of every port's traffic counters.

Standard library only and Python 3.6 compatible, because `sccnlp monitor rdma --hosts ...` streams this file to
`python3 -` over ssh on nodes that have no sccnlp installed. Usage: rdma_reader.py ROOT INTERVAL SAMPLES.
Output lines: {"seq": n, "t": monotonic seconds, "ports": {"mlx5_0/1": {"port_xmit_data": ..., ...}}};
when ROOT holds no device: {"error": "no RDMA devices under ROOT"} and exit status 3.
"""

import json
import os
import sys
import time

COUNTERS = ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets")
NO_DEVICES_EXIT = 3


def list_ports(root):
    """[(device, port)] for every <root>/<dev>/ports/<p>/counters directory, sorted."""
    found = []  # type: list[tuple[str, str]]
    try:
        devices = sorted(os.listdir(root))
    except OSError:
        return found
    for device in devices:
        ports_dir = os.path.join(root, device, "ports")
        try:
            ports = sorted(os.listdir(ports_dir), key=lambda p: (len(p), p))
        except OSError:
            continue
        for port in ports:
            if os.path.isdir(os.path.join(ports_dir, port, "counters")):
                found.append((device, port))
    return found


def read_counter(path):
    try:
        with open(path) as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def read_sample(root, ports, seq=0):
    sample = {"seq": seq, "t": time.monotonic(), "ports": {}}
    for device, port in ports:
        base = os.path.join(root, device, "ports", port, "counters")
        sample["ports"][device + "/" + port] = {name: read_counter(os.path.join(base, name)) for name in COUNTERS}
    return sample


def main(argv):
    root = argv[0] if argv else "/sys/class/infiniband"
    interval = float(argv[1]) if len(argv) > 1 else 1.0
    samples = int(argv[2]) if len(argv) > 2 else 0
    ports = list_ports(root)
    if not ports:
        print(json.dumps({"error": "no RDMA devices under " + root}), flush=True)
        return NO_DEVICES_EXIT
    seq = 0
    next_at = time.monotonic()
    while samples <= 0 or seq < samples:
        print(json.dumps(read_sample(root, ports, seq)), flush=True)
        seq += 1
        next_at += interval
        delay = next_at - time.monotonic()
        if (samples <= 0 or seq < samples) and delay > 0:
            time.sleep(delay)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (KeyboardInterrupt, BrokenPipeError):
        sys.exit(0)
