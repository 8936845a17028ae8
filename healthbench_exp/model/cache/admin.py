"""Reading and managing the response cache file: history per profile (for the dry run), and what
`python -m healthbench_exp.cache` shows and removes (stats, prune, clear).

Every change is made in short transactions (DELETE_BATCH entries each), so a run writing to the
same file at the same time waits at most a moment for its next write (its busy timeout is 60 s)
and never sees a torn entry: SQLite's WAL keeps each entry whole. Removing entries frees pages
that later entries reuse; `vacuum` (done after a prune or clear that acts) also gives the space
back to the disk.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from healthbench_exp.model.cache.database import (
    CACHE_FILE,
    not_a_directory,
    open_database,
    open_read_only,
    writable,
)
from healthbench_exp.model.cache.profiles import Profile, profile_id

# The least number of a profile's replies whose measured lengths the dry run trusts (fewer: it
# assumes `expected_completion_tokens`). A few dozen: the mean of 30 replies whose lengths vary
# by half their mean is within about 10% of the true mean (95%).
HISTORY_MIN_REPLIES = 30
DELETE_BATCH = 2000  # entries removed per transaction
ENTRY_OVERHEAD_BYTES = 120  # key, usage columns and SQLite's record and index overhead, per entry
UNKNOWN = "unknown"  # the name of entries stored before profiles were recorded


@dataclass(frozen=True)
class History:
    """What a profile's stored replies measured: `replies` of them, their mean completion and
    reasoning tokens, reply characters, the endpoint's prompt tokens per prompt character (None
    when no entry recorded its prompt's length) and the provider-cached share of prompt tokens."""

    replies: int
    completion_tokens: float
    reasoning_tokens: float
    reply_chars: float
    tokens_per_char: float | None
    cached_share: float


def profile_history(db: sqlite3.Connection, profile: Profile) -> History | None:
    """The stored replies of `profile` (None: none)."""
    found = profile_id(db, profile, create=False)
    if found is None:
        return None
    row = db.execute(
        "SELECT COUNT(*), AVG(r.completion_tokens), AVG(COALESCE(d.reasoning_tokens, 0)), "
        "AVG(LENGTH(r.text)), SUM(CASE WHEN d.prompt_chars > 0 THEN r.prompt_tokens END), "
        "SUM(CASE WHEN d.prompt_chars > 0 THEN d.prompt_chars END), SUM(r.prompt_tokens), "
        f"SUM(COALESCE(d.cached_prompt_tokens, 0)) {ENTRIES} WHERE d.profile = ?",
        (found,),
    ).fetchone()
    if not row[0]:
        return None
    count, completion, reasoning, chars, tokens_known, chars_known, prompt, cached = row
    return History(
        replies=count,
        completion_tokens=completion or 0.0,
        reasoning_tokens=reasoning or 0.0,
        reply_chars=chars or 0.0,
        tokens_per_char=tokens_known / chars_known if chars_known else None,
        cached_share=cached / prompt if prompt else 0.0,
    )


@dataclass(frozen=True)
class Group:
    """Entries of one profile (or of none: `UNKNOWN`)."""

    profile: int | None
    role: str
    name: str
    description: str
    entries: int
    bytes: int
    oldest: float
    newest: float


@dataclass(frozen=True)
class RunLookups:
    """One run's lookups: when, and its hits and misses."""

    started: float
    finished: float  # its last record of lookups (it may still be running)
    pid: int
    open: bool  # it had not closed the cache at its last record
    hits: int
    misses: int

    @property
    def hit_rate(self) -> float | None:
        total = self.hits + self.misses
        return self.hits / total if total else None


# every entry with what later versions record of it (`d.*` NULL for an older writer's)
ENTRIES = "FROM responses r LEFT JOIN entry_details d ON d.key = r.key"


class CacheUnusable(ValueError):
    """A cache directory that is not one (a file), or a read-only cache asked to change."""


def open_cache(directory: Path, write: bool | None = None) -> sqlite3.Connection | None:
    """The cache file in `directory`; None if there is none. `write` True: for changes
    (CacheUnusable for a cache this process may not write); False: read-only; None: upgraded
    to the current tables when this process may write it, else read-only. CacheUnusable when
    `directory` is a file."""
    problem = not_a_directory(directory)
    if problem is not None:
        raise CacheUnusable(problem)
    path = directory / CACHE_FILE
    if not path.is_file():
        return None
    may_write = writable(path)
    if write and not may_write:
        raise CacheUnusable(
            f"the response cache {path} is read-only for this user: nothing can be removed "
            "(without --yes the command only lists what it would remove, read-only)"
        )
    return open_database(path) if may_write and write is not False else open_read_only(path)


def _entry_bytes() -> str:
    return f"SUM(LENGTH(CAST(r.text AS BLOB)) + {ENTRY_OVERHEAD_BYTES})"


def groups(db: sqlite3.Connection, where: str = "1", args: tuple[object, ...] = ()) -> list[Group]:
    """Entries per profile matching the SQL condition `where` (on `ENTRIES`), largest first."""
    rows = db.execute(
        f"SELECT d.profile, p.role, p.name, p.endpoint, p.settings, COUNT(*), {_entry_bytes()}, "
        f"MIN(r.created), MAX(r.created) {ENTRIES} LEFT JOIN profiles p ON p.id = d.profile "
        f"WHERE {where} GROUP BY d.profile ORDER BY COUNT(*) DESC",
        args,
    ).fetchall()
    found = []
    for pid, role, name, endpoint, settings, entries, size, oldest, newest in rows:
        if role is None:
            description = f"{UNKNOWN} (stored before profiles were recorded)"
            role, name = UNKNOWN, UNKNOWN
        else:
            description = Profile(role, name, endpoint, json.loads(settings)).describe()
        found.append(
            Group(pid, role, name, description, entries, size or 0, oldest or 0, newest or 0)
        )
    return found


