"""Reader of the pretraining shard format (docs/DATA_FORMAT.md): memory-mapped, one disjoint slice per rank.

A rank reads records `[rank * total // world, (rank + 1) * total // world)` of the concatenation of all shards,
shuffled within its slice once per epoch (seeded), and hands out fixed-size batches (torch tensors, or NumPy
arrays for the TensorFlow trainer). The position (epoch, batches taken) is saved in checkpoints so a resumed run
continues where it stopped.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from queue import Full, Queue
from typing import Any

import numpy as np

from sccnlp.node.errors import SccError

FORMAT = "sccnlp-bert-v1"
FIELDS = {  # name: (dtype, per-record shape: "seq", "pred" or scalar)
    "input_ids": (np.uint16, "seq"),
    "segment_ids": (np.uint8, "seq"),
    "lengths": (np.uint16, ""),
    "mlm_positions": (np.uint16, "pred"),
    "mlm_ids": (np.uint16, "pred"),
    "mlm_count": (np.uint8, ""),
    "nsp_labels": (np.uint8, ""),
}
PACKED_FIELDS = {  # packed rows (meta "packed": true): several pairs a row
    **FIELDS,
    "nsp_labels": (np.uint8, "pairs"),  # 255 = no pair in this slot
    "pair_starts": (np.uint16, "pairs"),  # first position ([CLS]) of each pair in the row
    "pair_lengths": (np.uint16, "pairs"),  # 0 = no pair
}
NO_PAIR = 255


def rank_range(total: int, rank: int, world: int) -> tuple[int, int]:
    """Records [start, end) that `rank` of `world` reads (DATA_FORMAT.md)."""
    return rank * total // world, (rank + 1) * total // world


@dataclass(frozen=True)
class ShardMeta:
    path: Path
    seq_len: int
    max_pred: int
    vocab_size: int
    total: int
    shards: tuple[tuple[str, int], ...]
    packed: bool = False
    max_pairs: int = 1


def read_meta(data_dir: str | Path) -> ShardMeta:
    """Parse and check `<data_dir>/meta.json`; every problem is one SccError line with the fix."""
    path = Path(data_dir)
    if not path.is_dir():
        raise SccError(f"data directory {path} does not exist: run the data preparation first "
                       "(`sccnlp train` does it, or `python -m sccnlp.node.bert.prepare`) or fix --data-dir")
    meta_file = path / "meta.json"
    if not meta_file.is_file():
        raise SccError(f"{meta_file} is missing: {path} is not a prepared shard directory (phase1_seq128/ or "
                       "phase2_seq512/ of the prepared data); re-run the data preparation or fix --data-dir")
    try:
        meta = json.loads(meta_file.read_text())
        if meta.get("format") != FORMAT:
            raise SccError(f"{meta_file}: format {meta.get('format')!r}, this trainer reads {FORMAT!r}: re-run the "
                           "data preparation with this version of sccnlp")
        shards = tuple((str(s["name"]), int(s["count"])) for s in meta["shards"])
        result = ShardMeta(path, int(meta["seq_len"]), int(meta["max_pred"]), int(meta["vocab_size"]),
                           int(meta["total"]), shards, bool(meta.get("packed", False)),
                           int(meta.get("max_pairs", 1)))
    except (ValueError, KeyError, TypeError) as exc:
        raise SccError(f"{meta_file} is not valid ({type(exc).__name__}: {exc}): re-run the data preparation") \
            from None
    if sum(c for _unused, c in shards) != result.total or result.total <= 0:
        raise SccError(f"{meta_file}: total {result.total} differs from the sum of shard counts "
                       f"{sum(c for _unused, c in shards)} (or is 0): re-run the data preparation")
    return result


class ShardSet:
    """All shards of one phase, memory-mapped, addressable by global record index."""

    def __init__(self, data_dir: str | Path) -> None:
        self.meta = read_meta(data_dir)
        self.arrays: list[dict[str, np.ndarray]] = []
        for name, count in self.meta.shards:
            arrays = {}
            for field, (dtype, kind) in (PACKED_FIELDS if self.meta.packed else FIELDS).items():
                file = self.meta.path / f"{name}.{field}.npy"
                if not file.is_file():
                    raise SccError(f"{file} is missing: the prepared data is incomplete; re-run the data preparation")
                arr = np.load(file, mmap_mode="r")
                width = {"seq": self.meta.seq_len, "pred": self.meta.max_pred, "pairs": self.meta.max_pairs}
                shape = (count, width[kind]) if kind else (count,)
                if arr.shape != shape or arr.dtype != dtype:
                    raise SccError(f"{file}: {arr.dtype}{list(arr.shape)}, expected {np.dtype(dtype)}{list(shape)} "
                                   "(docs/DATA_FORMAT.md): re-run the data preparation")
                arrays[field] = arr
            self.arrays.append(arrays)
        self.offsets = np.cumsum([0] + [c for _unused, c in self.meta.shards])

    def __len__(self) -> int:
        return self.meta.total

    def take(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        """Records at global `indices` (any order), gathered shard by shard."""
        shard_of = np.searchsorted(self.offsets, indices, side="right") - 1
        out = {f: np.empty((len(indices), *a.shape[1:]), a.dtype) for f, a in self.arrays[0].items()}
        for shard in np.unique(shard_of):
            sel = np.nonzero(shard_of == shard)[0]
            local = indices[sel] - self.offsets[shard]
            order = np.argsort(local)  # sorted reads are kinder to the page cache
            for field, arr in self.arrays[shard].items():
                out[field][sel[order]] = arr[local[order]]
        return out


def to_arrays(records: dict[str, np.ndarray], trim_to: int = 0) -> dict[str, Any]:
    """NumPy records -> the model's inputs as int64 NumPy arrays (both trainers read these). `trim_to` > 0 cuts
    padding columns past that length.

    Besides the model inputs: `real_tokens` and `masked` (ints, counted here so the trainer never waits for the
    device to count them), and `pair_ids` [B, S] (the pair of each token, padding its own group) whenever some
    token must not see another; packed records also give `position_ids` (restarting per pair) and `pair_starts`.
    """
    ids = records["input_ids"]
    seq_len = ids.shape[1]
    if trim_to:
        seq_len = min(seq_len, trim_to)
    lengths = records["lengths"].astype(np.int64)
    count = records["mlm_count"].astype(np.int64)
    pred = records["mlm_positions"].shape[1]
    cols = np.arange(seq_len)[None, :]
    batch: dict[str, Any] = {
        "input_ids": ids[:, :seq_len].astype(np.int64),
        "token_type_ids": records["segment_ids"][:, :seq_len].astype(np.int64),
        "lengths": lengths,
        "full": bool((lengths >= seq_len).all()),
        "mlm_positions": records["mlm_positions"].astype(np.int64),
        "mlm_labels": np.where(np.arange(pred)[None, :] < count[:, None], records["mlm_ids"].astype(np.int64), -100),
        "real_tokens": int(lengths.sum()),
        "masked": int(count.sum()),
    }
    if "pair_starts" in records:
        starts = records["pair_starts"].astype(np.int64)
        plen = records["pair_lengths"].astype(np.int64)
        valid = plen > 0
        k = starts.shape[1]
        # pairs lie back to back from column 0: a token's pair is the number of valid starts at or before it
        pair = ((cols[:, :, None] >= starts[:, None, :]) & valid[:, None, :]).sum(-1) - 1
        inside = cols < lengths[:, None]
        pair = np.where(inside, pair, k)  # padding: its own group
        row_start = np.take_along_axis(starts, np.clip(pair, 0, k - 1), 1)
        batch["pair_ids"] = pair
        batch["position_ids"] = np.where(inside, cols - row_start, 0)
        batch["pair_starts"] = np.where(valid, starts, 0)
        nsp = records["nsp_labels"].astype(np.int64)
        batch["nsp_labels"] = np.where(valid & (nsp != NO_PAIR), nsp, -100)
        batch["full"] = False
    else:
        batch["nsp_labels"] = records["nsp_labels"].astype(np.int64)
        if not batch["full"]:
            batch["pair_ids"] = (cols >= lengths[:, None]).astype(np.int64)
    return batch


def to_batch(records: dict[str, np.ndarray], trim_to: int = 0) -> dict[str, Any]:
    """NumPy records -> torch tensors the PyTorch model takes (`to_arrays`, each array as a tensor)."""
    import torch

    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in to_arrays(records, trim_to).items()}


def bucket_length(max_len: int, seq_len: int, multiple: int) -> int:
    """Smallest multiple of `multiple` >= max_len (capped at seq_len): few static shapes for the compiler."""
    if multiple <= 0:
        return seq_len
    return min(seq_len, -(-max_len // multiple) * multiple)


class RankLoader:
    """Batches of `batch_size` records from this rank's slice, shuffled per epoch, prefetched in a thread; each
    made by `convert` (torch tensors by default, `to_arrays` for NumPy)."""

    def __init__(self, shards: ShardSet, rank: int, world: int, batch_size: int, seed: int = 12345,
                 pad_multiple: int = 64, prefetch: int = 4,
                 convert: Callable[[dict[str, np.ndarray], int], dict[str, Any]] = to_batch) -> None:
        self.shards = shards
        self.start, self.end = rank_range(len(shards), rank, world)
        self.batch_size = batch_size
        if self.end - self.start < batch_size:
            raise SccError(f"rank {rank} of {world} gets {self.end - self.start} records of {shards.meta.path}, fewer "
                           f"than one batch of {batch_size}: prepare more data, or lower --batch-size or the rank "
                           "count")
        self.seed = seed
        self.pad_multiple = pad_multiple
        self.prefetch = prefetch
        self.convert = convert
        self.epoch = 0
        self.batch_in_epoch = 0

    @property
    def batches_per_epoch(self) -> int:
        return (self.end - self.start) // self.batch_size

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "batch_in_epoch": self.batch_in_epoch, "start": self.start, "end": self.end}

    def _normal(self, epoch: int, batch: int) -> tuple[int, int]:
        per = max(self.batches_per_epoch, 1)
        return epoch + batch // per, batch % per

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.batch_in_epoch = self._normal(int(state["epoch"]), int(state["batch_in_epoch"]))

    def _order(self, epoch: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, epoch, self.start])
        return self.start + rng.permutation(self.end - self.start)

    def _produce(self) -> Iterator[dict[str, Any]]:
        while True:
            order = self._order(self.epoch)
            while self.batch_in_epoch < self.batches_per_epoch:
                b = self.batch_in_epoch
                records = self.shards.take(order[b * self.batch_size:(b + 1) * self.batch_size])
                trim = bucket_length(int(records["lengths"].max()), self.shards.meta.seq_len, self.pad_multiple)
                self.batch_in_epoch += 1
                yield self.convert(records, trim)
            self.epoch += 1
            self.batch_in_epoch = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Prefetching iterator. Position in state_dict() counts batches *handed out*, not produced."""
        queue: Queue = Queue(maxsize=self.prefetch)
        stop = threading.Event()
        snapshot = (self.epoch, self.batch_in_epoch)

        def worker() -> None:
            self.epoch, self.batch_in_epoch = snapshot
            try:
                for batch in self._produce():
                    batch["_pos"] = (self.epoch, self.batch_in_epoch)
                    while not stop.is_set():
                        try:
                            queue.put(batch, timeout=0.5)
                            break
                        except Full:
                            continue
                    if stop.is_set():
                        return
            except BaseException as exc:  # hand the error to the consumer
                queue.put(exc)

        thread = threading.Thread(target=worker, daemon=True, name="bert-loader")
        thread.start()
        try:
            while True:
                item = queue.get()
                if isinstance(item, BaseException):
                    raise item
                self._handed = item.pop("_pos")
                yield item
        finally:
            stop.set()

    def position_after_handed(self) -> dict[str, int]:
        """State to checkpoint: position after the last batch given to the trainer."""
        epoch, nxt = self._normal(*getattr(self, "_handed", (self.epoch, self.batch_in_epoch)))
        return {"epoch": epoch, "batch_in_epoch": nxt, "start": self.start, "end": self.end}


