"""The shard writer: pairs (NSP), masking (MLM) and the file format of docs/DATA_FORMAT.md."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sccnlp.node.bert import shards as bshards

VOCAB = 60000
IDS = bshards.SpecialIds(pad=0, cls=2, sep=3, mask=4, first_normal=5, vocab_size=VOCAB)


def _docs(n_docs: int = 60, n_sent: int = 12) -> list[list[list[int]]]:
    """Token id = 10 + doc * 1000 + sentence * 10 + k: every token says which document and sentence it is from."""
    rng = random.Random(1)
    return [[[10 + d * 1000 + s * 10 + k for k in range(rng.randint(2, 9))] for s in range(n_sent)]
            for d in range(n_docs)]


def _where(token: int) -> tuple[int, int]:
    return (token - 10) // 1000, ((token - 10) % 1000) // 10


@pytest.mark.parametrize("phase", [bshards.PHASES[1], bshards.PHASES[2]])
def test_pairs_nsp_half_random_and_true_continuations(phase: bshards.Phase) -> None:
    records = bshards.build_records(_docs(), phase, IDS, dupe_factor=3, short_seq_prob=0.1, rng=random.Random(7))
    n = len(records)
    assert n > 200
    assert abs(records.nsp_labels.mean() - 0.5) < 0.04
    follows = randoms = 0
    for row in range(n):
        length = int(records.lengths[row])
        line = records.input_ids[row, :length].astype(int)
        seg = records.segment_ids[row, :length]
        assert line[0] == IDS.cls and line[-1] == IDS.sep
        seps = np.nonzero(line == IDS.sep)[0]
        assert len(seps) == 2
        a, b = line[1:seps[0]], line[seps[0] + 1:-1]
        assert len(a) and len(b) and length <= phase.seq_len
        assert (seg[:seps[0] + 1] == 0).all() and (seg[seps[0] + 1:] == 1).all()
        assert (records.input_ids[row, length:] == 0).all() and (records.segment_ids[row, length:] == 0).all()
        doc_a, sent_a = _where(a[-1])
        doc_b, sent_b = _where(b[0])
        if records.nsp_labels[row] == 0:
            # B continues A in the same document (truncation may have cut tokens off either end)
            assert doc_a == doc_b and sent_b > sent_a
            follows += 1
        else:
            assert doc_b != doc_a
            randoms += 1
    assert follows and randoms


def test_masking_ratios_and_positions() -> None:
    records = bshards.build_records(_docs(60, 60), bshards.PHASES[1], IDS, 2, 0.1, random.Random(3))
    original = records.input_ids.copy()
    fields = bshards.mask_records(records, 20, IDS, 0.15, np.random.default_rng(5))
    n = fields["input_ids"].shape[0]
    pred = fields["mlm_positions"].shape[1]
    count = fields["mlm_count"].astype(int)
    valid = np.arange(pred)[None, :] < count[:, None]
    pos = fields["mlm_positions"].astype(int)
    non_special = fields["lengths"].astype(int) - 3
    expected = np.minimum(20, np.maximum(1, np.rint(non_special * 0.15)))
    assert (count == expected).all()
    assert abs(count.sum() / non_special.sum() - 0.15) < 0.02
    assert (pos[~valid] == 0).all() and (fields["mlm_ids"][~valid] == 0).all()
    for row in range(n):
        p = pos[row, :count[row]]
        assert (np.diff(p) > 0).all()  # ascending, no duplicates
        assert (p > 0).all() and (p < fields["lengths"][row]).all()
        assert not np.isin(original[row, p], [IDS.cls, IDS.sep, IDS.pad]).any()
    masked_orig = original[np.arange(n)[:, None].repeat(pred, 1)[valid], pos[valid]]
    assert (fields["mlm_ids"][valid] == masked_orig).all()
    now = fields["input_ids"][np.arange(n)[:, None].repeat(pred, 1)[valid], pos[valid]]
    share_mask = (now == IDS.mask).mean()
    share_same = (now == masked_orig).mean()
    share_random = 1 - share_mask - share_same
    assert abs(share_mask - 0.8) < 0.02 and abs(share_same - 0.1) < 0.02 and abs(share_random - 0.1) < 0.02
    assert (now[(now != IDS.mask) & (now != masked_orig)] >= IDS.first_normal).all()
    untouched = np.ones_like(original, bool)
    untouched[np.arange(n)[:, None].repeat(pred, 1)[valid], pos[valid]] = False
    assert (fields["input_ids"][untouched] == original[untouched]).all()


def test_special_ids_from_a_google_style_vocab() -> None:
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] + \
        [f"w{i}" for i in range(1000)]
    ids = bshards.SpecialIds.from_vocab(tokens)
    assert (ids.pad, ids.cls, ids.sep, ids.mask, ids.first_normal) == (0, 101, 102, 103, 104)


def test_write_shard_and_meta_exact_format(tmp_path: pytest.TempPathFactory) -> None:
    records = bshards.build_records(_docs(20), bshards.PHASES[1], IDS, 1, 0.1, random.Random(0))
    fields = bshards.mask_records(records, 20, IDS, 0.15, np.random.default_rng(0))
    count = bshards.write_shard(tmp_path, "shard-p00000", fields)
    dtypes = {"input_ids": ("uint16", (count, 128)), "segment_ids": ("uint8", (count, 128)),
              "lengths": ("uint16", (count,)), "mlm_positions": ("uint16", (count, 20)),
              "mlm_ids": ("uint16", (count, 20)), "mlm_count": ("uint8", (count,)),
              "nsp_labels": ("uint8", (count,))}
    for name, (dtype, shape) in dtypes.items():
        arr = np.load(tmp_path / f"shard-p00000.{name}.npy")
        assert (str(arr.dtype), arr.shape) == (dtype, shape), name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"shard-p00000.{n}.npy" for n in dtypes)
    meta = bshards.write_meta(tmp_path, bshards.PHASES[1], VOCAB, "a" * 64, [("shard-p00000", count)], "b" * 64, 1, 9)
    assert set(meta) == {"format", "seq_len", "max_pred", "vocab_size", "vocab_sha256", "shards", "total",
                         "source_sha256", "dupe_factor", "seed"}
    assert meta["format"] == "sccnlp-bert-v1" and meta["total"] == count
    assert meta["shards"] == [{"name": "shard-p00000", "count": count}]
