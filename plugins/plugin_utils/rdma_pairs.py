# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The RDMA pair verification of the ib_check role (tasks_from: pairs): the ring of RDMA nodes and each node's
perftest arguments, then the perftest pairs judged against the line rate and a latency ceiling, the node at fault
narrowed down, and the report's checks and curves.

Pure functions over plain data: the perftest results recorded by roles/ib_check/tasks/perftest_round.yml (tool,
client, server, rc, parsed output of parse_perftest, stderr) and the RDMA devices of ib_check_facts. The filters
rdma_pairs_ring, rdma_perftest_args, rdma_pairs_judge and rdma_pairs_report are thin wrappers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Pair = dict[str, Any]


def _float(value: Any) -> float:
    """Ansible's `float` filter: the float value, 0.0 when there is none."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def active_port(host: str, devices: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The first ACTIVE port of a host: (device, port); ValueError naming the host when it has none."""
    for device in devices or []:
        for port in device.get("ports") or []:
            if port.get("state") == "ACTIVE":
                return device, port
    raise ValueError("%s: no ACTIVE RDMA port in ib_check_facts.devices; check the link with ibstat "
                     "(role ib_check, tasks_from: facts, reads it)" % host)


def ring(hosts: Sequence[str]) -> list[dict[str, str]]:
    """Each RDMA node is the client of the next (1->2, ..., n->1); no pair with fewer than two nodes."""
    hosts = list(hosts)
    if len(hosts) < 2:
        return []
    return [{"client": h, "server": hosts[(i + 1) % len(hosts)]} for i, h in enumerate(hosts)]


def perftest_args(host: str, devices: Sequence[Mapping[str, Any]], tcp_port: int) -> list[str]:
    """perftest's arguments for a host's first ACTIVE port: device, port, the RoCE v2 GID on Ethernet, TCP port."""
    device, port = active_port(host, devices)
    args = ["-d", str(device.get("name")), "-i", str(port.get("port"))]
    if port.get("link_layer") == "Ethernet" and port.get("roce_v2_gid_index") is not None:
        args += ["-x", str(port.get("roce_v2_gid_index"))]
    return [*args, "-p", str(tcp_port)]


def _first(results: Sequence[Mapping[str, Any]], client: str, tool: str) -> Mapping[str, Any]:
    for result in results:
        if result.get("client") == client and result.get("tool") == tool:
            return result
    return {}


def _summary(result: Mapping[str, Any], key: str) -> Any:
    if not result or result.get("rc") != 0:
        return None
    return ((result.get("parsed") or {}).get("summary") or {}).get(key)


def judge_pairs(ring: Sequence[Mapping[str, str]], results: Sequence[Mapping[str, Any]],
                devices: Mapping[str, Sequence[Mapping[str, Any]]], min_fraction: float,
                max_latency_us: float) -> list[Pair]:
    """One verdict per ring pair: the line rate (the slower end's active port), the measured bandwidth (Gb/s) and
    typical latency (us), `ok` (bandwidth >= min_fraction of the line rate and latency <= max_latency_us), the
    error of the first failing tool, the bandwidth curve and the ports used."""
    pairs = []
    for pair in ring:
        client, server = pair["client"], pair["server"]
        bw = _first(results, client, "ib_write_bw")
        lat = _first(results, client, "ib_write_lat")
        cdev, cport = active_port(client, devices.get(client) or [])
        sdev, sport = active_port(server, devices.get(server) or [])
        line = min(_float(cport.get("rate_gbps")), _float(sport.get("rate_gbps")))
        gbps = _summary(bw, "max_bw_avg_gbps")
        usec = _summary(lat, "min_t_typical_usec")
        ok = (gbps is not None and gbps >= line * float(min_fraction)
              and usec is not None and usec <= float(max_latency_us))
        if bw.get("rc", 1) != 0:
            error = bw.get("stderr", "no result")
        elif lat.get("rc", 1) != 0:
            error = lat.get("stderr", "no result")
        else:
            error = ""
        pairs.append({
            "client": client, "server": server, "line_gbps": line, "gbps": gbps, "usec": usec, "ok": ok,
            "error": error, "curve": (bw.get("parsed") or {}).get("rows", []) if bw else [],
            "where": "%s:%s -> %s:%s" % (cdev.get("name"), cport.get("port"), sdev.get("name"), sport.get("port")),
        })
    return pairs


