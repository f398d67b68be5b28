# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The measurements and checks of the validate role, from what the nodes printed: the floors (their numbers, the
entry of a GPU model), GPU health (nvidia-smi -q parsed, the kernel log's XIDs), the node's NCCL all_reduce, the NCCL
transport in /etc/nccl.conf, the shared-storage mount, the MPI answers across the cluster (a failed mpirun said by
its cause, plugin_utils.mpirun_output), the peers each node resolves and reaches (plugin_utils.cluster_peers) and
the venv packages.

Pure functions over plain data; the filters in plugins/filter/validate_checks.py are thin wrappers. Measurements and
checks have the report's shape (sccnlp.node.gates.checks: name, value/measured, unit, floor/ceiling, detail,
skip/status)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from .mpirun_output import failure_cause

# Floors that are text, not numbers (floors.yml's gpu entries).
TEXT_KEYS = ("match", "gemm_dtype", "source")
_XID = re.compile(r"NVRM: Xid \(PCI:[^)]*\): (\d+)")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    return json.dumps(str(value))


def floors_problems(floors: Mapping[str, Any]) -> list[str]:
    """Every floor that is not a number, as 'cluster.KEY="VALUE"' or 'gpu.ENTRY.KEY[.SUB]="VALUE"': a check against
    it could not fail."""
    out = ["cluster.%s=%s" % (k, _shown(v)) for k, v in (floors.get("cluster") or {}).items() if not _is_number(v)]
    for entry, values in (floors.get("gpu") or {}).items():
        for key, value in (values.items() if isinstance(values, Mapping) else []):
            if key in TEXT_KEYS:
                continue
            for sub, number in (value.items() if isinstance(value, Mapping) else [(None, value)]):
                if not _is_number(number):
                    out.append("gpu.%s.%s%s=%s" % (entry, key, "" if sub is None else "." + str(sub), _shown(number)))
    return out


def floor_key(gpu_name: str, gpu_floors: Mapping[str, Any], explicit: str = "") -> str:
    """The floors entry of a GPU model: `explicit` when set, else the first entry (in file order) one of whose
    `match` strings (its own key without them) occurs in the name nvidia-smi prints; '' when none does."""
    if explicit:
        return explicit
    for key, entry in gpu_floors.items():
        patterns = entry.get("match", [key]) if isinstance(entry, Mapping) else [key]
        if any(str(p) in str(gpu_name) for p in patterns):
            return str(key)
    return ""


def floor_values(gpu_floors: Mapping[str, Any], key: str, gpu_count: Any) -> dict[str, Any]:
    """The floors of an entry as a flat mapping: its numbers, and nccl_all_reduce_busbw_gbps for this node's GPU
    count (left out when the entry has none for it)."""
    entry = (gpu_floors.get(key) or {}) if key else {}
    flat = {k: v for k, v in entry.items() if not isinstance(v, (Mapping, list, tuple, str))}
    busbw = entry.get("nccl_all_reduce_busbw_gbps") or {}
    if isinstance(busbw, Mapping) and str(gpu_count) in {str(k) for k in busbw}:
        flat["nccl_all_reduce_busbw_gbps"] = {str(k): v for k, v in busbw.items()}[str(gpu_count)]
    return flat


def xid_events(kernel_log: str, codes: Iterable[Any]) -> list[int]:
    """The XID codes of the kernel log that are in `codes` (the ones that mean a bad GPU), in log order."""
    wanted = {int(c) for c in codes}
    return [int(x) for x in _XID.findall(str(kernel_log or "")) if int(x) in wanted]


