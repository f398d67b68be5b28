"""TensorFlow BERT on the test bed: `sccnlp train --framework tensorflow` trains across every node with
MultiWorkerMirroredStrategy (one worker per node, ring all-reduce over TCP), the loss falls; the worker on one node is
killed mid-run and the run stops within 60 s naming that node; the same command resumes from the checkpoint it named
and finishes.

Needs the converged test bed of `sccnlp up --tensorflow` (TensorFlow CPU from the pip lock in every node's venv) and
its inventory in SCCNLP_TESTBED_INVENTORY. Run: `pytest -m testbed tests/integration/bert`.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.bert.test_bert_testbed import QUICK, _bin, _env, read_on, sccnlp_train, shell_on
from tests.integration.bert.test_bert_testbed_lost_node import LOSS_LIMIT_S, Client, _docker, _wait

pytestmark = pytest.mark.testbed

RUN = f"tf-{int(time.time())}"
STEPS = 100  # checkpoints every 10 (QUICK); a worker is killed once ckpt-10 is on the shared storage
TF = [*QUICK, "--framework", "tensorflow", "--run-name", RUN, "--steps", str(STEPS)]
WORKER = "[s]ccnlp.node.bert.tf_train"  # the brackets keep pgrep/pkill from matching the shell that runs them


@pytest.fixture(scope="module")
def inventory(testbed_inventory: str) -> str:
    return testbed_inventory


@pytest.fixture(scope="module")
def nodes(inventory: str) -> list[str]:
    listing = subprocess.run([_bin("ansible-inventory"), "-i", inventory, "--list"], capture_output=True, text=True,
                             env=_env(), check=True)
    hosts = json.loads(listing.stdout)["scc_cluster"]["hosts"]
    assert len(hosts) == 3
    return hosts


@pytest.fixture(scope="module")
def run_dir(inventory: str, nodes: list[str]) -> str:
    got = subprocess.run([_bin("ansible-inventory"), "-i", inventory, "--host", nodes[0]], capture_output=True,
                         text=True, env=_env(), check=True)
    return f"{json.loads(got.stdout).get('scc_shared_dir', '/mnt/cpfs')}/bert/runs/{RUN}"


@pytest.fixture(scope="module")
def containers(inventory: str) -> dict[str, str]:
    """Inventory host -> Docker container, from the test bed's state next to its inventory."""
    state = Path(inventory).parent / "state.json"
    if not state.is_file():
        pytest.fail(f"{inventory} is not a test bed inventory (no {state}): this test kills a process in a node")
    return {n["name"]: n["container"] for n in json.loads(state.read_text())["nodes"]}


def test_every_node_has_tensorflow_from_the_pip_lock(inventory: str, nodes: list[str]) -> None:
    got = subprocess.run([_bin("ansible"), "-i", inventory, "scc_cluster", "-m", "ansible.builtin.slurp", "-a",
                          "src=/etc/ansible/facts.d/scc_tensorflow.fact"], capture_output=True, text=True,
                         env=_env(json_output=True), check=False)
    results = json.loads(got.stdout)["plays"][0]["tasks"][0]["hosts"]
    assert sorted(results) == sorted(nodes)
    for node, result in results.items():
        fact = json.loads(base64.b64decode(result.get("content", "")) or "{}")
        assert (fact.get("version"), fact.get("variant")) == ("2.18.1", "cpu"), (node, result)


def test_tensorflow_trains_across_the_nodes_survives_a_killed_worker_and_resumes(
        inventory: str, nodes: list[str], run_dir: str, containers: dict[str, str], record_property: Any) -> None:
    t_start = time.monotonic()
    client = Client(inventory, *TF)
    try:
        # The kill waits for the checkpoint itself, not for the client's output: the role prints the training log
        # every bert_poll_interval seconds, and on a quiet machine the workers were past their last step by then.
        _wait(f"{run_dir}/ckpt-10.index (output so far: {''.join(client.lines)[-1500:]})",
              lambda: client.proc.poll() is not None or _docker(
                  "exec", containers[nodes[0]], "test", "-e", f"{run_dir}/ckpt-10.index").returncode == 0, 600)
        assert client.proc.poll() is None, "".join(client.lines)[-3000:]
        killed_at = client.step()
        t0 = time.monotonic()
        victim = nodes[1]
        assert _docker("exec", containers[victim], "pkill", "-KILL", "-f", WORKER).returncode == 0
        rc = client.finish(timeout=180)
        took = time.monotonic() - t0
    finally:
        client.kill()
    out = "".join(client.lines)
    record_property("tf_worker_loss_to_stop_s", round(took, 1))
    print(f"worker on {victim} killed at step {killed_at}: the client ended {took:.1f} s later")
    assert rc != 0, out[-3000:]
    assert took < LOSS_LIMIT_S, (took, client.err[-2000:])
    named = re.search(r"failed on \S+: (?:Check the training run: )?BERT training failed \(mpirun exit \d+\) "
                      r"rank (\d+) on (\S+) stopped first", client.err)
    assert named and named.group(2) == victim, client.err[-3000:]
    assert int(named.group(1)) == nodes.index(victim)  # one worker per node, in the hostfile's order
    ckpt = re.search(r"and run the same command again: it resumes from ckpt-(\d+)\.index", client.err)
    assert ckpt and int(ckpt.group(1)) >= 10, client.err[-3000:]
    assert "Traceback" not in out + client.err

    t1 = time.monotonic()
    again = sccnlp_train(inventory, *TF)
    record_property("tf_resume_run_s", round(time.monotonic() - t1, 1))
    record_property("tf_test_s", round(time.monotonic() - t_start, 1))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    resumed = re.search(r"resumed from step (\d+)", again.stdout)
    assert resumed and resumed.group(1) == ckpt.group(1), again.stdout[-3000:]
    steps = [int(m) for m in re.findall(r"^\s+step=(\d+) loss=", again.stdout, re.M)]
    assert steps and min(steps) > int(resumed.group(1)) and steps[-1] == STEPS
    assert f"{run_dir}/ckpt-<step>.index" in again.stdout  # the closing summary names TensorFlow's checkpoints

    log = shell_on(inventory, nodes[0], f"cat {run_dir}/logs/train-*.log")
    assert "framework=tensorflow backend=strategy/MultiWorkerMirroredStrategy/ring" in log
    ranges = sorted({(int(a), int(b)) for w, a, b in re.findall(r"world=(\d+) data_range=\[(\d+),(\d+)\)", log)
                     if w == "3"})
    assert len(ranges) == 3 and all(ranges[i][1] == ranges[i + 1][0] for i in range(2))  # a slice per node
    metrics = [json.loads(x) for x in (read_on(inventory, nodes[2], f"{run_dir}/metrics.jsonl") or "").splitlines()]
    assert metrics[-1]["step"] == STEPS and metrics[-1]["world_size"] == 3
    assert metrics[-1]["loss"] < metrics[0]["loss"] - 0.3, [m["loss"] for m in metrics]  # it learns
    files = shell_on(inventory, nodes[2], f"ls {run_dir}").split()  # through another node: shared storage
    assert f"ckpt-{STEPS}.index" in files and not [f for f in files if f.endswith(".pt")]
    left = shell_on(inventory, victim, f"pgrep -fc '{WORKER}' || true")
    assert left == "0", left
