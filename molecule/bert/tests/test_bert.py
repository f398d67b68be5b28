"""What a person checks by hand after `playbooks/bert.yml` on the two-node test bed."""

from __future__ import annotations

import json
import re

import pytest

# The docker backend by container name (the inventory's ansible_host is the cluster IP, not the container).
testinfra_hosts = ["docker://brt-node1"]

DATA_ROOT = "/mnt/cpfs/bert/data"
RUN = "/mnt/cpfs/bert/runs/bert-tiny-phase1"


def _data_dir(host) -> str:
    found = host.check_output(f"ls -d {DATA_ROOT}/*/.complete").split()
    assert len(found) == 1, found
    return found[0].rsplit("/", 1)[0]


def test_data_is_complete_with_one_partition_per_node(host) -> None:
    data = _data_dir(host)
    meta = json.loads(host.file(f"{data}/phase1_seq128/meta.json").content_string)
    assert meta["format"] == "sccnlp-bert-v1" and (meta["seq_len"], meta["max_pred"]) == (128, 20)
    assert [s["name"] for s in meta["shards"]] == ["shard-p00000", "shard-p00001"]
    assert meta["total"] == sum(s["count"] for s in meta["shards"]) > 500
    nodes = sorted(json.loads(host.file(f"{data}/parts/part-0000{i}.json").content_string)["node"] for i in (0, 1))
    assert nodes == [0, 1]  # each node wrote its own partition
    assert host.file(f"{data}/vocab.txt").content_string.splitlines()[:5] == \
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_the_other_node_sees_the_same_data(host) -> None:
    data = _data_dir(host)
    other = host.get_host("docker://brt-node2")
    assert other.file(f"{data}/.complete").content_string == host.file(f"{data}/.complete").content_string


def test_training_ran_on_both_nodes_loss_fell_and_checkpoints_exist(host) -> None:
    records = [json.loads(line) for line in host.file(f"{RUN}/metrics.jsonl").content_string.splitlines() if line]
    steps = [r["step"] for r in records]
    assert steps[-1] == 30
    assert records[-1]["loss"] < records[0]["loss"]
    names = host.check_output(f"ls {RUN}").split()
    assert "ckpt-30.pt" in names
    log = host.check_output(f"cat {RUN}/logs/train-*.log")
    ranges = sorted((int(a), int(b)) for a, b in re.findall(r"world=2 data_range=\[(\d+),(\d+)\)", log))
    assert len(ranges) == 2 and ranges[0][0] == 0 and ranges[0][1] == ranges[1][0] < ranges[1][1]


@pytest.mark.parametrize("name", ["brt-node1", "brt-node2"])
def test_sccnlp_installed_and_fact_recorded(host, name: str) -> None:
    node = host.get_host(f"docker://{name}")
    assert node.run("/opt/scc/venv/bin/python -c 'import sccnlp.node.bert.prepare, sccnlp.node.bert.train'").rc == 0
    fact = json.loads(node.file("/etc/ansible/facts.d/scc_bert.fact").content_string)
    assert fact["data_dir"].startswith(DATA_ROOT + "/") and fact["model"] == "tiny"
