"""BERT pretraining data preparation: corpus -> WordPiece vocabulary -> masked-LM/NSP shards (docs/DATA_FORMAT.md).

Stages (each one command; `run` does all of them on one node):

  plan      read-only: the content-hash directory for these inputs and whether it is complete (JSON line)
  init      first node: write prepare.json and vocab.txt (trained with `tokenizers`, or the given one)
  shards    every node: its partitions of the corpus (document-level, by byte range), one process per core
  finalize  first node: check every partition is done, write meta.json per phase, then the `.complete` marker

`<out-root>/<sha256 of corpus, vocabulary and settings>/` is reused when `.complete` exists; an incomplete one is
finished (partitions whose record file exists are kept, the rest redone).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import shutil
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sccnlp.node.errors import SccError, json_command
from sccnlp.node.filehash import sha256_file

WRITER_VERSION = 2  # 2: deterministic vocabulary training (vocab.train_vocab)
COMPLETE = ".complete"
SETTINGS_FILE = "prepare.json"


@dataclass
class Settings:
    corpus: str                      # local path (a URL is downloaded first)
    corpus_sha256: str
    vocab_file: str = ""             # given vocab.txt, or "" to train one
    vocab_size: int = 8192           # trained size, or the size a given vocab must have (0 = any)
    lowercase: bool = True
    phases: list[int] = field(default_factory=lambda: [1, 2])
    dupe_factor: int = 5
    seed: int = 12345
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    partitions: int = 1
    vocab_sha256: str = ""           # of the given vocab file
    pack: bool = False               # several pairs a row (docs/DATA_FORMAT.md, packed rows)

    def key(self) -> dict[str, Any]:
        """Everything that changes the produced data (the corpus path does not, its bytes do)."""
        return {
            "writer": WRITER_VERSION, "corpus_sha256": self.corpus_sha256,
            "vocab": f"file:{self.vocab_sha256}" if self.vocab_file else f"train:{self.vocab_size}",
            "lowercase": self.lowercase, "phases": sorted(self.phases), "dupe_factor": self.dupe_factor,
            "seed": self.seed, "masked_lm_prob": self.masked_lm_prob, "short_seq_prob": self.short_seq_prob,
            "partitions": self.partitions, **({"pack": True} if self.pack else {}),
        }

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.key(), sort_keys=True).encode()).hexdigest()


# --------------------------------------------------------------------------------------------------- inputs


def fetch_corpus(url: str, sha256: str, cache_dir: Path) -> Path:
    """Download `url` once into `cache_dir/<sha256>.txt`, checking the checksum."""
    sha256 = sha256.lower()
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise SccError(f"corpus checksum {sha256!r} is not a sha256 (64 hex digits): give --corpus-sha256 with the "
                       "corpus URL")
    target = cache_dir / f"{sha256}.txt"
    if target.is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as out:
            while block := response.read(1 << 22):
                digest.update(block)
                out.write(block)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SccError(f"cannot download the corpus {url}: {exc}; check the URL or give a local --corpus path") \
            from None
    if digest.hexdigest() != sha256:
        tmp.unlink(missing_ok=True)
        raise SccError(f"corpus {url} has sha256 {digest.hexdigest()}, expected {sha256}: fix --corpus-sha256 or "
                       "the URL")
    os.replace(tmp, target)
    return target


def make_settings(args: argparse.Namespace) -> Settings:
    """Validate the inputs (corpus, vocabulary, phases) and resolve them into Settings."""
    from sccnlp.node.bert import corpus as bcorpus
    from sccnlp.node.bert import vocab as bvocab

    corpus = args.corpus
    if "://" in corpus:
        corpus = str(fetch_corpus(corpus, args.corpus_sha256 or "", Path(args.out_root) / "corpus"))
    stats = bcorpus.check_corpus(corpus)
    corpus_sha = sha256_file(corpus)
    if args.corpus_sha256 and args.corpus_sha256.lower() != corpus_sha:
        raise SccError(f"corpus {corpus} has sha256 {corpus_sha}, expected {args.corpus_sha256}: fix "
                       "--corpus-sha256 or the corpus")
    vocab_sha = ""
    if args.vocab:
        tokens = bvocab.read_vocab(args.vocab)
        bvocab.check_vocab_size(args.vocab, tokens, args.vocab_size)
        vocab_sha = sha256_file(args.vocab)
    phases = sorted({int(p) for p in str(args.phases).split(",") if p.strip()})
    from sccnlp.node.bert.shards import PHASES

    if not phases or any(p not in PHASES for p in phases):
        raise SccError(f"--phases {args.phases!r}: choose 1 (seq 128), 2 (seq 512) or 1,2")
    if args.dupe_factor < 1 or args.partitions < 1:
        raise SccError("--dupe-factor and --partitions must be at least 1")
    partitions = min(args.partitions, stats.documents)
    return Settings(corpus=str(Path(corpus).resolve()), corpus_sha256=corpus_sha, vocab_file=args.vocab or "",
                    vocab_size=args.vocab_size, lowercase=args.lowercase, phases=phases,
                    dupe_factor=args.dupe_factor, seed=args.seed, masked_lm_prob=args.masked_lm_prob,
                    short_seq_prob=args.short_seq_prob, partitions=partitions, vocab_sha256=vocab_sha,
                    pack=bool(getattr(args, "pack", False)))


def load_settings(data_dir: Path) -> Settings:
    file = data_dir / SETTINGS_FILE
    if not file.is_file():
        raise SccError(f"{file} is missing: run `python -m sccnlp.node.bert.prepare init` (first node) before the "
                       "shards stage, with the same --out-root")
    return Settings(**json.loads(file.read_text()))


# --------------------------------------------------------------------------------------------------- stages


def plan(settings: Settings, out_root: str | os.PathLike[str]) -> dict[str, Any]:
    data_dir = Path(out_root) / settings.digest()
    return {"data_dir": str(data_dir), "hash": settings.digest(), "complete": (data_dir / COMPLETE).is_file(),
            "partitions": settings.partitions, "phases": settings.phases,
            "phase_dirs": {str(p): str(data_dir / _phase(p).dirname) for p in settings.phases}}


def _phase(number: int) -> Any:
    from sccnlp.node.bert.shards import PHASES

    return PHASES[number]


def init(settings: Settings, out_root: str | os.PathLike[str]) -> dict[str, Any]:
    """Create the data directory with prepare.json and vocab.txt (kept if already there)."""
    from sccnlp.node.bert import vocab as bvocab
    from sccnlp.node.bert.shards import atomic_write_text

    info = plan(settings, out_root)
    data_dir = Path(info["data_dir"])
    if info["complete"]:
        return info
    (data_dir / "parts").mkdir(parents=True, exist_ok=True)
    atomic_write_text(data_dir / SETTINGS_FILE, json.dumps(asdict(settings), indent=1) + "\n")
    vocab_out = data_dir / "vocab.txt"
    if not vocab_out.is_file():
        if settings.vocab_file:
            tmp = vocab_out.with_name(".vocab.txt.tmp")
            shutil.copyfile(settings.vocab_file, tmp)
            os.replace(tmp, vocab_out)
        else:
            bvocab.train_vocab(settings.corpus, settings.vocab_size, settings.lowercase, vocab_out)
    return info


def node_partitions(partitions: int, node_index: int, num_nodes: int) -> range:
    if not 0 <= node_index < num_nodes:
        raise SccError(f"--node-index {node_index} is outside 0..{num_nodes - 1} (--num-nodes {num_nodes})")
    return range(node_index * partitions // num_nodes, (node_index + 1) * partitions // num_nodes)


def part_file(data_dir: Path, part: int) -> Path:
    return data_dir / "parts" / f"part-{part:05d}.json"


def prepare_partition(data_dir: str, part: int, node_index: int = 0) -> dict[str, Any]:
    """Tokenise partition `part`, build and mask the records of every phase, write its shards + record file."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one process per core already
    import numpy as np

    from sccnlp.node.bert import corpus as bcorpus
    from sccnlp.node.bert import manifest as bmanifest
    from sccnlp.node.bert import shards as bshards
    from sccnlp.node.bert import vocab as bvocab

    folder = Path(data_dir)
    done = part_file(folder, part)
    if done.is_file():
        return dict(json.loads(done.read_text()))
    settings = load_settings(folder)
    started = time.monotonic()
    docs_text = bcorpus.read_partition(settings.corpus, part, settings.partitions)
    tokens = bvocab.read_vocab(folder / "vocab.txt")
    ids = bshards.SpecialIds.from_vocab(tokens)
    tokenizer = bvocab.load_tokenizer(folder / "vocab.txt", settings.lowercase)
    flat = [s for doc in docs_text for s in doc]
    encoded = bvocab.encode_sentences(tokenizer, flat)
    docs: list[list[list[int]]] = []
    cursor = 0
    for doc in docs_text:
        docs.append(encoded[cursor:cursor + len(doc)])
        cursor += len(doc)
    record: dict[str, Any] = {"part": part, "node": node_index, "documents": len(docs), "phases": {}}
    for number in settings.phases:
        phase = bshards.PHASES[number]
        rng = random.Random(settings.seed * 1_000_003 + part * 10 + number)
        records = bshards.build_records(docs, phase, ids, settings.dupe_factor, settings.short_seq_prob, rng)
        fields = bshards.mask_records(records, phase.max_pred, ids, settings.masked_lm_prob,
                                      np.random.default_rng([settings.seed, part, number]))
        pairs = len(fields["lengths"])
        if settings.pack:
            fields = bshards.pack_fields(fields, phase.seq_len, phase.max_pred, ids.pad)
        name = f"shard-p{part:05d}"
        count = bshards.write_shard(folder / phase.dirname, name, fields)
        written = bshards.PACKED_FIELDS if settings.pack else bshards.FIELDS
        record["phases"][str(number)] = {"name": name, "count": count, "pairs": pairs,
                                         "tokens": int(fields["lengths"].astype(np.int64).sum()),
                                         "files": bmanifest.describe(folder / phase.dirname,
                                                                     (f"{name}.{field}.npy" for field in written))}
    record["seconds"] = round(time.monotonic() - started, 2)
    bshards.atomic_write_text(done, json.dumps(record) + "\n")
    return record


