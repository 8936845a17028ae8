"""What `python -m healthbench_exp.cache stats | prune | clear` do and print.

`prune` and `clear` only list what they would remove unless told `yes`: nothing is deleted by
surprise. Each returns the lines to print.
"""

from __future__ import annotations

import re
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

from healthbench_exp.model.cache.admin import (
    Group,
    Selection,
    file_bytes,
    forget_runs,
    groups,
    last_runs,
    open_cache,
    remove,
    running_pids,
    selection_condition,
    vacuum,
)
from healthbench_exp.model.cache.database import CACHE_FILE, writable

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_SIZES = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9}


def parse_age(text: str) -> float:
    """`30d`, `12h`, `2w`, `90m`, `45s` as seconds (ValueError naming the form)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text.lower())
    if not found:
        raise ValueError(f"an age is a number and a unit (s, m, h, d, w), like 30d; got {text!r}")
    return float(found[1]) * _UNITS[found[2]]


def parse_size(text: str) -> int:
    """`500MB`, `2G`, `100k`, `12345` as bytes (ValueError naming the form)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?b?)\s*", text.lower())
    if not found:
        raise ValueError(f"a size is a number and a unit (B, KB, MB, GB), like 500MB; got {text!r}")
    return int(float(found[1]) * _SIZES[found[2]])


def human_bytes(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def group_lines(found: list[Group]) -> list[str]:
    """One line per profile: entries, bytes, oldest and newest, and the profile."""
    return [
        f"  {g.entries:>8,} entries {human_bytes(g.bytes):>9}  {when(g.oldest)} .. "
        f"{when(g.newest)}  {g.description}"
        for g in found
    ]


def stats(directory: Path) -> list[str]:
    """Entries and bytes per profile, oldest and newest, and the hit rate of the last runs."""
    db = open_cache(directory)
    if db is None:
        return [f"no response cache in {directory} (no run has stored a reply there yet)"]
    try:
        found = groups(db)
        runs = last_runs(db)
        running = set(running_pids(db))
    finally:
        db.close()
    entries = sum(g.entries for g in found)
    lines = [
        f"response cache {directory}: {entries:,} entries, {human_bytes(file_bytes(directory))} "
        "on disk" + ("" if writable(directory / CACHE_FILE) else " (read-only for this user)")
    ]
    if found:
        oldest, newest = min(g.oldest for g in found), max(g.newest for g in found)
        lines += [
            f"  oldest {when(oldest)}, newest {when(newest)}",
            "per model/judge and settings:",
        ]
        lines += group_lines(found)
    lines.append("last runs (hits: calls answered from the cache):")
    if not runs:
        lines.append("  none recorded")
    for run in runs:
        rate = "-" if run.hit_rate is None else f"{run.hit_rate:.0%}"
        lines.append(
            f"  {when(run.started)}  {run.finished - run.started:7.0f} s  {run.hits:>7,} hits "
            f"{run.misses:>7,} misses  hit rate {rate:>4}  (pid {run.pid}"
            + (", running)" if run.open and run.pid in running else ")")
        )
    return lines


def prune(directory: Path, selection: Selection, yes: bool) -> list[str]:
    """Remove (with `yes`; else list) the entries `selection` picks. ValueError for a name the
    cache does not know, or no criterion given."""
    if selection == Selection():
        raise ValueError(
            "say what to prune: --older-than AGE, --name NAME (with --role) or --max-size SIZE "
            "(clear removes everything)"
        )
    return _remove(directory, selection, yes, "prune")


def clear(directory: Path, yes: bool) -> list[str]:
    """Remove (with `yes`; else list) every entry and the recorded runs."""
    return _remove(directory, Selection(), yes, "clear")


def _remove(directory: Path, selection: Selection, yes: bool, command: str) -> list[str]:
    db = open_cache(directory, write=True if yes else None)
    if db is None:
        return [f"no response cache in {directory}: nothing to remove"]
    try:
        where, args = selection_condition(db, selection, time.time())
        chosen = groups(db, where, args)
        if not chosen:
            return [f"nothing in {directory} matches: nothing to remove"]
        entries = sum(g.entries for g in chosen)
        size = human_bytes(sum(g.bytes for g in chosen))
        if not yes:
            return [
                f"would remove {entries:,} entries ({size}) from {directory}:",
                *group_lines(chosen),
                f"nothing was removed: run again with --yes to remove them ({command})",
            ]
        before = file_bytes(directory)
        removed = remove(db, where, args)
        if command == "clear":
            forget_runs(db)
        running = running_pids(db)
        note = ""
        if running:
            note = (
                f" (a run is writing to it, pid {', '.join(map(str, running))}: the file keeps "
                "its size, later entries reuse the space; prune again after the run to compact it)"
            )
        else:
            try:
                vacuum(db)
            except sqlite3.OperationalError as exc:  # another process holds the file
                note = f" (the file keeps its size for now: {exc}; later entries reuse the space)"
        return [
            f"removed {removed:,} entries ({size}) from {directory}:",
            *group_lines(chosen),
            f"on disk: {human_bytes(before)} -> {human_bytes(file_bytes(directory))}{note}",
        ]
    finally:
        db.close()