def narrow_faults(pairs: Sequence[Pair], rdma_hosts: int) -> dict[str, list[str]]:
    """`suspects`: in a ring of 3 or more nodes each node is in two pairs, so a node in two failing pairs is the one
    at fault. `loopback`: without a suspect, every node of a failing pair, to be tested alone."""
    bad = [p for p in pairs if not p["ok"]]
    nodes_bad = [p["client"] for p in bad] + [p["server"] for p in bad]
    unique = list(dict.fromkeys(nodes_bad))
    suspects = [n for n in unique if nodes_bad.count(n) >= 2 and rdma_hosts >= 3]
    return {"suspects": suspects, "loopback": [] if suspects else unique}


def _num(value: Any) -> str:
    return "n/a" if value is None else str(value)


def report(pairs: Sequence[Pair], suspects: Sequence[str], loopback_failed: Sequence[str], min_fraction: float,
           max_latency_us: Any, rdma_hosts: Sequence[str], play_hosts: int) -> dict[str, Any]:
    """The report's cluster `checks` (bandwidth and latency per pair, one per node at fault, a `skip` without
    pairs) and `curves` (ib_write_bw per pair), the nodes at fault (`faulty`) and the failing pairs (`bad`,
    'client->server')."""
    fraction = float(min_fraction)
    ceiling = float(max_latency_us)
    percent = int(round(fraction * 100, 0))
    faulty = list(dict.fromkeys(list(suspects) + list(loopback_failed)))
    checks: list[dict[str, Any]] = []
    for p in pairs:
        floor = round(p["line_gbps"] * fraction, 2)
        bw_ok = p["gbps"] is not None and p["gbps"] >= p["line_gbps"] * fraction
        lat_ok = p["usec"] is not None and p["usec"] <= ceiling
        checks.append({
            "name": "rdma_write_bw %s->%s" % (p["client"], p["server"]), "status": "pass" if bw_ok else "fail",
            "measured": p["gbps"], "floor": floor, "unit": "Gb/s",
            "detail": "%s: rdma_write_bw %s%sfloor %s (%s%% of %s Gb/s line rate, %s on %s)%s" % (
                p["client"], _num(p["gbps"]), " >= " if bw_ok else " < ", floor, percent, p["line_gbps"],
                p["where"], p["server"], (": " + str(p["error"])) if p["error"] else "")})
        checks.append({
            "name": "rdma_write_lat %s->%s" % (p["client"], p["server"]), "status": "pass" if lat_ok else "fail",
            "measured": p["usec"], "floor": None, "ceiling": ceiling, "unit": "us",
            "detail": "%s: rdma_write_lat %s us typical (ceiling %s us) to %s" % (
                p["client"], _num(p["usec"]), max_latency_us, p["server"])})
    for node in faulty:
        why = ("in two failing pairs while the other pairs pass" if node in suspects
               else "loopback ib_write_bw failed or below the floor")
        checks.append({"name": "rdma_node_at_fault " + node, "status": "fail", "measured": None, "floor": None,
                       "unit": "", "detail": "%s: RDMA at fault: %s; check its NIC, cable and switch port "
                                             "(ibstat, dmesg)" % (node, why)})
    if not pairs:
        checks.append({"name": "rdma_pairs", "status": "skip", "measured": len(rdma_hosts), "floor": None,
                       "unit": "RDMA nodes",
                       "detail": "RDMA devices on %d of %d nodes%s: perftest pairs skipped; NCCL uses TCP where there "
                                 "is no RDMA" % (len(rdma_hosts), play_hosts,
                                                 " (%s)" % ", ".join(rdma_hosts) if rdma_hosts else "")})
    curves = {}
    for p in pairs:
        if p["curve"]:
            points = [{"size": r["bytes"], "bw_avg": r["bw_avg_gbps"]}
                      for r in p["curve"] if r.get("bw_avg_gbps") is not None]
            curves["ib_write_bw %s->%s" % (p["client"], p["server"])] = points
    bad = ["%s->%s" % (p["client"], p["server"]) for p in pairs if not p["ok"]]
    return {"checks": checks, "curves": curves, "faulty": faulty, "bad": bad, "percent": percent}
