"""Writer of the pretraining shard format (docs/DATA_FORMAT.md): NSP pairs, static MLM masking, `.npy` shards.

Pairs follow Google BERT's `create_pretraining_data.py` (segments accumulated up to a target length, 10% shorter
targets, a random split into A and B, B from a random other document with probability 0.5, random truncation);
masking is vectorised with NumPy: 15% of the non-special tokens (at most `max_pred`), of which 80% become [MASK],
10% a random token and 10% stay unchanged.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FORMAT = "sccnlp-bert-v1"
FIELDS = ("input_ids", "segment_ids", "lengths", "mlm_positions", "mlm_ids", "mlm_count", "nsp_labels")
PACKED_FIELDS = (*FIELDS, "pair_starts", "pair_lengths")
MAX_PAIRS = 8  # pairs a packed row holds at most
NO_PAIR = 255  # nsp_labels of an empty pair slot


@dataclass(frozen=True)
class Phase:
    number: int
    seq_len: int
    max_pred: int

    @property
    def dirname(self) -> str:
        return f"phase{self.number}_seq{self.seq_len}"


PHASES = {1: Phase(1, 128, 20), 2: Phase(2, 512, 80)}


@dataclass(frozen=True)
class SpecialIds:
    pad: int
    cls: int
    sep: int
    mask: int
    first_normal: int  # random replacement tokens are drawn from [first_normal, vocab_size)
    vocab_size: int

    @classmethod
    def from_vocab(cls, tokens: Sequence[str]) -> SpecialIds:
        index = {t: i for i, t in enumerate(tokens)}
        specials = [i for i, t in enumerate(tokens) if t.startswith("[") and t.endswith("]")]
        first_normal = max(specials) + 1 if specials and max(specials) < len(tokens) // 2 else 5
        return cls(index["[PAD]"], index["[CLS]"], index["[SEP]"], index["[MASK]"], first_normal, len(tokens))


@dataclass
class Records:
    """Unmasked records of one phase: ids [N, seq_len], segment ids, lengths, NSP labels."""

    input_ids: np.ndarray
    segment_ids: np.ndarray
    lengths: np.ndarray
    nsp_labels: np.ndarray

    def __len__(self) -> int:
        return int(self.lengths.shape[0])


# --------------------------------------------------------------------------------------------------- pairs


def _truncate_pair(a: list[int], b: list[int], max_tokens: int, rng: random.Random) -> None:
    """Trim the longer side, from the front or the back at random, until both fit (Google's truncate_seq_pair)."""
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def pairs_from_document(docs: Sequence[Sequence[Sequence[int]]], doc_index: int, max_tokens: int,
                        short_seq_prob: float, rng: random.Random,
                        balance: list[int] | None = None) -> list[tuple[list[int], list[int], int]]:
    """(tokens A, tokens B, is_random_next) pairs of one document; `max_tokens` excludes [CLS] and 2 [SEP].

    `balance` ([n]) carries, across documents, the number of pairs that had to be random (one segment left at
    the end of a document) although the coin said "follows": later coin flips for "random" are turned into
    "follows" to pay them back, so the NSP labels stay at 50% (Google's script drifts above it).
    """
    balance = balance if balance is not None else [0]
    document = docs[doc_index]
    target = max_tokens
    if rng.random() < short_seq_prob:
        target = rng.randint(2, max_tokens)
    pairs = []
    chunk: list[Sequence[int]] = []
    length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        chunk.append(segment)
        length += len(segment)
        if i == len(document) - 1 or length >= target:
            if chunk:
                want_random = rng.random() < 0.5
                if want_random and balance[0] > 0 and len(chunk) >= 2:
                    want_random = False
                    balance[0] -= 1
                if not want_random and len(chunk) == 1 and i + 1 < len(document):
                    # A single segment cannot be split into A and a following B: take the next one as well, so the
                    # share of "B follows A" pairs stays at 50% (Google's version turns such pairs random).
                    i += 1
                    chunk.append(document[i])
                a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                tokens_a = [t for seg in chunk[:a_end] for t in seg]
                tokens_b: list[int] = []
                is_random = want_random or len(chunk) == 1
                if is_random and not want_random:
                    balance[0] += 1
                if is_random:
                    b_target = max(1, target - len(tokens_a))
                    other = doc_index
                    for _round in range(10):
                        other = rng.randint(0, len(docs) - 1)
                        if other != doc_index:
                            break
                    random_doc = docs[other]
                    start = rng.randint(0, len(random_doc) - 1)
                    for seg in random_doc[start:]:
                        tokens_b.extend(seg)
                        if len(tokens_b) >= b_target:
                            break
                    i -= len(chunk) - a_end  # give back the unused segments
                else:
                    tokens_b = [t for seg in chunk[a_end:] for t in seg]
                _truncate_pair(tokens_a, tokens_b, max_tokens, rng)
                if tokens_a and tokens_b:
                    pairs.append((tokens_a, tokens_b, int(is_random)))
            chunk = []
            length = 0
        i += 1
    return pairs


def build_records(docs: Sequence[Sequence[Sequence[int]]], phase: Phase, ids: SpecialIds, dupe_factor: int,
                  short_seq_prob: float, rng: random.Random) -> Records:
    """All pairs of `docs`, `dupe_factor` times (different pairs each time), shuffled, as padded arrays."""
    docs = [d for d in docs if any(len(s) for s in d)]
    docs = [[s for s in d if len(s)] for d in docs]
    pairs: list[tuple[list[int], list[int], int]] = []
    balance = [0]
    if docs:
        for _round in range(dupe_factor):
            for index in range(len(docs)):
                pairs.extend(pairs_from_document(docs, index, phase.seq_len - 3, short_seq_prob, rng, balance))
    rng.shuffle(pairs)
    n = len(pairs)
    input_ids = np.full((n, phase.seq_len), ids.pad, np.uint16)
    segment_ids = np.zeros((n, phase.seq_len), np.uint8)
    lengths = np.zeros(n, np.uint16)
    nsp = np.zeros(n, np.uint8)
    for row, (a, b, is_random) in enumerate(pairs):
        la, lb = len(a), len(b)
        total = la + lb + 3
        line = input_ids[row]
        line[0] = ids.cls
        line[1:la + 1] = a
        line[la + 1] = ids.sep
        line[la + 2:la + 2 + lb] = b
        line[total - 1] = ids.sep
        segment_ids[row, la + 2:total] = 1
        lengths[row] = total
        nsp[row] = is_random
    return Records(input_ids, segment_ids, lengths, nsp)


# --------------------------------------------------------------------------------------------------- masking


def mask_records(records: Records, max_pred: int, ids: SpecialIds, masked_lm_prob: float,
                 rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Mask in place (vectorised) and return all fields of the shard format."""
    input_ids = records.input_ids
    n, seq_len = input_ids.shape
    positions = np.arange(seq_len)[None, :]
    candidate = (positions < records.lengths[:, None].astype(np.int64)) & (input_ids != ids.cls) & \
        (input_ids != ids.sep) & (input_ids != ids.pad)
    n_cand = candidate.sum(axis=1)
    count = np.minimum(np.minimum(max_pred, np.maximum(1, np.rint(n_cand * masked_lm_prob).astype(np.int64))),
                       n_cand)
    scores = rng.random((n, seq_len))
    scores[~candidate] = 2.0
    chosen = np.argsort(scores, axis=1, kind="stable")[:, :max_pred]
    valid = np.arange(max_pred)[None, :] < count[:, None]
    chosen = np.sort(np.where(valid, chosen, seq_len), axis=1)  # ascending positions, padding pushed right
    mlm_positions = np.where(valid, chosen, 0)
    rows = np.broadcast_to(np.arange(n)[:, None], mlm_positions.shape)
    original = input_ids[rows, mlm_positions]
    mlm_ids = np.where(valid, original, 0)
    draw = rng.random((n, max_pred))
    random_tokens = rng.integers(ids.first_normal, ids.vocab_size, (n, max_pred))
    replacement = np.where(draw < 0.8, ids.mask, np.where(draw < 0.9, original, random_tokens))
    input_ids[rows[valid], mlm_positions[valid]] = replacement[valid]
    return {
        "input_ids": input_ids,
        "segment_ids": records.segment_ids,
        "lengths": records.lengths,
        "mlm_positions": mlm_positions.astype(np.uint16),
        "mlm_ids": mlm_ids.astype(np.uint16),
        "mlm_count": count.astype(np.uint8),
        "nsp_labels": records.nsp_labels,
    }


# --------------------------------------------------------------------------------------------------- packing


def packed_max_pred(max_pred: int, max_pairs: int = MAX_PAIRS) -> int:
    """Prediction slots of a packed row: the pairs' masks sum to at most 15% of the row plus one a pair."""
    return max_pred + max_pairs


def pack_fields(fields: dict[str, np.ndarray], seq_len: int, max_pred: int, pad: int = 0,
                max_pairs: int = MAX_PAIRS) -> dict[str, np.ndarray]:
    """Masked one-pair-a-row fields -> packed rows of several whole pairs (first-fit decreasing by length).

    A row holds its pairs back to back from column 0, each [CLS] A [SEP] B [SEP] as prepared; `pair_starts` and
    `pair_lengths` [N, max_pairs] give each pair's span (length 0 = empty slot, NSP label 255), `lengths` the row's
    real tokens, `mlm_positions` the row positions of all its pairs' predictions (`mlm_count` of them, at most
    `packed_max_pred(max_pred)`). The trainer restarts position ids at each start and attends within a pair.
    """
    lengths = fields["lengths"].astype(np.int64)
    order = np.argsort(-lengths, kind="stable")
    free = np.zeros(0, np.int64)  # free space of each open row
    used = np.zeros(0, np.int64)  # pairs in each row
    rows_of: list[list[int]] = []
    # rows by free space: first fit over a small array of candidates (rows with free >= length, fewest free)
    for i in order:
        need = lengths[i]
        fits = np.nonzero((free >= need) & (used < max_pairs))[0]
        if len(fits):
            r = int(fits[np.argmin(free[fits])])
            free[r] -= need
            used[r] += 1
            rows_of[r].append(int(i))
        else:
            free = np.append(free, seq_len - need)
            used = np.append(used, 1)
            rows_of.append([int(i)])
    m = len(rows_of)
    pred = packed_max_pred(max_pred, max_pairs)
    out = {
        "input_ids": np.zeros((m, seq_len), fields["input_ids"].dtype),
        "segment_ids": np.zeros((m, seq_len), np.uint8),
        "lengths": np.zeros(m, np.uint16),
        "mlm_positions": np.zeros((m, pred), np.uint16),
        "mlm_ids": np.zeros((m, pred), np.uint16),
        "mlm_count": np.zeros(m, np.uint8),
        "nsp_labels": np.full((m, max_pairs), NO_PAIR, np.uint8),
        "pair_starts": np.zeros((m, max_pairs), np.uint16),
        "pair_lengths": np.zeros((m, max_pairs), np.uint16),
    }
    out["input_ids"][:] = pad
    for r, members in enumerate(rows_of):
        start = 0
        k = 0
        for slot, i in enumerate(members):
            length = lengths[i]
            out["input_ids"][r, start:start + length] = fields["input_ids"][i, :length]
            out["segment_ids"][r, start:start + length] = fields["segment_ids"][i, :length]
            c = int(fields["mlm_count"][i])
            out["mlm_positions"][r, k:k + c] = fields["mlm_positions"][i, :c] + start
            out["mlm_ids"][r, k:k + c] = fields["mlm_ids"][i, :c]
            k += c
            out["nsp_labels"][r, slot] = fields["nsp_labels"][i]
            out["pair_starts"][r, slot] = start
            out["pair_lengths"][r, slot] = length
            start += length
        out["lengths"][r] = start
        out["mlm_count"][r] = k
    return out


def padding_fraction(lengths: np.ndarray, seq_len: int) -> float:
    """Share of the token slots that are padding."""
    slots = len(lengths) * seq_len
    return 1.0 - float(lengths.astype(np.int64).sum()) / slots if slots else 0.0


# --------------------------------------------------------------------------------------------------- files


def _atomic_save(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as handle:
        np.save(handle, np.ascontiguousarray(array))
    os.replace(tmp, path)


def write_shard(phase_dir: str | os.PathLike[str], name: str, fields: dict[str, np.ndarray]) -> int:
    """Write one shard's `.npy` files (seven, nine when packed); returns its record count."""
    folder = Path(phase_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for field in PACKED_FIELDS if "pair_starts" in fields else FIELDS:
        _atomic_save(folder / f"{name}.{field}.npy", fields[field])
    return int(fields["lengths"].shape[0])


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


def write_meta(phase_dir: str | os.PathLike[str], phase: Phase, vocab_size: int, vocab_sha256: str,
               shards: Sequence[tuple[str, int]], source_sha256: str, dupe_factor: int, seed: int,
               packed: bool = False, padding: float | None = None) -> dict:
    """Write `meta.json` of one phase listing `shards` (name, count) in reading order."""
    meta = {
        "format": FORMAT,
        "seq_len": phase.seq_len,
        "max_pred": packed_max_pred(phase.max_pred) if packed else phase.max_pred,
        "vocab_size": vocab_size,
        "vocab_sha256": vocab_sha256,
        "shards": [{"name": name, "count": int(count)} for name, count in shards],
        "total": int(sum(count for _unused, count in shards)),
        "source_sha256": source_sha256,
        "dupe_factor": dupe_factor,
        "seed": seed,
    }
    if packed:
        meta.update(packed=True, max_pairs=MAX_PAIRS)
    if padding is not None:
        meta["padding_fraction"] = round(padding, 4)
    atomic_write_text(Path(phase_dir) / "meta.json", json.dumps(meta, indent=1) + "\n")
    return meta
