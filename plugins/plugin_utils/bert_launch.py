# Copyright: scc.nlp_training contributors
# Apache-2.0
"""How the bert role launches a run: which communication backend, how many ranks where.

The PyTorch trainer runs one rank per hostfile slot (a GPU); the TensorFlow one, with its own engine
(tf.distribute.MultiWorkerMirroredStrategy), one worker per node. `bert_comm_backend: auto` follows what the aiacc
role installed on every node (its local fact `scc_aiacc`: backend and framework): AIACC-Training (or Horovod) when
every node has it for this framework, else the framework's own engine. A Horovod API backend (aiacc, horovod) runs
one rank per slot with either framework (rank_hosts: mpirun --map-by slot over the hostfile). Pure functions: the
nodes report the hostfile and their facts."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

FRAMEWORKS = ("pytorch", "tensorflow")
NATIVE = {"pytorch": "torch", "tensorflow": "strategy"}
BACKENDS = {fw: ("auto", native, "aiacc", "horovod") for fw, native in NATIVE.items()}
LABELS = {"aiacc": "AIACC-Training", "horovod": "Horovod"}


def backend_problems(node: str, framework: str, backend: str) -> list[str]:
    """Settings alone: the framework and a backend it can run with."""
    if framework not in FRAMEWORKS:
        return ["%s: bert_framework %r is not one of %s: set one of them" % (node, framework, ", ".join(FRAMEWORKS))]
    if backend not in BACKENDS[framework]:
        return ["%s: bert_comm_backend %s is not a backend of bert_framework %s (it takes %s): set one of them; auto "
                "follows what the aiacc role installed" % (node, backend, framework, ", ".join(BACKENDS[framework]))]
    return []


def aiacc_facts(hosts: Sequence[str], slurps: Sequence[Any]) -> dict[str, dict[str, Any] | None]:
    """Each node's `scc_aiacc` local fact from its slurp result (None: no fact, the aiacc role has not run)."""
    out: dict[str, dict[str, Any] | None] = {}
    for host, result in zip(hosts, slurps):
        fact = None
        if isinstance(result, Mapping) and result.get("content"):
            try:
                parsed = json.loads(base64.b64decode(str(result["content"])).decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                parsed = None
            fact = parsed if isinstance(parsed, dict) else None
        out[str(host)] = fact
    return out


def _describe(fact: Mapping[str, Any] | None) -> str:
    if not fact:
        return "no backend (no scc_aiacc fact: the runtime phase has not run there)"
    return "backend %s for %s (%s)" % (fact.get("backend", "?"), fact.get("framework", "?"), fact.get("reason", ""))


def choose_backend(framework: str, requested: str,
                   facts: Mapping[str, Mapping[str, Any] | None]) -> tuple[str, str, list[str]]:
    """(backend, reason, problems) for a valid framework/backend pair."""
    native = NATIVE[framework]

    def has(fact: Mapping[str, Any] | None, kind: str) -> bool:
        return bool(fact) and fact.get("backend") == kind and fact.get("framework") == framework

    if requested == native:
        return native, "bert_comm_backend is %s" % native, []
    if requested in LABELS:
        missing = sorted(h for h, f in facts.items() if not has(f, requested))
        if not facts:
            missing = ["(no node)"]
        problems = ["%s: bert_comm_backend %s needs %s for %s on every node, but the aiacc role recorded %s there. "
                    "Fix: set aiacc_framework: %s and %s, run the runtime phase again, or set bert_comm_backend: "
                    "auto (%s)" % (h, requested, LABELS[requested], framework, _describe(facts.get(h)), framework,
                                   "an AIACC-Training source (aiacc_wheel_url, aiacc_wheel_dir or aiacc_conda_archive)"
                                   if requested == "aiacc" else "aiacc_backend: horovod", native)
                    for h in missing]
        return requested, "bert_comm_backend is %s" % requested, problems
    for kind in LABELS:
        if facts and all(has(f, kind) for f in facts.values()):
            return kind, "auto: the aiacc role installed %s for %s on every node" % (LABELS[kind], framework), []
    without = sorted(h for h, f in facts.items() if not has(f, "aiacc"))
    why = ("no node has AIACC-Training for %s" % framework) if len(without) == len(facts) else \
        ("AIACC-Training for %s is not on %s" % (framework, ", ".join(without)))
    return native, "auto: %s; the framework's own engine (%s)" % (why, native), []


def rank_hosts(hosts: Sequence[str], slots: Sequence[Any]) -> list[str]:
    """Rank -> host as mpirun --map-by slot places ranks: each host of the hostfile repeated for its slot count, in
    order."""
    return [str(host) for host, count in zip(hosts, slots) for _rank in range(int(count))]


def launch_plan(hosts: Sequence[str], slots: Sequence[Any], framework: str, requested: str, np_setting: Any,
                facts: Mapping[str, Mapping[str, Any] | None], node: str, hostfile: str) -> dict[str, Any]:
    """The launch: backend (+ reason), rank count, mpirun mapping and the node of each rank.
    `hosts`/`slots`: the hostfile's lines in order (a line without slots= counts one); `problems` is empty when
    the run can be launched."""
    problems = backend_problems(node, framework, requested)
    plan: dict[str, Any] = {"framework": framework, "backend": "", "reason": "", "np": 0, "map_by": "slot",
                            "rank_hosts": [], "problems": problems}
    if problems:
        return plan
    backend, reason, problems = choose_backend(framework, requested, facts)
    counts = [int(s) for s in slots]
    listing = ", ".join("%s slots=%d" % (h, c) for h, c in zip(hosts, counts))
    nodes: list[str] = []
    for host in hosts:
        if host not in nodes:
            nodes.append(host)
    try:
        wanted = int(np_setting)
    except (TypeError, ValueError):
        wanted = -1
    if backend == "strategy":  # one worker per node: the node's GPUs are the strategy's replicas
        ranks, map_by = list(nodes), "ppr:1:node"
        if not nodes or wanted not in (0, len(nodes)):
            problems.append("%s: bert_np is %s but the TensorFlow trainer runs one worker per node and the hostfile "
                            "%s has %d nodes (%s): set bert_np to %d (or 0 to follow the hostfile), or fix the "
                            "inventory and re-run the cluster phase" % (node, np_setting, hostfile, len(nodes),
                                                                        ", ".join(nodes), len(nodes)))
    else:
        ranks, map_by = rank_hosts(hosts, counts), "slot"
        if not ranks or wanted not in (0, len(ranks)):
            problems.append("%s: bert_np is %s but the hostfile %s has %d slots (%s): set bert_np to %d (or 0 to "
                            "follow the hostfile), or fix mpi_slots/gpu_count in the inventory and re-run the cluster "
                            "phase" % (node, np_setting, hostfile, len(ranks), listing, len(ranks)))
    plan.update(backend=backend, reason=reason, np=len(ranks), map_by=map_by, rank_hosts=ranks, problems=problems)
    return plan