def _prepare_partition_args(args: tuple[str, int, int]) -> dict[str, Any]:
    return prepare_partition(*args)


def make_shards(data_dir: str | os.PathLike[str], node_index: int, num_nodes: int, workers: int) -> dict[str, Any]:
    """This node's partitions, `workers` processes at a time; returns per-phase record counts."""
    folder = Path(data_dir)
    settings = load_settings(folder)
    if not (folder / "vocab.txt").is_file():
        raise SccError(f"{folder}/vocab.txt is missing: run the init stage on the first node first")
    parts = node_partitions(settings.partitions, node_index, num_nodes)
    todo = [p for p in parts if not part_file(folder, p).is_file()]
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
    jobs = [(str(folder), p, node_index) for p in todo]
    if workers == 1:
        results = [_prepare_partition_args(job) for job in jobs]
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            results = pool.map(_prepare_partition_args, jobs, chunksize=1)
    counts: dict[str, int] = {}
    for res in results:
        for number, shard in res["phases"].items():
            counts[number] = counts.get(number, 0) + shard["count"]
    return {"node": node_index, "partitions": [parts.start, parts.stop], "written": len(todo),
            "kept": len(parts) - len(todo), "records": counts}


def finalize(data_dir: str | os.PathLike[str], num_nodes: int = 0) -> dict[str, Any]:
    """Check all partitions are done; write meta.json per phase and the `.complete` marker last."""
    from sccnlp.node.bert import shards as bshards
    from sccnlp.node.bert import vocab as bvocab

    folder = Path(data_dir)
    settings = load_settings(folder)
    missing = [p for p in range(settings.partitions) if not part_file(folder, p).is_file()]
    if missing:
        where = ""
        if num_nodes:
            nodes = sorted({n for n in range(num_nodes) for p in missing
                            if p in node_partitions(settings.partitions, n, num_nodes)})
            where = f" (node index {', '.join(map(str, nodes))})"
        raise SccError(f"{len(missing)} of {settings.partitions} partitions of {folder} are not prepared{where}: "
                       "re-run the shards stage on those nodes")
    records = [json.loads(part_file(folder, p).read_text()) for p in range(settings.partitions)]
    tokens = bvocab.read_vocab(folder / "vocab.txt")
    vocab_sha = sha256_file(folder / "vocab.txt")
    totals = {}
    padding = {}
    for number in settings.phases:
        phase = bshards.PHASES[number]
        shards = [(r["phases"][str(number)]["name"], r["phases"][str(number)]["count"]) for r in records]
        shards = [s for s in shards if s[1] > 0]
        tokens_real = sum(r["phases"][str(number)].get("tokens", 0) for r in records)
        rows = sum(c for _unused, c in shards)
        pad = 1.0 - tokens_real / (rows * phase.seq_len) if rows and tokens_real else None
        meta = bshards.write_meta(folder / phase.dirname, phase, len(tokens), vocab_sha, shards,
                                  settings.corpus_sha256, settings.dupe_factor, settings.seed,
                                  packed=settings.pack, padding=pad)
        if pad is not None:
            padding[phase.dirname] = round(pad, 4)
        if meta["total"] == 0:
            raise SccError(f"the corpus {settings.corpus} gave no {phase.dirname} records: give a larger corpus "
                           "(documents of several sentences)")
        totals[phase.dirname] = meta["total"]
    summary = {"data_dir": str(folder), "records": totals, "padding_fraction": padding, "packed": settings.pack,
               "vocab_size": len(tokens),
               "partitions": settings.partitions, "documents": sum(r["documents"] for r in records)}
    bshards.atomic_write_text(folder / COMPLETE, json.dumps(summary) + "\n")
    return summary


