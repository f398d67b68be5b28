"""End to end data preparation on a real corpus: vocab, shards across nodes/workers, reuse, the trainer's reader."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sccnlp.node.bert import prepare, vocab
from sccnlp.node.bert.data import ShardSet, rank_range

ARGS = ["--vocab-size", "2000", "--phases", "1,2", "--dupe-factor", "2", "--seed", "7"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    rc = prepare.main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _fail(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    rc = prepare.main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.fixture(scope="module")
def prepared(real_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two nodes x two workers, stage by stage as the bert role runs them."""
    root = tmp_path_factory.mktemp("data")
    common = ["--corpus", str(real_corpus), "--out-root", str(root), *ARGS, "--num-nodes", "2", "--workers", "2"]
    results = {}
    for stage in ("plan", "init"):
        assert prepare.main([stage, *common]) == 0
    info = prepare.plan(prepare.make_settings(prepare.build_parser().parse_args(["plan", *common, "--partitions",
                                                                                 "4"])), root)
    data_dir = info["data_dir"]
    for node in (0, 1):
        results[node] = prepare.make_shards(data_dir, node, 2, 2)
    results["final"] = prepare.finalize(data_dir, 2)
    return {"root": root, "dir": Path(data_dir), "common": common, **results}


def test_stages_write_every_partition_once(prepared: dict) -> None:
    assert prepared[0]["partitions"] == [0, 2] and prepared[1]["partitions"] == [2, 4]
    assert prepared[0]["written"] == 2 and prepared[1]["written"] == 2
    folder = prepared["dir"]
    assert (folder / ".complete").is_file()
    assert sorted(p.name for p in (folder / "parts").iterdir()) == [f"part-{i:05d}.json" for i in range(4)]
    for phase, (seq, pred) in (("phase1_seq128", (128, 20)), ("phase2_seq512", (512, 80))):
        meta = json.loads((folder / phase / "meta.json").read_text())
        assert [s["name"] for s in meta["shards"]] == [f"shard-p{i:05d}" for i in range(4)]
        assert (meta["seq_len"], meta["max_pred"], meta["vocab_size"], meta["dupe_factor"], meta["seed"]) == \
            (seq, pred, 2000, 2, 7)
        assert meta["total"] == prepared["final"]["records"][phase] > 100
    vocab = (folder / "vocab.txt").read_text().splitlines()
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and len(vocab) == 2000


def test_trainer_reader_reads_disjoint_rank_ranges(prepared: dict) -> None:
    shards = ShardSet(prepared["dir"] / "phase1_seq128")
    total = len(shards)
    everything = shards.take(np.arange(total))
    assert abs(everything["nsp_labels"].mean() - 0.5) < 0.05
    masked = everything["mlm_count"].sum() / (everything["lengths"].astype(int) - 3).sum()
    assert abs(masked - 0.15) < 0.02
    for world in (1, 3, 4):
        ranges = [rank_range(total, r, world) for r in range(world)]
        seen = np.concatenate([np.arange(*r) for r in ranges])
        assert (seen == np.arange(total)).all()  # disjoint and complete
        rows = [shards.take(np.arange(*r))["input_ids"] for r in ranges]
        assert sum(len(r) for r in rows) == total
        assert (np.concatenate(rows) == everything["input_ids"]).all()


