"""The data manifest on really prepared data: every shard file recorded with its size and sha256 when written, a
reused directory checked against it, a corrupted or truncated shard named with its partition and the fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sccnlp.node.bert import manifest, prepare

ARGS = ["--vocab-size", "2000", "--phases", "1", "--dupe-factor", "1", "--seed", "7"]


@pytest.fixture()
def data_dir(real_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert prepare.main(["run", "--corpus", str(real_corpus), "--out-root", str(tmp_path), *ARGS,
                         "--workers", "1", "--partitions", "2"]) == 0
    return Path(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["data_dir"])


def _verify(capsys: pytest.CaptureFixture[str], folder: Path, *extra: str) -> tuple[int, str, str]:
    rc = manifest.main(["verify", "--data-dir", str(folder), "--phase", "1", *extra])
    out, err = capsys.readouterr()
    return rc, out, err


def test_every_shard_file_is_recorded_and_verifies(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = json.loads((data_dir / "parts" / "part-00001.json").read_text())
    files = record["phases"]["1"]["files"]
    assert sorted(files) == sorted(f"shard-p00001.{f}.npy" for f in
                                   ("input_ids", "segment_ids", "lengths", "mlm_positions", "mlm_ids", "mlm_count",
                                    "nsp_labels"))
    one = data_dir / "phase1_seq128" / "shard-p00001.input_ids.npy"
    assert files[one.name] == {"size": one.stat().st_size, "sha256": manifest.sha256_file(one),
                               "mtime_ns": one.stat().st_mtime_ns}
    rc, out, _unused = _verify(capsys, data_dir)
    assert rc == 0 and json.loads(out) == {"data_dir": str(data_dir), "phase": 1, "files": 14, "hashed": 0,
                                           "unrecorded_partitions": []}
    rc, out, _unused = _verify(capsys, data_dir, "--full")
    assert rc == 0 and json.loads(out)["hashed"] == 14


@pytest.mark.parametrize("damage", ["overwrite", "truncate", "delete"])
def test_a_bad_shard_is_named_with_the_fix(data_dir: Path, capsys: pytest.CaptureFixture[str], damage: str) -> None:
    shard = data_dir / "phase1_seq128" / "shard-p00001.mlm_ids.npy"
    if damage == "overwrite":  # same size, other bytes: only the hash tells
        with open(shard, "r+b") as handle:
            handle.seek(200)
            handle.write(b"\xff" * 16)
    elif damage == "truncate":
        os.truncate(shard, shard.stat().st_size // 2)
    else:
        shard.unlink()
    rc, out, err = _verify(capsys, data_dir)
    assert rc == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    state = "missing" if damage == "delete" else "corrupted"
    assert f"shard phase1_seq128/{shard.name} of {data_dir} is {state}" in err
    why = {"overwrite": "differs from the manifest", "truncate": "the manifest says", "delete": "missing"}[damage]
    assert why in err
    assert "delete parts/part-00001.json and .complete there, then run the same command again: partition 1 is " \
        "prepared again" in err


def test_the_fix_prepares_only_that_partition(data_dir: Path, real_corpus: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    shard = data_dir / "phase1_seq128" / "shard-p00000.input_ids.npy"
    good = shard.read_bytes()
    shard.write_bytes(b"\0" * len(good))
    assert _verify(capsys, data_dir)[0] == 2
    (data_dir / "parts" / "part-00000.json").unlink()
    (data_dir / ".complete").unlink()
    kept = (data_dir / "phase1_seq128" / "shard-p00001.input_ids.npy").stat().st_mtime_ns
    assert prepare.main(["run", "--corpus", str(real_corpus), "--out-root", str(data_dir.parent), *ARGS,
                         "--workers", "1", "--partitions", "2"]) == 0
    capsys.readouterr()
    assert shard.read_bytes() == good  # the same deterministic shard again
    assert (data_dir / "phase1_seq128" / "shard-p00001.input_ids.npy").stat().st_mtime_ns == kept
    assert _verify(capsys, data_dir)[0] == 0


def test_data_prepared_before_the_manifest_is_accepted_and_reported(data_dir: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    part = data_dir / "parts" / "part-00000.json"
    record = json.loads(part.read_text())
    del record["phases"]["1"]["files"]
    part.write_text(json.dumps(record))
    rc, out, _unused = _verify(capsys, data_dir)
    assert rc == 0 and json.loads(out)["unrecorded_partitions"] == [0] and json.loads(out)["files"] == 7