# --------------------------------------------------------------------------------------------------- command line


def _add_input_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--corpus", required=True, help="corpus path, or an http(s) URL (then --corpus-sha256)")
    p.add_argument("--corpus-sha256", default="", help="expected sha256 of the corpus (required with a URL)")
    p.add_argument("--vocab", default="", help="a given vocab.txt (default: train a WordPiece vocabulary)")
    p.add_argument("--vocab-size", type=int, default=8192,
                   help="size of the trained vocabulary (8192 demo, 30522 BERT); with --vocab the size it must have "
                        "(0 = any)")
    p.add_argument("--cased", dest="lowercase", action="store_false", help="keep case (default: lowercase)")
    p.add_argument("--phases", default="1,2", help="1 (seq 128, 20 predictions), 2 (seq 512, 80) or 1,2")
    p.add_argument("--dupe-factor", type=int, default=5, help="passes over the corpus with different masks/pairs")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--masked-lm-prob", type=float, default=0.15)
    p.add_argument("--short-seq-prob", type=float, default=0.1)
    p.add_argument("--partitions", type=int, default=0,
                   help="document partitions over all nodes and workers (0 = nodes x workers)")
    p.add_argument("--pack", action="store_true",
                   help="packed rows: several NSP pairs a row (less padding; the trainer attends within a pair)")
    p.add_argument("--out-root", required=True, help="where <content-hash>/ directories go (shared storage)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sccnlp.node.bert.prepare", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n", 2)[2])
    sub = parser.add_subparsers(dest="stage", required=True)
    for name in ("plan", "init", "run"):
        p = sub.add_parser(name)
        _add_input_args(p)
        p.add_argument("--num-nodes", type=int, default=1)
        p.add_argument("--workers", type=int, default=0, help="processes per node (0 = CPU count)")
    p = sub.add_parser("shards")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--node-index", type=int, default=0)
    p.add_argument("--num-nodes", type=int, default=1)
    p.add_argument("--workers", type=int, default=0, help="processes on this node (0 = CPU count)")
    p = sub.add_parser("finalize")
    p.add_argument("--data-dir", required=True)
    p.add_argument("--num-nodes", type=int, default=0, help="to name the nodes whose partitions are missing")
    return parser


def run_stage(args: argparse.Namespace) -> dict[str, Any]:
    """The stage the command line names; its summary."""
    if args.stage == "shards":
        return make_shards(args.data_dir, args.node_index, args.num_nodes, args.workers)
    if args.stage == "finalize":
        return finalize(args.data_dir, args.num_nodes)
    workers = args.workers or os.cpu_count() or 1
    if not args.partitions:
        args.partitions = max(1, args.num_nodes) * workers
    settings = make_settings(args)
    if args.stage == "plan":
        return plan(settings, args.out_root)
    result = init(settings, args.out_root)
    if args.stage == "run" and not result["complete"]:
        make_shards(result["data_dir"], 0, 1, workers)
        result = {**finalize(result["data_dir"]), **plan(settings, args.out_root)}
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return json_command("sccnlp.node.bert.prepare", lambda: run_stage(args))


if __name__ == "__main__":
    sys.exit(main())
