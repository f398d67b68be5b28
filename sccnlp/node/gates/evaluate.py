"""Assemble one node's results fragment from what the validate role gathered.

``python -m sccnlp.node.gates.evaluate INPUT.json OUTPUT.json`` where INPUT holds::

    {"host": "node-1", "run": {...}, "floors": {...selected floors entry...},
     "facts": {...}, "measurements": [...], "checks": [...ready checks...],
     "curves": {...}, "cluster": {"measurements": [...], "checks": [...], "curves": {...}},
     "gate_files": ["/var/lib/scc/validate/gpu_gates.json", ...]}

``gate_files`` are JSON outputs of `sccnlp.node.gates.gpu` / `sccnlp.node.gates.allreduce` (facts, measurements,
curves); missing files are skipped (their absence is reported by the measurement they would have provided).
OUTPUT is a fragment of the results schema: ``{"run", "nodes": {host: {facts, checks, curves}}, "cluster"}``.
Prints the failure lines; exits 0 (failing checks are data; the playbook decides what to do with them).
"""

import json
import os
import sys
from datetime import datetime, timezone
from typing import Any

from sccnlp.node.gates.checks import failures, make_check


def build_fragment(spec: "dict[str, Any]") -> "dict[str, Any]":
    host = str(spec["host"])
    floors = spec.get("floors") or {}
    facts = dict(spec.get("facts") or {})
    measurements = list(spec.get("measurements") or [])
    curves = dict(spec.get("curves") or {})
    for path in spec.get("gate_files") or []:
        if not os.path.exists(path):
            continue
        with open(path) as handle:
            gate = json.load(handle)
        facts.update(gate.get("facts") or {})
        measurements.extend(gate.get("measurements") or [])
        curves.update(gate.get("curves") or {})
    checks = list(spec.get("checks") or []) + [make_check(host, m, floors) for m in measurements]
    cluster_spec = spec.get("cluster") or {}
    cluster = {
        "checks": list(cluster_spec.get("checks") or [])
        + [make_check(host, m, floors) for m in cluster_spec.get("measurements") or []],
        "curves": dict(cluster_spec.get("curves") or {}),
    }
    run = dict(spec.get("run") or {})
    run.setdefault("finished", datetime.now(timezone.utc).isoformat())
    return {
        "run": run,
        "nodes": {host: {"facts": facts, "checks": checks, "curves": curves}},
        "cluster": cluster,
    }


def main(argv: "list[str] | None" = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m sccnlp.node.gates.evaluate INPUT.json OUTPUT.json", file=sys.stderr)
        return 2
    with open(args[0]) as handle:
        spec = json.load(handle)
    fragment = build_fragment(spec)
    tmp = args[1] + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(fragment, handle, indent=1, sort_keys=True)
    os.replace(tmp, args[1])
    node = fragment["nodes"][str(spec["host"])]
    for line in failures(node["checks"]):
        print("FAIL " + line)
    # Cluster checks (only in the first node's fragment): the role blames the nodes they name, not this node.
    for line in failures(fragment["cluster"]["checks"]):
        print("FAIL CLUSTER " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
