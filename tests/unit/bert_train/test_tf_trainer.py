"""The TensorFlow trainer on CPU: TF_CONFIG from the MPI hostfile, the same losses as the PyTorch model on the same
batches and weights, checkpoints that keep the data position, the metrics and progress lines of the PyTorch path,
non-finite gradients named, and bad input as one line.

Correctness tolerance: the TensorFlow model and the PyTorch trainer's model (fp32, dropout 0, the same initial
weights, the same shards in the same order) give step losses that agree to 1.5e-6 over six AdamW and LAMB steps
(measured 2026-12-06 against transformers' BertForPreTraining; 9.5e-7 against the trainer's one encoder,
sccnlp.node.bert.encoder, which has its parameter names; fp32 rounding of two different kernels). The tests allow
1e-4: 60 times that, and 10 to 60 times below what a different optimizer term costs (Keras' own AdamW, which adds eps
before the bias correction, drifts by 1e-3 to 3e-3 from the second step on; Keras' LAMB, decay outside the trust
ratio, by up to 6e-3).
bf16 compute against fp32 on the same weights: 2e-2 (bf16 keeps 8 bits of mantissa).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import torch

from sccnlp.node.bert import tf_train, train
from sccnlp.node.bert.metrics import parse_line
from sccnlp.node.errors import SccError

from .conftest import write_shards

TOL = 1e-4
BASE = ["--model", "bert-tiny", "--batch-size", "16", "--lr", "3e-3", "--warmup", "3", "--dropout", "0",
        "--log-interval", "5"]


def lines(stdout: str) -> list[dict]:
    return [r for r in (parse_line(x) for x in stdout.splitlines()) if r is not None]


# --------------------------------------------------------------------------------------------------- cluster


HOSTFILE = "# written by the cluster role\nnode1 slots=8\nnode2 slots=8\n\nnode3 slots=8  # spare\nnode2 slots=8\n"


def test_tf_config_has_one_worker_per_node_of_the_hostfile() -> None:
    assert tf_train.hostfile_hosts(HOSTFILE) == ["node1", "node2", "node3"]
    assert tf_train.tf_config(HOSTFILE, 2, 3, 29500) == {
        "cluster": {"worker": ["node1:29500", "node2:29500", "node3:29500"]},
        "task": {"type": "worker", "index": 2}}


def test_tf_config_refuses_a_worker_per_slot_with_the_fix() -> None:
    with pytest.raises(SccError, match=r"24 workers were launched for the 3 nodes of the hostfile \(node1, node2, "
                                       r"node3\).*mpirun -np 3 --map-by ppr:1:node"):
        tf_train.tf_config(HOSTFILE, 0, 24, 29500)
    with pytest.raises(SccError, match="lists no node"):
        tf_train.tf_config("# empty\n", 0, 1, 29500)
    with pytest.raises(SccError, match="MASTER_PORT"):
        tf_train.tf_config(HOSTFILE, 0, 3, 0)


def test_placement_must_follow_the_hostfile_order() -> None:
    hosts = ["node1", "node2", "node3"]
    assert tf_train.placement_problem(hosts, 1, "node2", is_local=lambda h: h == "node2") == ""
    problem = tf_train.placement_problem(hosts, 1, "node3", is_local=lambda h: h == "node3")
    assert problem.startswith("worker 1 runs on node3, but TF_CONFIG puts it on node2")
    assert tf_train.is_local_address("127.0.0.1") and not tf_train.is_local_address("192.0.2.1")  # TEST-NET-1


# --------------------------------------------------------------------------------------------------- correctness


def _losses_both(shard_dir: Path, optimizer: str, steps: int) -> tuple[list[float], list[float]]:
    """Step losses of the PyTorch trainer (its one encoder, sccnlp.node.bert.encoder: BertForPreTraining's parameter
    names, fp32 on CPU) and the TensorFlow one from the same weights."""
    common = [*BASE, "--data-dir", str(shard_dir), "--optimizer", optimizer, "--steps", str(steps)]
    ref = train.Trainer(train.build_parser().parse_args([*common, "--compile", "none"]))
    mine = tf_train.Trainer(tf_train.build_parser().parse_args([*common, "--resume", "none"]))
    mine.model.load_hf_state({k: v.detach().numpy() for k, v in ref.model.state_dict().items()})
    it_ref, it_mine = iter(ref.loader), iter(mine.dataset())
    theirs = [float(ref.train_step([next(it_ref)])[0]) for _step in range(steps)]
    ours = [float(mine.train_step(it_mine)[0][0]) for _step in range(steps)]
    return theirs, ours


@pytest.mark.parametrize("optimizer", ["adamw", "lamb"])
def test_same_losses_as_the_pytorch_model(shard_dir: Path, optimizer: str) -> None:
    theirs, ours = _losses_both(shard_dir, optimizer, 6)
    assert np.max(np.abs(np.array(theirs) - np.array(ours))) < TOL, (theirs, ours)
    assert np.ptp(theirs) > 20 * TOL  # the updates move the loss far beyond the tolerance: the steps are compared


def test_bf16_compute_matches_fp32_within_bf16_precision(shard_dir: Path) -> None:
    from sccnlp.node.bert.data import ShardSet
    from sccnlp.node.bert.tf_model import Dims, build

    batch = tf_train.tf_arrays(ShardSet(shard_dir).take(np.arange(16)))
    dims = Dims.for_model("bert-tiny", 128, 32)
    fp32, bf16 = build(dims, 0.0, compute_dtype="float32"), build(dims, 0.0, compute_dtype="bfloat16")
    bf16.load_hf_state(fp32.hf_state())
    a, b = float(fp32(batch)[0]), float(bf16(batch)[0])
    assert abs(a - b) / a < 2e-2 and a != b, (a, b)  # the same model, computed in bf16
    assert all(v.dtype == "float32" for v in bf16.trainable_weights)  # fp32 master weights


# --------------------------------------------------------------------------------------------------- the run


def test_learns_checkpoints_resumes_and_writes_the_pytorch_metrics(shard_dir: Path, tmp_path: Path, capsys) -> None:
    """30 steps with a checkpoint every 7; then a second run resumed from ckpt-21 (epoch 2, 1 batch into it: 10
    batches an epoch) ends with the same data position and the same weights as the uninterrupted one."""
    a, b = tmp_path / "a", tmp_path / "b"
    common = [*BASE, "--data-dir", str(shard_dir), "--optimizer", "adamw", "--steps", "30", "--ckpt-interval", "7"]
    textfiles = tmp_path / "node-exporter"
    textfiles.mkdir()
    rc = tf_train.main([*common, "--output-dir", str(a), "--keep-checkpoints", "3", "--log-data-ranges",
                        "--textfile-dir", str(textfiles)])
    out = capsys.readouterr().out
    assert rc == 0, out
    recs = lines(out)
    assert [r["step"] for r in recs] == [5, 10, 15, 20, 25, 30]
    assert recs[-1]["loss"] < recs[0]["loss"] - 0.3, [r["loss"] for r in recs]
    assert "rank=0 world=1 data_range=[0,160) records=160 total=160" in out
    assert "framework=tensorflow backend=strategy/MultiWorkerMirroredStrategy/ring" in out
    jl = [json.loads(x) for x in (a / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in jl] == [5, 10, 15, 20, 25, 30]
    assert set(jl[-1]) >= {"loss", "mlm", "nsp", "lr", "seq_per_s", "seq_per_s_gpu", "mfu", "tok_per_s", "mem_gib",
                           "skipped", "world_size", "global_batch"}
    assert jl[-1]["loss"] == pytest.approx(recs[-1]["loss"], abs=1e-4)
    # checkpoints at 7, 14, 21, 28 and the last step; --keep-checkpoints 3 left the newest three
    assert sorted(p.name for p in a.glob("ckpt-*.index")) == ["ckpt-21.index", "ckpt-28.index", "ckpt-30.index"]
    assert tf_train.latest_checkpoint(a) == a / "ckpt-30"
    prom = (textfiles / "scc_training.prom").read_text()  # the heartbeat node_exporter serves, as PyTorch's
    assert 'run="a"' in prom and re.search(r'^scc_training_step\{[^}]*\} 30$', prom, re.M), prom

    b.mkdir()
    for f in a.glob("ckpt-21.*"):
        shutil.copy(f, b / f.name)
    assert tf_train.main([*common, "--output-dir", str(b)]) == 0
    out = capsys.readouterr().out
    assert f"resumed from step 21 ({b}/ckpt-21)" in out and [r["step"] for r in lines(out)] == [25, 30]
    ra, rb = tf.train.load_checkpoint(str(a / "ckpt-30")), tf.train.load_checkpoint(str(b / "ckpt-30"))
    for key, want in (("step", 30), ("data_batches", 30), ("data_epoch_batches", 10)):
        name = f"{key}/.ATTRIBUTES/VARIABLE_VALUE"
        assert int(ra.get_tensor(name)) == int(rb.get_tensor(name)) == want
    weights = [k for k in ra.get_variable_to_shape_map() if k.startswith("model/by_name/")]
    assert len(weights) == 46  # every weight of bert-tiny, by its BertForPreTraining name
    assert max(float(np.max(np.abs(ra.get_tensor(k) - rb.get_tensor(k)))) for k in weights) < 1e-5


def test_nonfinite_gradient_is_named_and_stops(shard_dir: Path, tmp_path: Path, capsys) -> None:
    rc = tf_train.main([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(tmp_path / "run"), "--steps", "10",
                        "--optimizer", "adamw",
                        "--inject-nonfinite", "bert.encoder.layer.1.attention.self.query.weight@3"])
    out = capsys.readouterr()
    assert rc == train.NonFiniteGradient.exit_code
    assert "non-finite gradient at step 3: bert.encoder.layer.1.attention.self.query.weight" in out.out
    assert "stopping (use --nan-policy skip" in out.out
    assert not (tmp_path / "run" / "ckpt-5.index").exists()  # nothing checkpointed after the bad step


def test_skip_policy_keeps_the_weights_of_a_nonfinite_step(shard_dir: Path, tmp_path: Path, capsys) -> None:
    rc = tf_train.main([*BASE, "--data-dir", str(shard_dir), "--output-dir", str(tmp_path / "run"), "--steps", "5",
                        "--optimizer", "lamb", "--nan-policy", "skip",
                        "--inject-nonfinite", "cls.seq_relationship.weight@2"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "non-finite gradient at step 2: cls.seq_relationship.weight" in out and "step skipped" in out
    assert lines(out)[-1]["skipped"] == 1 and np.isfinite(lines(out)[-1]["loss"])
    reader = tf.train.load_checkpoint(str(tmp_path / "run" / "ckpt-5"))
    assert all(np.isfinite(reader.get_tensor(k)).all() for k in reader.get_variable_to_shape_map()
               if k.startswith("model/by_name/"))


# --------------------------------------------------------------------------------------------------- bad input


def _one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    rc = tf_train.main(argv)
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err
    assert err.startswith("sccnlp.node.bert.tf_train: error: ") and err.count("\n") == 1, err
    return err


def test_bad_input_is_one_line_with_the_fix(shard_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    data = ["--data-dir", str(shard_dir)]
    assert "--compile is a setting of the PyTorch trainer" in _one_line([*BASE, *data, "--compile", "default"], capsys)
    assert "--precision fp8 is a setting of the PyTorch trainer's own encoder" in \
        _one_line([*BASE, *data, "--precision", "fp8"], capsys)
    packed = write_shards(tmp_path / "packed")
    meta = json.loads((packed / "meta.json").read_text())
    (packed / "meta.json").write_text(json.dumps({**meta, "packed": True, "max_pairs": 8}))
    assert "holds packed rows" in _one_line([*BASE, "--data-dir", str(packed)], capsys)
    torch_run = tmp_path / "torch-run"
    torch_run.mkdir()
    torch.save({}, torch_run / "ckpt-10.pt")
    assert f"{torch_run} holds checkpoints of the PyTorch trainer (ckpt-10.pt)" in \
        _one_line([*BASE, *data, "--output-dir", str(torch_run)], capsys)
    assert "--resume /nope/ckpt-3.index: no such checkpoint" in \
        _one_line([*BASE, *data, "--resume", "/nope/ckpt-3.index"], capsys)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1")
    assert "--hostfile is needed with several workers" in _one_line([*BASE, *data], capsys)
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "8")
    assert "8 workers on this node" in _one_line([*BASE, *data], capsys)
    assert not os.environ.get("TF_CONFIG")