class SyntheticLoader:
    """Random full-length batches of the real shapes (for the benchmark), made once on the device."""

    def __init__(self, batch_size: int, seq_len: int, max_pred: int, vocab_size: int, device: Any,
                 seed: int = 0, distinct: int = 4) -> None:
        import torch

        gen = torch.Generator().manual_seed(seed)
        self.batches = []
        for _round in range(distinct):
            pos = torch.stack([torch.randperm(seq_len - 2, generator=gen)[:max_pred] + 1 for _row in range(batch_size)])
            self.batches.append({
                "input_ids": torch.randint(5, vocab_size, (batch_size, seq_len), generator=gen).to(device),
                "token_type_ids": (torch.arange(seq_len)[None, :] >= seq_len // 2).long()
                .expand(batch_size, -1).contiguous().to(device),
                "lengths": torch.full((batch_size,), seq_len).to(device),
                "full": True,
                "mlm_positions": pos.sort(dim=1).values.to(device),
                "mlm_labels": torch.randint(5, vocab_size, (batch_size, max_pred), generator=gen).to(device),
                "nsp_labels": torch.randint(0, 2, (batch_size,), generator=gen).to(device),
                "real_tokens": batch_size * seq_len,
                "masked": batch_size * max_pred,
            })
        self.step = 0

    def state_dict(self) -> dict[str, int]:
        return {"epoch": 0, "batch_in_epoch": self.step, "start": 0, "end": 0}

    position_after_handed = state_dict

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.step = int(state.get("batch_in_epoch", 0))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while True:
            batch = self.batches[self.step % len(self.batches)]
            self.step += 1
            yield batch
