"""Elapsed time per phase of a run: which phase (playbooks/<phase>.yml) each play belongs to, and how long each
phase took, from ansible-runner's events.

site.yml is a chain of phase playbooks (preflight, sources, cluster, storage, ...), each importing knobs.yml first:
a play belongs to the phase playbook site.yml imports it through. A playbook with plays of its own (a phase run
alone) is one phase. Pure functions over the playbook files and the event records (unit-tested)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import yaml

_IMPORT_KEYS = ("ansible.builtin.import_playbook", "import_playbook")


def _entries(book: Path) -> list[dict[str, Any]]:
    try:
        data = yaml.safe_load(book.read_text())
    except (OSError, yaml.YAMLError):
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def _import_of(entry: Mapping[str, Any]) -> Optional[str]:
    for key in _IMPORT_KEYS:
        if isinstance(entry.get(key), str):
            return str(entry[key])
    return None


def _plays(book: Path, seen: frozenset[Path] = frozenset()) -> list[str]:
    """The names of the plays `book` runs, in order, imported playbooks expanded (a templated import is skipped)."""
    if book in seen:
        return []
    names: list[str] = []
    for entry in _entries(book):
        target = _import_of(entry)
        if target is None:
            names.append(str(entry.get("name", "")))
        elif "{{" not in target:
            names += _plays((book.parent / target).resolve(), seen | {book})
    return names


def play_phases(book: Path) -> list[tuple[str, str]]:
    """(phase, play name) of every play `book` runs, in order. A book made only of imports (site.yml) is a chain:
    each imported playbook is a phase. A book with plays of its own is a single phase, named after the file."""
    entries = _entries(book)
    if entries and all(_import_of(e) is not None for e in entries):
        out: list[tuple[str, str]] = []
        for entry in entries:
            target = str(_import_of(entry))
            if "{{" in target:
                continue
            path = (book.parent / target).resolve()
            out += [(path.stem, play) for play in _plays(path, frozenset({book}))]
        return out
    return [(book.stem, play) for play in _plays(book)]


def _when(event: Mapping[str, Any]) -> Optional[datetime]:
    try:
        return datetime.fromisoformat(str(event.get("created", "")))
    except ValueError:
        return None


def phase_times(events: Iterable[Mapping[str, Any]], phases: list[tuple[str, str]]) -> list[tuple[str, float]]:
    """(phase, seconds) in the order the phases ran, from the events' `created` times: a play lasts from its start
    to the next play's start (the last one to the end of the run). The n-th play started is the n-th of `phases`
    when their names agree; a play that does not match is its own entry, under its name."""
    starts: list[tuple[str, datetime]] = []
    end: Optional[datetime] = None
    last, at = "", 0   # the last play started, and the position in `phases` after it
    for event in events:
        when = _when(event)
        if when is None:
            continue
        end = when if end is None or when > end else end
        if event.get("event") != "playbook_on_play_start":
            continue
        name = str((event.get("event_data") or {}).get("play", ""))
        if starts and name == last:
            # The same play again: the next batch of a `serial` play.
            starts.append((starts[-1][0], when))
            continue
        found = next((i for i in range(at, len(phases)) if phases[i][1] == name), None)
        if found is None:
            starts.append((name, when))
        else:
            starts.append((phases[found][0], when))
            at = found + 1
        last = name
    out: list[tuple[str, float]] = []
    for i, (phase, start) in enumerate(starts):
        stop = starts[i + 1][1] if i + 1 < len(starts) else (end or start)
        seconds = max(0.0, (stop - start).total_seconds())
        if out and out[-1][0] == phase:
            out[-1] = (phase, out[-1][1] + seconds)
        else:
            out.append((phase, seconds))
    return out


def phase_line(times: list[tuple[str, float]]) -> str:
    """`Time per phase: preflight 6 s, cluster 41 s, ... (total 170 s)`; empty without plays."""
    if not times:
        return ""
    total = sum(seconds for _phase, seconds in times)
    return "Time per phase: " + ", ".join(f"{phase} {seconds:.0f} s" for phase, seconds in times) + \
        f" (total {total:.0f} s)"
