"""BERT on the test bed: `sccnlp train` prepares data into the shared storage and trains a tiny BERT over every node.

Needs a converged test bed (cluster, storage, runtime phases done), e.g. `sccnlp testbed up` or the molecule
cluster scenario, and its inventory in SCCNLP_TESTBED_INVENTORY. Run: `pytest -m testbed tests/integration/bert`.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.testbed

RUN_NAME = f"itest-{int(time.time())}"
QUICK = ["-e", "bert_corpus_max_mb=1", "-e", "bert_vocab_size=2000", "-e", '{"bert_prepare_phases": [1]}',
         "-e", "bert_dupe_factor=1", "-e", "bert_optimizer=adamw", "-e", "bert_warmup=0.1", "-e", "bert_log_interval=5",
         "-e", "bert_poll_interval=5", "-e", "bert_train_timeout=900", "-e", "bert_ckpt_interval=10",
         "--model", "tiny", "--batch-size", "16", "--lr", "0.001"]


@pytest.fixture(scope="module")
def inventory(testbed_inventory: str) -> str:
    return testbed_inventory


def _env(json_output: bool = False) -> dict[str, str]:
    """The environment of the commands run here; `json_output` for ad-hoc `ansible` runs whose answer is parsed.

    `sccnlp train` gets the user's plain environment: it reads ansible-runner's events, which a json stdout
    callback would reduce to bare "failed" results without the task's message or the streamed progress.
    """
    from sccnlp import runner
    from sccnlp.paths import collection_root

    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": runner._collections_path(),
           "ANSIBLE_CONFIG": str(collection_root() / "ansible.cfg"), "PYTHONPATH": str(collection_root())}
    if json_output:
        env.update(ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json")
    return env


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def sccnlp_train(inventory: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sccnlp.cli", "train", "-i", inventory, *args],
                          capture_output=True, text=True, env=_env(), timeout=1800, check=False)


@pytest.fixture(scope="module")
def nodes(inventory: str) -> list[str]:
    listing = subprocess.run([_bin("ansible-inventory"), "-i", inventory, "--list"], capture_output=True, text=True,
                             env=_env(), check=True)
    hosts = json.loads(listing.stdout)["scc_cluster"]["hosts"]
    assert len(hosts) >= 2
    return hosts


@pytest.fixture(scope="module")
def runs(inventory: str, nodes: list[str]) -> str:
    """Where the runs go on the shared storage: <scc_shared_dir>/bert/runs (the test bed mounts /mnt/shared)."""
    got = subprocess.run([_bin("ansible-inventory"), "-i", inventory, "--host", nodes[0]], capture_output=True,
                         text=True, env=_env(), check=True)
    return f"{json.loads(got.stdout).get('scc_shared_dir', '/mnt/cpfs')}/bert/runs"


def read_on(inventory: str, host: str, path: str) -> str | None:
    """A file's content on a node (None if missing), through an ad-hoc slurp."""
    got = subprocess.run([_bin("ansible"), "-i", inventory, host, "-m", "ansible.builtin.slurp", "-a", f"src={path}"],
                         capture_output=True, text=True, env=_env(json_output=True), check=False)
    result = json.loads(got.stdout)["plays"][0]["tasks"][0]["hosts"][host]
    return base64.b64decode(result["content"]).decode() if "content" in result else None


def shell_on(inventory: str, host: str, cmd: str) -> str:
    got = subprocess.run([_bin("ansible"), "-i", inventory, host, "-m", "ansible.builtin.shell", "-a", cmd],
                         capture_output=True, text=True, env=_env(json_output=True), check=False)
    return str(json.loads(got.stdout)["plays"][0]["tasks"][0]["hosts"][host].get("stdout", ""))


def test_missing_corpus_fails_before_anything_changes(inventory: str, nodes: list[str], runs: str) -> None:
    got = sccnlp_train(inventory, *QUICK, "--steps", "5", "--corpus", "/nonexistent/corpus.txt",
                       "--run-name", RUN_NAME + "-bad")
    assert got.returncode != 0
    assert f"failed on {nodes[0]}" in got.stderr and "bert_corpus_path /nonexistent/corpus.txt does not exist" in \
        got.stderr
    assert "Traceback" not in got.stdout + got.stderr
    assert shell_on(inventory, nodes[0], f"ls {runs}/{RUN_NAME}-bad 2>/dev/null || echo absent") == \
        "absent"


