"""A minimal writer of the shard format (docs/DATA_FORMAT.md) for the trainer's tests."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

VOCAB = 120  # [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4, words 5..119


def write_shards(root: Path, counts: tuple[int, ...] = (96, 64), seq_len: int = 32, max_pred: int = 5,
                 vocab_size: int = VOCAB, seed: int = 0) -> Path:
    """A learnable toy corpus: sentence B repeats sentence A shifted by one token id (NSP 0) or is random (NSP 1);
    15% of the tokens masked, 80% [MASK] / 10% random / 10% unchanged; some records shorter than seq_len."""
    rng = np.random.default_rng(seed)
    phase = root / f"phase1_seq{seq_len}"
    phase.mkdir(parents=True)
    shards = []
    for s, n in enumerate(counts):
        name = f"shard-{s:05d}"
        ids = np.zeros((n, seq_len), np.uint16)
        seg = np.zeros((n, seq_len), np.uint8)
        lengths = np.zeros(n, np.uint16)
        pos = np.zeros((n, max_pred), np.uint16)
        mids = np.zeros((n, max_pred), np.uint16)
        cnt = np.zeros(n, np.uint8)
        nsp = rng.integers(0, 2, n).astype(np.uint8)
        for i in range(n):
            length = seq_len if rng.random() < 0.7 else int(rng.integers(seq_len // 2, seq_len))
            half = (length - 3) // 2
            a = rng.integers(5, 60, half)
            b = a + 50 if nsp[i] == 0 else rng.integers(5, vocab_size, length - 3 - half)
            b = b[: length - 3 - half]
            toks = np.concatenate([[2], a, [3], b, [3]]).astype(np.uint16)
            length = len(toks)
            seg[i, half + 2:length] = 1
            cand = [j for j in range(length) if toks[j] > 4]
            k = min(max_pred, max(1, round(0.15 * length)))
            chosen = sorted(rng.choice(cand, k, replace=False))
            masked = toks.copy()
            for j in chosen:
                r = rng.random()
                masked[j] = 4 if r < 0.8 else (rng.integers(5, vocab_size) if r < 0.9 else toks[j])
            ids[i, :length] = masked
            lengths[i] = length
            pos[i, :k] = chosen
            mids[i, :k] = toks[chosen]
            cnt[i] = k
        for field, arr in (("input_ids", ids), ("segment_ids", seg), ("lengths", lengths), ("mlm_positions", pos),
                           ("mlm_ids", mids), ("mlm_count", cnt), ("nsp_labels", nsp)):
            np.save(phase / f"{name}.{field}.npy", arr)
        shards.append({"name": name, "count": n})
    meta = {"format": "sccnlp-bert-v1", "seq_len": seq_len, "max_pred": max_pred, "vocab_size": vocab_size,
            "vocab_sha256": "0" * 64, "shards": shards, "total": sum(counts), "source_sha256": "0" * 64,
            "dupe_factor": 1, "seed": seed}
    (phase / "meta.json").write_text(json.dumps(meta))
    return phase


@pytest.fixture()
def shard_dir(tmp_path: Path) -> Path:
    return write_shards(tmp_path / "data")


# torch's compile workers and gloo leave C++ threads whose destructors sometimes abort the interpreter's teardown
# ("terminate called without an active exception", exit 134) after every test passed: the trainer itself leaves with
# os._exit for the same reason (sccnlp/node/bert/train.py). This process leaves the same way, with pytest's own status,
# once pytest has printed everything.
_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if _EXIT_STATUS and not hasattr(config, "workerinput"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])