def last_runs(db: sqlite3.Connection, count: int = 5) -> list[RunLookups]:
    """The latest `count` runs that looked anything up, newest first."""
    rows = db.execute(
        "SELECT r.started, r.finished, r.pid, r.open, SUM(l.hits), SUM(l.misses) FROM runs r JOIN "
        "run_lookups l ON l.run = r.id GROUP BY r.id ORDER BY r.started DESC LIMIT ?",
        (count,),
    ).fetchall()
    return [RunLookups(s, f, pid, bool(o), h, m) for s, f, pid, o, h, m in rows]


def running_pids(db: sqlite3.Connection) -> list[int]:
    """The processes of this machine that have the cache open for a run now (recorded open,
    and the process is alive)."""
    pids = [row[0] for row in db.execute("SELECT DISTINCT pid FROM runs WHERE open = 1")]
    return [pid for pid in pids if pid and _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def known_names(db: sqlite3.Connection) -> list[str]:
    """The model and judge names with profiles in the file."""
    return [row[0] for row in db.execute("SELECT DISTINCT name FROM profiles ORDER BY name")]


@dataclass(frozen=True)
class Selection:
    """Which entries a prune removes: older than `older_than_s`, of the profiles named `name`
    (model or judge; `unknown`: entries without a profile), and then the oldest of the rest
    until what remains takes at most `max_bytes`. Unset criteria select everything."""

    older_than_s: float | None = None
    name: str | None = None
    role: str | None = None
    max_bytes: int | None = None


def selection_condition(
    db: sqlite3.Connection, selection: Selection, now: float
) -> tuple[str, tuple[object, ...]]:
    """The SQL condition (on `ENTRIES`: `responses r`, `entry_details d`) of `selection`'s
    entries. Raises ValueError for a name no profile has (naming the known ones)."""
    where: list[str] = ["1"]
    args: list[object] = []
    if selection.older_than_s is not None:
        where.append("r.created < ?")
        args.append(now - selection.older_than_s)
    if selection.name is not None:
        if selection.name == UNKNOWN:
            where.append("d.profile IS NULL")
        else:
            names = known_names(db)
            if selection.name not in names:
                raise ValueError(
                    f"no model or judge named {selection.name!r} in the cache; known: "
                    + (", ".join(names) or "none")
                    + f" (and {UNKNOWN!r} for entries stored before names were recorded)"
                )
            where.append("d.profile IN (SELECT id FROM profiles WHERE name = ?)")
            args.append(selection.name)
    if selection.role is not None:
        where.append("d.profile IN (SELECT id FROM profiles WHERE role = ?)")
        args.append(selection.role)
    if selection.max_bytes is not None:
        condition = " AND ".join(where)
        cutoff = _size_cutoff(db, condition, tuple(args), selection.max_bytes)
        if cutoff is None:
            return "0", ()
        where.append("r.created <= ?")
        args.append(cutoff)
    return " AND ".join(where), tuple(args)


def _size_cutoff(
    db: sqlite3.Connection, condition: str, args: tuple[object, ...], max_bytes: int
) -> float | None:
    """The newest `created` to remove so that, of the entries matching `condition`, the newest
    ones kept take at most `max_bytes`; None when they all fit."""
    kept = 0
    rows = db.execute(
        f"SELECT r.created, LENGTH(CAST(r.text AS BLOB)) + {ENTRY_OVERHEAD_BYTES} {ENTRIES} "
        f"WHERE {condition} ORDER BY r.created DESC",
        args,
    )
    for created, size in rows:
        kept += size
        if kept > max_bytes:
            return float(created)
    return None


def remove(db: sqlite3.Connection, where: str, args: tuple[object, ...]) -> int:
    """Delete the entries matching `where` (and their details), DELETE_BATCH per transaction;
    the number removed."""
    removed = 0
    while True:
        keys = [
            row[0]
            for row in db.execute(
                f"SELECT r.key {ENTRIES} WHERE {where} LIMIT {DELETE_BATCH}", args
            )
        ]
        if not keys:
            return removed
        marks = ",".join("?" * len(keys))
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(f"DELETE FROM responses WHERE key IN ({marks})", keys)
            db.execute(f"DELETE FROM entry_details WHERE key IN ({marks})", keys)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        removed += len(keys)
        if len(keys) < DELETE_BATCH:
            return removed


def forget_runs(db: sqlite3.Connection) -> None:
    """Drop the recorded runs and their lookups (`clear`); a run still going records the rest
    of its lookups under a run that `stats` no longer lists. Profiles stay: a running process
    keeps storing under its profile's id."""
    db.execute("DELETE FROM run_lookups")
    db.execute("DELETE FROM runs")


def vacuum(db: sqlite3.Connection) -> None:
    """Give the freed pages back to the disk. It holds the write lock while it copies the file:
    not while a run writes (`running_pids`), whose writes would wait for it."""
    db.execute("VACUUM")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def file_bytes(directory: Path) -> int:
    """The cache's size on disk: the file and its write-ahead log."""
    return sum(
        p.stat().st_size
        for p in (directory / CACHE_FILE, directory / f"{CACHE_FILE}-wal")
        if p.is_file()
    )