def test_slot_count_mismatch_is_refused(inventory: str, nodes: list[str]) -> None:
    got = sccnlp_train(inventory, *QUICK, "--steps", "5", "-e", "bert_np=99", "--run-name", RUN_NAME + "-bad")
    assert got.returncode != 0
    assert "bert_np is 99 but the hostfile" in got.stderr and f"failed on {nodes[0]}" in got.stderr


def test_vocab_size_mismatch_is_refused(inventory: str, nodes: list[str]) -> None:
    vocab = "/tmp/itest-vocab.txt"
    shell_on(inventory, nodes[0], f"printf '[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\nthe\\n' > {vocab}")
    got = sccnlp_train(inventory, *QUICK, "--steps", "5", "--vocab", vocab, "--vocab-size", "8192",
                       "--run-name", RUN_NAME + "-bad")
    assert got.returncode != 0
    assert "vocabulary size mismatch" in got.stderr and "has 6 tokens" in got.stderr


def _metrics(inventory: str, host: str, runs: str) -> list[dict]:
    text = read_on(inventory, host, f"{runs}/{RUN_NAME}/metrics.jsonl") or ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_tiny_bert_trains_across_all_nodes(inventory: str, nodes: list[str], runs: str) -> None:
    got = sccnlp_train(inventory, *QUICK, "--steps", "30", "--run-name", RUN_NAME)
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-2000:]
    steps = [int(m) for m in re.findall(r"^\s+step=(\d+) loss=", got.stdout, re.M)]
    assert steps and steps[-1] == 30 and steps == sorted(steps)  # streamed progress
    assert "seq/s=" in got.stdout and f"{runs}/{RUN_NAME}" in got.stdout
    records = _metrics(inventory, nodes[-1], runs)  # read through another node: shared storage
    assert records[-1]["step"] == 30 and records[-1]["loss"] < records[0]["loss"]
    ckpts = shell_on(inventory, nodes[-1], f"ls {runs}/{RUN_NAME}").split()
    assert {"ckpt-10.pt", "ckpt-20.pt", "ckpt-30.pt"} <= set(ckpts)
    log = shell_on(inventory, nodes[0], f"cat {runs}/{RUN_NAME}/logs/train-*.log")
    world = int(re.search(r"world=(\d+) data_range", log).group(1))
    ranges = sorted((int(a), int(b)) for a, b in re.findall(r"data_range=\[(\d+),(\d+)\)", log))
    assert len(ranges) == world >= len(nodes)
    assert all(ranges[i][1] == ranges[i + 1][0] for i in range(world - 1))  # disjoint, adjacent
    data_dir = re.search(r"^\s+data\s+(\S+)$", got.stdout, re.M).group(1)  # from the closing summary
    meta = json.loads(read_on(inventory, nodes[0], f"{data_dir}/meta.json") or "{}")
    assert ranges[0][0] == 0 and ranges[-1][1] == meta["total"]


def test_second_run_reuses_data_and_resumes(inventory: str, nodes: list[str], runs: str) -> None:
    same = sccnlp_train(inventory, *QUICK, "--steps", "30", "--run-name", RUN_NAME)
    assert same.returncode == 0 and "already holds ckpt-30.pt: not relaunched" in same.stdout
    assert "(reused: complete)" in same.stdout
    assert not re.search(r"^\s+step=", same.stdout, re.M)  # nothing relaunched
    more = sccnlp_train(inventory, *QUICK, "--steps", "40", "--run-name", RUN_NAME)
    assert more.returncode == 0, more.stdout[-3000:] + more.stderr[-2000:]
    assert "resumed from step 30" in more.stdout
    steps = [int(m) for m in re.findall(r"^\s+step=(\d+) loss=", more.stdout, re.M)]
    assert steps and min(steps) > 30 and steps[-1] == 40
    assert _metrics(inventory, nodes[0], runs)[-1]["step"] == 40