def gpu_health(smi: Mapping[str, Any], smi_q: Mapping[str, Any], dmesg: Mapping[str, Any], xid_codes: Sequence[Any],
               gpu_count: int, require_persistence: bool) -> list[dict[str, Any]]:
    """The GPU health measurements of a node. `smi`: nvidia-smi -q parsed (parse_nvidia_smi_q); `smi_q` and `dmesg`:
    the registered commands (rc, stderr, msg, stdout)."""
    if smi_q.get("rc") != 0:
        said = (str(smi_q.get("stderr") or "") or str(smi_q.get("msg") or ""))[:300]
        return [{"name": "gpu_count", "value": None, "unit": "GPUs", "floor": int(gpu_count),
                 "detail": "nvidia-smi -q failed: %s; install the driver (playbooks/gpu_stack.yml)" % said}]
    gpus = list(smi.get("gpus") or [])
    xids = xid_events(str(dmesg.get("stdout") or ""), xid_codes)
    ecc = [((g.get("ecc_errors") or {}).get("volatile") or {}).get("uncorrectable") for g in gpus]
    ecc = [e for e in ecc if e is not None]
    rows = [g.get("remapped_rows") for g in gpus if g.get("remapped_rows") is not None]
    pages = [g.get("retired_pages") for g in gpus if g.get("retired_pages") is not None]
    pending = (sum(1 for r in rows if r.get("pending")) + sum(1 for r in rows if r.get("failure_occurred"))
               + sum(1 for p in pages if p.get("pending")))
    names = list(dict.fromkeys(str(g.get("product_name")) for g in gpus))
    return [
        {"name": "gpu_count", "value": len(gpus), "unit": "GPUs", "floor": int(gpu_count), "ceiling": int(gpu_count),
         "detail": "nvidia-smi sees " + ", ".join(names)},
        {"name": "ecc_uncorrectable_volatile", "value": sum(ecc) if ecc else None, "unit": "errors", "ceiling": 0,
         "skip": "" if ecc else "ECC counters not reported (N/A) by nvidia-smi -q"},
        {"name": "gpu_memory_remap_pending", "value": pending, "unit": "GPUs", "ceiling": 0,
         "detail": "pending row remaps, remap failures or pending page retirements"},
        {"name": "xid_faults", "value": len(xids), "unit": "events", "ceiling": 0,
         "detail": ("XIDs " + " ".join(str(x) for x in dict.fromkeys(xids))) if xids
         else "kernel log has no XID from validate_xid_codes",
         "skip": "" if dmesg.get("rc") == 0 else "kernel log not readable: " + str(dmesg.get("stderr") or "")[:200]},
        {"name": "persistence_mode_gpus", "value": sum(1 for g in gpus if g.get("persistence_mode") == "Enabled"),
         "unit": "GPUs", "floor": len(gpus),
         "skip": "" if require_persistence else "validate_require_persistence is false",
         "detail": "enable with nvidia-smi -pm 1 or the nvidia-persistenced service"},
    ]


def nccl_node(parsed: Mapping[str, Any], run: Mapping[str, Any], fallback: Mapping[str, Any], gpu_count: int,
              min_bytes: int) -> dict[str, Any]:
    """The node's all_reduce: the bus-bandwidth curve and the measurements nccl_all_reduce_busbw_gbps (best
    out-of-place busbw at >= min_bytes) and nccl_all_reduce_wrong. `parsed`: all_reduce_perf's output parsed
    (parse_nccl_tests); `run` and `fallback`: the registered all_reduce_perf and torch.distributed fallback (empty
    when not run)."""
    rows = list(parsed.get("rows") or [])
    curve = [{"size": r.get("size"), "algbw": (r.get("out_of_place") or {}).get("algbw"),
              "busbw": (r.get("out_of_place") or {}).get("busbw")} for r in rows]
    out: list[dict[str, Any]] = []
    if "rc" in run:
        big = [float(b) for b in ((r.get("out_of_place") or {}).get("busbw") for r in rows
                                  if (r.get("size") or 0) >= min_bytes) if b is not None]
        ok = run.get("rc") == 0
        said = (str(run.get("stderr") or "") or str(run.get("stdout") or ""))[-300:].strip()
        bounds = parsed.get("out_of_bounds")
        wrong = bounds.get("count") if bounds else (
            sum(w for w in ((r.get("out_of_place") or {}).get("wrong") for r in rows) if w is not None)
            + sum(w for w in ((r.get("in_place") or {}).get("wrong") for r in rows) if w is not None))
        out += [
            {"name": "nccl_all_reduce_busbw_gbps", "unit": "GB/s", "value": max(big) if big else None,
             "detail": "nccl-tests all_reduce_perf -g %s, best out-of-place busbw at >= %d bytes%s"
             % (gpu_count, min_bytes, "" if ok else "; exit %s: %s" % (run.get("rc"), said)),
             "skip": "one GPU: all_reduce moves no data between GPUs (bus bandwidth is 0 by definition)"
             if int(gpu_count) < 2 and ok else ""},
            {"name": "nccl_all_reduce_wrong", "unit": "values", "ceiling": 0,
             "value": wrong if ok and rows else None,
             "detail": "out-of-bounds / #wrong values reported by all_reduce_perf"},
        ]
    if fallback.get("rc", 0) != 0:
        tail = str(fallback.get("stderr") or "").splitlines()[-3:]
        out.append({"name": "nccl_all_reduce_busbw_gbps", "unit": "GB/s", "value": None,
                    "detail": "torch.distributed fallback failed: " + " | ".join(tail)})
    return {"curve": curve, "measurements": out}