def test_same_inputs_reuse_the_directory(prepared: dict, capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(prepared["dir"].rglob("*.npy"))
    before = {f: f.stat().st_mtime_ns for f in files}
    result = _run(capsys, "run", *prepared["common"], "--partitions", "4")
    assert result["complete"] is True and result["data_dir"] == str(prepared["dir"])
    assert {f: f.stat().st_mtime_ns for f in files} == before
    other = _run(capsys, "plan", *prepared["common"], "--partitions", "4", "--seed", "8")
    assert other["data_dir"] != str(prepared["dir"]) and other["complete"] is False


def test_partial_directory_is_finished(real_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--corpus", str(real_corpus), "--out-root", str(tmp_path), "--vocab-size", "1000", "--phases", "1",
              "--dupe-factor", "1", "--partitions", "3", "--workers", "1"]
    first = _run(capsys, "run", *common)
    folder = Path(first["data_dir"])
    reference = np.load(folder / "phase1_seq128" / "shard-p00001.input_ids.npy")
    kept = folder / "phase1_seq128" / "shard-p00000.input_ids.npy"
    kept_mtime = kept.stat().st_mtime_ns
    (folder / ".complete").unlink()
    (folder / "parts" / "part-00001.json").unlink()
    (folder / "phase1_seq128" / "shard-p00001.input_ids.npy").write_bytes(b"partial")
    assert _run(capsys, "plan", *common)["complete"] is False
    err = _fail(capsys, "finalize", "--data-dir", str(folder), "--num-nodes", "3")
    assert "1 of 3 partitions" in err and "node index 1" in err
    again = _run(capsys, "run", *common)
    assert again["complete"] is True
    assert (np.load(folder / "phase1_seq128" / "shard-p00001.input_ids.npy") == reference).all()  # deterministic
    assert kept.stat().st_mtime_ns == kept_mtime  # done partitions are kept


def test_given_vocab_is_used_and_checked(prepared: dict, real_corpus: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    vocab = prepared["dir"] / "vocab.txt"
    base = ["--corpus", str(real_corpus), "--out-root", str(tmp_path), "--phases", "1", "--dupe-factor", "1",
            "--partitions", "2", "--workers", "1", "--vocab", str(vocab)]
    result = _run(capsys, "run", *base, "--vocab-size", "2000")
    assert (Path(result["data_dir"]) / "vocab.txt").read_bytes() == vocab.read_bytes()
    err = _fail(capsys, "plan", *base, "--vocab-size", "30522")
    assert "vocabulary size mismatch" in err and "2000 tokens" in err and "30522" in err
    bad = tmp_path / "bad-vocab.txt"
    bad.write_text("hello\n[PAD]\n")
    assert "[PAD] as token 0" in _fail(capsys, "plan", *base[:-1], str(bad), "--vocab-size", "0")


@pytest.mark.parametrize("case", ["missing", "empty", "blank-lines"])
def test_bad_corpus_is_one_clear_line(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.txt"
    if case == "empty":
        corpus.write_text("")
    elif case == "blank-lines":
        corpus.write_text("\n\n\n")
    err = _fail(capsys, "run", "--corpus", str(corpus), "--out-root", str(tmp_path / "out"))
    assert str(corpus) in err and ("does not exist" in err if case == "missing" else "is empty" in err)
    assert not (tmp_path / "out").exists()  # nothing written


def test_url_corpus_checks_the_checksum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("A first sentence is here.\nA second one.\n\nAnother document starts.\nIt ends.\n")
    url = corpus.as_uri()
    err = _fail(capsys, "plan", "--corpus", url, "--corpus-sha256", "0" * 64, "--out-root", str(tmp_path / "o"))
    assert "expected " + "0" * 64 in err
    assert "64 hex digits" in _fail(capsys, "plan", "--corpus", url, "--out-root", str(tmp_path / "o"))


def test_shards_stage_without_init_says_what_to_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fail(capsys, "shards", "--data-dir", str(tmp_path), "--node-index", "0", "--num-nodes", "1")
    assert "prepare.json is missing" in err and "init" in err
    os.environ.pop("TOKENIZERS_PARALLELISM", None)


def test_packed_preparation_has_less_padding(real_corpus: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`--pack`: several whole pairs a row, every pair kept, the summary prints the padding fraction."""
    common = ["--corpus", str(real_corpus), *ARGS, "--workers", "1", "--partitions", "1"]
    plain = _run(capsys, "run", *common, "--out-root", str(tmp_path / "u"))
    packed = _run(capsys, "run", *common, "--out-root", str(tmp_path / "p"), "--pack")
    assert plain["data_dir"] != packed["data_dir"] and packed["packed"] is True
    for phase in ("phase1_seq128", "phase2_seq512"):
        assert 0.0 < packed["padding_fraction"][phase] < plain["padding_fraction"][phase]
        assert packed["records"][phase] < plain["records"][phase]
        u, p = ShardSet(Path(plain["data_dir"]) / phase), ShardSet(Path(packed["data_dir"]) / phase)
        assert p.meta.packed and p.meta.max_pairs == 8 and p.meta.max_pred == u.meta.max_pred + 8
        ur, pr = u.take(np.arange(len(u))), p.take(np.arange(len(p)))
        pairs = pr["pair_lengths"][pr["pair_lengths"] > 0]
        assert sorted(pairs.tolist()) == sorted(ur["lengths"].tolist())  # every pair, whole
        assert (pr["pair_lengths"].astype(int).sum(1) == pr["lengths"]).all()
        assert int(pr["mlm_count"].astype(int).sum()) == int(ur["mlm_count"].astype(int).sum())
        seq = u.meta.seq_len
        assert plain["padding_fraction"][phase] == pytest.approx(1 - ur["lengths"].sum() / (len(u) * seq), abs=1e-4)


def test_vocabulary_training_is_deterministic(real_corpus: Path, tmp_path: Path) -> None:
    """`tokenizers` alone numbers `##x` tokens in hash-map order and breaks merge ties by them (a different vocab.txt
    most runs, sometimes other tokens): the same corpus must give the same file, also within one process."""
    files = [tmp_path / f"vocab{i}.txt" for i in range(4)]
    for file in files:
        vocab.train_vocab(real_corpus, 2000, True, file)
    assert len({f.read_bytes() for f in files}) == 1


def _digests(folder: Path) -> dict[str, str]:
    """sha256 of every file but the records of timings (parts/) and the summary naming the folder (.complete)."""
    return {str(f.relative_to(folder)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(folder.rglob("*")) if f.is_file() and f.parent.name != "parts" and f.name != ".complete"}


def test_preparation_is_byte_identical_across_processes(real_corpus: Path, tmp_path: Path) -> None:
    """Two nodes preparing the same inputs (other processes, other PYTHONHASHSEED) write the same bytes: the
    content-hash directory is shared and reused across nodes, so its name must pin its content."""
    argv = ["run", "--corpus", str(real_corpus), *ARGS, "--workers", "2", "--partitions", "2", "--pack"]
    dirs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        got = subprocess.run([sys.executable, "-m", "sccnlp.node.bert.prepare", *argv,
                              "--out-root", str(tmp_path / seed)], capture_output=True, text=True, env=env, check=False)
        assert got.returncode == 0, got.stderr
        dirs.append(Path(json.loads(got.stdout.strip().splitlines()[-1])["data_dir"]))
    assert dirs[0].name == dirs[1].name
    first, second = _digests(dirs[0]), _digests(dirs[1])
    assert "vocab.txt" in first and any(name.endswith(".npy") for name in first)
    assert first == second
