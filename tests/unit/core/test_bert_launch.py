"""How the bert role launches a run (plugins/plugin_utils/bert_launch.py): a rank per slot for the PyTorch trainer
and the Horovod API backends, a worker per node for TensorFlow's strategy; `auto` follows the aiacc role's fact on
every node; a backend the framework lacks, an explicit AIACC without AIACC, and a rank count off the hostfile are
refused naming the node, the setting and the fix."""

from __future__ import annotations

import base64
import json

import pytest

from plugins.plugin_utils import bert_launch as bl

HOSTS, SLOTS = ["node1", "node2", "node3"], [2, 2, 2]
NATIVE = {"backend": "native", "framework": "pytorch", "reason": "no AIACC-Training source configured; fallback native"}


def fact(**kw: str) -> dict:
    return {**NATIVE, **kw}


def plan(framework: str, backend: str = "auto", np_setting: int = 0, facts: dict | None = None) -> dict:
    facts = {h: fact() for h in HOSTS} if facts is None else facts
    return bl.launch_plan(HOSTS, SLOTS, framework, backend, np_setting, facts, "node1", "/etc/scc/mpihosts")


def test_pytorch_runs_a_rank_per_slot_with_torch_by_default() -> None:
    got = plan("pytorch")
    assert (got["backend"], got["np"], got["map_by"], got["problems"]) == ("torch", 6, "slot", [])
    assert got["rank_hosts"] == ["node1", "node1", "node2", "node2", "node3", "node3"]
    assert got["reason"] == "auto: no node has AIACC-Training for pytorch; the framework's own engine (torch)"


def test_tensorflow_runs_one_worker_per_node_with_the_strategy() -> None:
    got = plan("tensorflow")
    assert (got["backend"], got["np"], got["map_by"], got["problems"]) == ("strategy", 3, "ppr:1:node", [])
    assert got["rank_hosts"] == HOSTS
    # the same node listed on two lines of a hostfile is one worker
    twice = bl.launch_plan(["node1", "node1", "node2"], [1, 1, 1], "tensorflow", "auto", 0, {}, "node1", "h")
    assert (twice["np"], twice["rank_hosts"]) == (2, ["node1", "node2"])


def test_auto_takes_aiacc_only_where_every_node_has_it_for_the_framework() -> None:
    aiacc_tf = {h: fact(backend="aiacc", framework="tensorflow") for h in HOSTS}
    got = plan("tensorflow", facts=aiacc_tf)
    assert (got["backend"], got["np"], got["map_by"]) == ("aiacc", 6, "slot")  # Horovod API: a process per GPU
    assert got["reason"] == "auto: the aiacc role installed AIACC-Training for tensorflow on every node"
    assert plan("pytorch", facts=aiacc_tf)["backend"] == "torch"  # AIACC for TensorFlow does not serve PyTorch
    partial = {**aiacc_tf, "node3": fact(framework="tensorflow")}
    got = plan("tensorflow", facts=partial)
    assert got["backend"] == "strategy" and "AIACC-Training for tensorflow is not on node3" in got["reason"]
    assert plan("tensorflow", facts={})["backend"] == "strategy"  # the aiacc role never ran


def test_explicit_aiacc_without_it_is_refused_on_each_node_with_the_fix() -> None:
    facts = {h: fact(backend="aiacc", framework="pytorch") for h in HOSTS}
    got = plan("tensorflow", "aiacc", facts=facts)
    assert len(got["problems"]) == 3
    assert got["problems"][0].startswith("node1: bert_comm_backend aiacc needs AIACC-Training for tensorflow on "
                                         "every node, but the aiacc role recorded backend aiacc for pytorch")
    assert "Fix: set aiacc_framework: tensorflow and an AIACC-Training source" in got["problems"][0]
    assert "or set bert_comm_backend: auto (strategy)" in got["problems"][0]
    missing = plan("pytorch", "horovod", facts={"node1": None})["problems"]
    assert missing == ["node1: bert_comm_backend horovod needs Horovod for pytorch on every node, but the aiacc role "
                       "recorded no backend (no scc_aiacc fact: the runtime phase has not run there) there. Fix: set "
                       "aiacc_framework: pytorch and aiacc_backend: horovod, run the runtime phase again, or set "
                       "bert_comm_backend: auto (torch)"]


@pytest.mark.parametrize(("framework", "backend", "choices"), [
    ("tensorflow", "torch", "auto, strategy, aiacc, horovod"),
    ("pytorch", "strategy", "auto, torch, aiacc, horovod"),
])
def test_a_backend_of_the_other_framework_is_refused(framework: str, backend: str, choices: str) -> None:
    want = [f"node1: bert_comm_backend {backend} is not a backend of bert_framework {framework} (it takes {choices}): "
            "set one of them; auto follows what the aiacc role installed"]
    assert bl.backend_problems("node1", framework, backend) == want
    assert plan(framework, backend)["problems"] == want
    assert bl.backend_problems("node1", "jax", "auto") == [
        "node1: bert_framework 'jax' is not one of pytorch, tensorflow: set one of them"]


def test_a_rank_count_off_the_hostfile_is_refused() -> None:
    assert plan("pytorch", np_setting=6)["problems"] == [] and plan("tensorflow", np_setting=3)["problems"] == []
    [msg] = plan("pytorch", np_setting=99)["problems"]
    assert msg == ("node1: bert_np is 99 but the hostfile /etc/scc/mpihosts has 6 slots (node1 slots=2, node2 slots=2, "
                   "node3 slots=2): set bert_np to 6 (or 0 to follow the hostfile), or fix mpi_slots/gpu_count in "
                   "the inventory and re-run the cluster phase")
    [msg] = plan("tensorflow", np_setting=6)["problems"]
    assert msg.startswith("node1: bert_np is 6 but the TensorFlow trainer runs one worker per node and the hostfile "
                          "/etc/scc/mpihosts has 3 nodes (node1, node2, node3): set bert_np to 3")


def test_facts_are_read_from_the_slurp_results() -> None:
    content = base64.b64encode(json.dumps(fact(backend="aiacc")).encode()).decode()
    slurps = [{"content": content}, {"failed": True, "msg": "file not found"},
              {"content": base64.b64encode(b"not json").decode()}, None]
    got = bl.aiacc_facts(["a", "b", "c", "d"], slurps)
    assert got == {"a": fact(backend="aiacc"), "b": None, "c": None, "d": None}