def nccl_transport_check(node: str, conf_path: str, exists: bool, text: str,
                         rdma_devices: Sequence[str]) -> dict[str, Any]:
    """/etc/nccl.conf selects RDMA (NCCL_IB_HCA), or TCP (NCCL_IB_DISABLE=1 and NCCL_SOCKET_IFNAME) on a node without
    RDMA devices. Returns {check, conf (the settings read), backend (what NCCL will use)}."""
    lines = [line.strip() for line in str(text or "").splitlines()]
    conf = dict(line.split("=", 1) for line in lines if line and not line.startswith("#") and "=" in line)
    tcp = conf.get("NCCL_IB_DISABLE", "0") == "1" and bool(conf.get("NCCL_SOCKET_IFNAME", ""))
    rdma = conf.get("NCCL_IB_DISABLE", "0") != "1" and bool(conf.get("NCCL_IB_HCA", ""))
    has_rdma = len(rdma_devices) > 0
    if not exists:
        said = " is missing: run playbooks/gpu_stack.yml (role ib_check)"
    elif rdma:
        said = " selects RDMA: NCCL_IB_HCA=%s NCCL_IB_GID_INDEX=%s" % (
            conf["NCCL_IB_HCA"], conf.get("NCCL_IB_GID_INDEX", "-"))
    elif tcp and not has_rdma:
        said = " selects TCP (no RDMA): NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=" + conf["NCCL_SOCKET_IFNAME"]
    elif tcp:
        said = " disables RDMA although the node has %s: re-run role ib_check" % ", ".join(rdma_devices)
    else:
        said = " sets neither NCCL_IB_HCA nor NCCL_IB_DISABLE=1 + NCCL_SOCKET_IFNAME: re-run role ib_check"
    backend = ("nccl/ib (%s)" % conf["NCCL_IB_HCA"]) if rdma else (
        "nccl/socket (%s)" % conf.get("NCCL_SOCKET_IFNAME", "?") if tcp else "unset")
    check = {"name": "nccl_transport_configured", "status": "pass" if (tcp and not has_rdma) or rdma else "fail",
             "measured": None, "floor": None, "unit": "", "detail": node + ": " + conf_path + said}
    return {"check": check, "conf": conf, "backend": backend}


