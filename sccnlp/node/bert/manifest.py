"""The data manifest: size, sha256 and mtime of every shard file, recorded when a partition is written, checked
before prepared data is reused.

Each partition's record (`<data_dir>/parts/part-<n>.json`) lists, per phase, its shard files with their size, sha256
and mtime. `verify` checks every file of a phase: missing or of another size is bad; a file whose mtime changed is
hashed again and bad when its sha256 differs; `--full` hashes every file (bit rot without a write). A bad file is
named with its partition and the fix (delete the partition record and `.complete`: a re-run prepares only that
partition again). Run: `python -m sccnlp.node.bert.manifest verify --data-dir <data_dir> --phase 1`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sccnlp.node.errors import SccError, json_command
from sccnlp.node.filehash import sha256_file


def describe(folder: Path, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Size, sha256 and mtime (ns) of each named file in `folder`: the manifest entries of one shard."""
    out = {}
    for name in names:
        path = folder / name
        st = path.stat()
        out[name] = {"size": st.st_size, "sha256": sha256_file(path), "mtime_ns": st.st_mtime_ns}
    return out


def _records(data_dir: Path) -> list[dict[str, Any]]:
    parts = sorted((data_dir / "parts").glob("part-*.json"))
    records = []
    for path in parts:
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, ValueError) as exc:
            raise SccError(f"partition record {path} is unreadable ({exc}): delete it and {data_dir}/.complete, then "
                           "run the same command again (that partition is prepared again)") from None
    return records


def verify(data_dir: str | os.PathLike[str], phase_dirname: str, phase: int, full: bool = False) -> dict[str, Any]:
    """Check the shard files of one phase against the manifest; raises SccError naming the first bad file."""
    folder = Path(data_dir)
    checked = hashed = 0
    unrecorded = []
    for record in _records(folder):
        part = int(record["part"])
        entry = record.get("phases", {}).get(str(phase))
        if not entry or not entry.get("count"):
            continue
        files = entry.get("files")
        if not files:
            unrecorded.append(part)
            continue
        for name, want in files.items():
            path = folder / phase_dirname / name
            # Short enough for one line of a playbook failure (the data directory is a 64-digit hash).
            fix = (f"delete parts/part-{part:05d}.json and .complete there, then run the same command again: "
                   f"partition {part} is prepared again")
            what = f"shard {phase_dirname}/{name} of {folder}"
            try:
                st = path.stat()
            except OSError:
                raise SccError(f"{what} is missing (partition {part}): {fix}") from None
            checked += 1
            if st.st_size != want["size"]:
                raise SccError(f"{what} is corrupted: {st.st_size} bytes, the manifest says {want['size']}: {fix}")
            if full or st.st_mtime_ns != want["mtime_ns"]:
                hashed += 1
                got = sha256_file(path)
                if got != want["sha256"]:
                    raise SccError(f"{what} is corrupted: sha256 {got[:12]}… differs from the manifest's "
                                   f"{want['sha256'][:12]}…: {fix}")
    return {"data_dir": str(folder), "phase": phase, "files": checked, "hashed": hashed,
            "unrecorded_partitions": unrecorded}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sccnlp.node.bert.manifest",
                                description=__doc__.split("\n", maxsplit=1)[0])
    sub = p.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify", help="check a phase's shard files against the manifest")
    v.add_argument("--data-dir", required=True)
    v.add_argument("--phase", type=int, choices=(1, 2), required=True)
    v.add_argument("--full", action="store_true", help="hash every file, not only those whose mtime changed")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from sccnlp.node.bert.shards import PHASES

    args = build_parser().parse_args(argv)
    return json_command("sccnlp.node.bert.manifest",
                        lambda: verify(args.data_dir, PHASES[args.phase].dirname, args.phase, args.full))


if __name__ == "__main__":
    sys.exit(main())
