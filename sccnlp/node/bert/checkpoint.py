"""Checkpoint files of a training run: `ckpt-<step>.pt` in the run's output directory, written atomically (the
TensorFlow trainer's `ckpt-<step>.index` are its CheckpointManager's; the post-mortem finds either).

The trainer writes, prunes and resumes from them; the watchdog's post-mortem names the one a re-run resumes from.
A write goes to `.ckpt-<step>.pt.tmp-<pid>`, is flushed to the storage, then renamed, so a reader never sees a
partial checkpoint; a writer that fails or is killed leaves only that temporary file, removed at the next start.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path
from typing import Any

NAME = re.compile(r"^ckpt-(\d+)\.pt$")
# Either trainer's checkpoint, for the watchdog's post-mortem: the PyTorch trainer's ckpt-<step>.pt, the TensorFlow
# trainer's ckpt-<step>.index (its CheckpointManager writes the .index last, beside the ckpt-<step>.data-* shards).
ANY_TRAINER = re.compile(r"^ckpt-(\d+)\.(?:pt|index)$")


def path_for(output_dir: Path, step: int) -> Path:
    return output_dir / f"ckpt-{step}.pt"


def found(output_dir: Path, name: re.Pattern[str] = NAME) -> list[tuple[int, Path]]:
    """(step, path) of every checkpoint in output_dir whose file name matches `name`, oldest first."""
    return sorted((int(m.group(1)), f) for f in output_dir.glob("ckpt-*") if (m := name.match(f.name)))


def latest(output_dir: Path, name: re.Pattern[str] = NAME) -> Path | None:
    """The checkpoint of the highest step, or None (also for a directory that does not exist)."""
    steps = found(output_dir, name) if output_dir.is_dir() else []
    return steps[-1][1] if steps else None


def prune(output_dir: Path, keep: int) -> None:
    """Keep the `keep` newest checkpoints (0 or less: keep all)."""
    for _step, old in found(output_dir)[:-keep] if keep > 0 else []:
        old.unlink(missing_ok=True)


def remove_partial(output_dir: Path) -> None:
    """Temporary checkpoint files a failed or killed writer left (`.ckpt-<step>.pt.tmp-<pid>`)."""
    for tmp in output_dir.glob(".ckpt-*.pt.tmp-*"):
        with contextlib.suppress(OSError):
            tmp.unlink()


def write(state: dict[str, Any], path: Path) -> None:
    """torch.save to a temporary file, fsync, rename over `path`; on an OSError (ENOSPC, EIO, EDQUOT, ...) the
    temporary file is removed and the error raised."""
    import torch

    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def storage_error_line(path: Path, exc: OSError) -> str:
    """One line naming the storage, the error and its free space: why a checkpoint could not be written."""
    try:
        usage = shutil.disk_usage(path.parent)
        free = f"{usage.free / 2**30:.2f} GiB free of {usage.total / 2**30:.2f} GiB"
    except OSError as probe:
        free = f"free space unknown ({probe.strerror or probe})"
    why = f"[Errno {exc.errno}] {exc.strerror}" if exc.errno is not None else str(exc)
    return (f"checkpoint {path} not written ({why}); storage {path.parent}: {free}. The previous checkpoint is kept. "
            "Fix: free space on that storage (or set a larger volume), then run the same command again to resume")