def mpi_answers(hosts: Sequence[str], hostnames: Mapping[str, str], answered: Iterable[str],
                mpi: Optional[Mapping[str, Any]], failure: str, hostfile: str, unreached: Sequence[str],
                ) -> dict[str, Any]:
    """`mpirun -np N hostname` over the hostfile: the measurement mpi_nodes_answering and whom it blames (the nodes
    that did not answer; when mpirun failed outright, the nodes not reached). `hostnames`: the host name each node
    reported of itself ('' when unknown); `mpi`: the registered run (rc, stderr, stdout), None when the hostfile is
    missing; `failure`: what to say after 'mpirun failed (rc N): ', '' for the cause found in the run's own output
    (mpirun_output.failure_cause: the ssh or rank error before Open MPI's closing help text)."""
    said = {line.strip() for line in answered}
    culprits: list[str]
    missing = [h for h in hosts if h not in said and str(hostnames.get(h) or h) not in said]
    not_reached = ("; not reached in this run: %s (start the node or fix its connection, then run again)"
                   % ", ".join(unreached)) if unreached else ""
    if mpi is None:
        detail, value, culprits = "MPI hostfile %s missing: run playbooks/cluster.yml" % hostfile, None, []
    elif "rc" not in mpi:
        detail, value, culprits = "every node answered mpirun -np N hostname", None, []
    elif mpi["rc"] != 0:
        said = failure or failure_cause("%s\n%s" % (mpi.get("stderr") or "", mpi.get("stdout") or ""), mpi["rc"])
        detail, value, culprits = "mpirun failed (rc %s): %s%s" % (mpi["rc"], said, not_reached), \
            len(hosts) - len(missing), list(unreached)
    else:
        detail = ("no answer from %s%s" % (", ".join(missing), not_reached)) if missing \
            else "every node answered mpirun -np N hostname"
        value, culprits = len(hosts) - len(missing), missing
    measurement = {"name": "mpi_nodes_answering", "value": value, "unit": "nodes", "floor": len(hosts),
                   "detail": detail}
    blame = [{"host": h, "msg": "%s: mpirun -np N hostname over %s got no answer from this node" % (h, hostfile)}
             for h in culprits]
    return {"measurement": measurement, "blame": blame}


def venv_identity(hashes: Mapping[str, str], first: str, venv: str, unreached: Sequence[str]) -> dict[str, Any]:
    """One `pip freeze` hash across the reached nodes (`hashes`: node -> sha256, '' without a venv); skip when no node
    has the venv."""
    groups: dict[str, list[str]] = {}
    for host, digest in hashes.items():
        groups.setdefault((digest or "no venv")[:12], []).append(host)
    if not any(hashes.values()):
        status, detail = "skip", "%s: no training venv at %s on any node (run playbooks/runtime.yml); skipped" % (
            first, venv)
    elif len(groups) == 1:
        status, detail = "pass", "every node has the same venv packages (pip freeze sha256 %s)" % next(iter(groups))
    else:
        status = "fail"
        detail = "venv packages differ: %s; re-run playbooks/runtime.yml" % "; ".join(
            "%s=%s" % (",".join(v), k) for k, v in groups.items())
    if unreached:
        detail += "; not compared (not reached in this run): " + ", ".join(unreached)
    return {"name": "venv_packages_identical", "status": status, "measured": len(groups), "floor": None,
            "unit": "distinct package sets", "detail": detail}


def peers_check(node: str, found: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The check peers_resolved_and_reached of a node from the cluster role's peer probe (`found`: cluster_peers_found,
    {resolve, ssh}, plugin_utils.cluster_peers.peer_problems): every other node resolves to its inventory address and
    answers `ssh NAME hostname` (what mpirun needs)."""
    bad = [str(p) for p in found.get("resolve") or []] + ["ssh " + str(p) for p in found.get("ssh") or []]
    if bad:
        detail = ("%s: %s. Fix: run the cluster phase (`sccnlp deploy -i INVENTORY --playbook cluster`): it writes "
                  "/etc/hosts and the known hosts of every node" % (node, "; ".join(bad)))
    else:
        detail = "%s: every other node resolves to its inventory address and answers ssh by its name" % node
    return {"name": "peers_resolved_and_reached", "status": "fail" if bad else "pass", "measured": None,
            "floor": None, "unit": "", "detail": detail}
