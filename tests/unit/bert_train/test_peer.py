"""The benchmark's peer (sccnlp.node.bert.peer): the plain Hugging Face loop runs and reports, and ratios pair
figures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sccnlp.node.bert import bench, peer


def test_peer_loop_trains_a_tiny_bert_on_cpu() -> None:
    r = peer.bench_peer("hf-eager", "bert-tiny", seq_len=32, batch=4, steps=2, warmup=1)
    assert r["peer"] == "hf-eager" and r["device"] == "cpu"
    assert r["seq_per_s"] > 0 and r["step_ms"] > 0
    assert math.isfinite(r["first_loss"]) and math.isfinite(r["last_loss"])
    assert r["mfu"] is None  # no peak figure for a CPU


def test_synthetic_batches_mask_max_pred_positions_per_row() -> None:
    import torch

    batches = peer.synthetic_batches(batch=3, seq_len=16, max_pred=4, vocab=100, device=torch.device("cpu"),
                                     distinct=1)
    labels = batches[0]["labels"]
    assert (labels != -100).sum(dim=1).tolist() == [4, 4, 4]
    assert labels[:, 0].eq(-100).all() and labels[:, -1].eq(-100).all()  # never [CLS] or the last [SEP]


def test_unknown_peer_is_refused() -> None:
    with pytest.raises(ValueError, match="hf-compile, hf-eager"):
        peer.bench_peer("deepspeed", "bert-tiny", 32, 4, 1, 1)


def test_ratios_pair_each_trainer_figure_with_the_peer_of_its_seq_len(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = [
        {"model": "bert-large", "seq_len": 128, "seq_per_s_gpu": 1800.0, "label": "new128b256"},
        {"model": "bert-large", "seq_len": 128, "seq_per_s_gpu": 1500.0, "label": "peer128b256", "peer": "hf-compile"},
        {"model": "bert-large", "seq_len": 512, "seq_per_s_gpu": 380.0, "label": "new512b64"},
    ]
    lines = peer.ratios(results)
    assert lines == ["new128b256: 1.20x the peer (peer128b256, Hugging Face + torch.compile: 1500.0 seq/s/GPU) at "
                     "bert-large seq 128"]  # seq 512 has no peer figure: no line rather than a made-up ratio
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results))
    assert bench.main(["--ratios", str(path)]) == 0
    assert "1.20x the peer" in capsys.readouterr().out
