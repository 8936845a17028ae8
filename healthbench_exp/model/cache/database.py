"""Opening the response cache's SQLite file: for writing (created or upgraded to the current
tables, in WAL mode), or read-only, for a cache this process may not write (a shared, read-only
copy, as clusters often have).

A read-only open first asks SQLite for `mode=ro`; a file in WAL mode in a directory this
process cannot write (SQLite cannot make its `-shm` index there) is then opened `immutable=1`:
read as it is, which is what a read-only copy is.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

CACHE_FILE = "responses.sqlite"  # the cache file, in the cache directory (`cache_dir`)
CALL_JOURNAL = ".calls"  # a run's own response cache when `cache.enabled=false` (model.roles)


def discard_call_journal(output_dir: Path) -> None:
    """Remove a completed run's call journal: its replies are all in the run's records."""
    shutil.rmtree(output_dir / CALL_JOURNAL, ignore_errors=True)


# A profile is one model's (`name`) calls in one role at one endpoint with one set of settings.
# Files written before the name was part of its identity have `UNIQUE (role, endpoint, settings)`:
# two models alike in all else shared one profile, under the first one's name. `upgrade_profiles`
# rebuilds that table with the name in its key, keeping every id (so every entry's profile).
PROFILES = (
    "CREATE TABLE IF NOT EXISTS {table} (id INTEGER PRIMARY KEY, role TEXT NOT NULL, name TEXT "
    "NOT NULL, endpoint TEXT NOT NULL, settings TEXT NOT NULL, UNIQUE (role, name, endpoint, "
    "settings))"
)
PROFILES_KEY = "UNIQUE (role, name, endpoint, settings)"

# `responses` keeps its first version's five columns, so that an older harness sharing the
# file still writes to it; what later versions record of an entry is in `entry_details`
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
    "prompt_tokens INTEGER, completion_tokens INTEGER, created REAL)",
    "CREATE TABLE IF NOT EXISTS entry_details (key TEXT PRIMARY KEY, profile INTEGER, "
    "reasoning_tokens INTEGER, cached_prompt_tokens INTEGER, prompt_chars INTEGER)",
    PROFILES.format(table="profiles"),
    # a run's process, and `open` 1 until it closes the cache (a killed one never does)
    "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, started REAL, finished REAL, "
    "pid INTEGER, open INTEGER NOT NULL DEFAULT 1)",
    # profile 0: lookups of callers that name no profile
    "CREATE TABLE IF NOT EXISTS run_lookups (run INTEGER NOT NULL, profile INTEGER NOT NULL, "
    "hits INTEGER NOT NULL, misses INTEGER NOT NULL, PRIMARY KEY (run, profile))",
)  # no index beyond the keys: each would slow every write; `stats` and `prune` scan


def open_database(path: Path, patience_s: float = 60.0) -> sqlite3.Connection:
    """The cache file at `path`, created or upgraded to the current tables, in WAL mode.

    The set-up is one write transaction, so processes opening the same file at once do it once;
    switching to WAL can answer "locked" at once, without the busy timeout, while another
    process opens the same new file: that is retried for `patience_s`."""
    db = sqlite3.connect(path, timeout=patience_s, isolation_level=None)
    deadline = time.monotonic() + patience_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("BEGIN IMMEDIATE")
            try:
                for statement in SCHEMA:
                    db.execute(statement)
                upgrade_profiles(db)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return db
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                db.close()
                raise
            time.sleep(0.05)


def upgrade_profiles(db: sqlite3.Connection) -> bool:
    """Give an older file's `profiles` the model's name in its key (see `PROFILES`), in the
    caller's transaction; True if it was upgraded. Rows and ids are kept as they are: entries
    that two models shared under one profile stay under its (first) name, since nothing in the
    file says which model stored them; every later entry goes to its own model's profile."""
    row = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'profiles'")
    found = row.fetchone()
    if found is None or PROFILES_KEY in found[0]:
        return False
    db.execute(PROFILES.format(table="profiles_by_name"))
    db.execute(
        "INSERT INTO profiles_by_name (id, role, name, endpoint, settings) "
        "SELECT id, role, name, endpoint, settings FROM profiles"
    )
    db.execute("DROP TABLE profiles")
    db.execute("ALTER TABLE profiles_by_name RENAME TO profiles")
    return True


def open_read_only(path: Path) -> sqlite3.Connection:
    """The cache file at `path` for reading only (`mode=ro`, else `immutable=1`; see the module
    docstring); sqlite3.Error when it cannot be read."""
    uri = path.resolve().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=60.0)  # no file: raises here
    try:
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        db.close()
    db = sqlite3.connect(f"{uri}?immutable=1", uri=True)
    db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    return db


def writable(path: Path) -> bool:
    """Whether this process may write the cache file `path` (and its directory, where SQLite
    keeps the write-ahead log): the file system's answer for this process's user."""
    if path.exists() and not os.access(path, os.W_OK):
        return False
    directory = path.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent  # a directory yet to be made: its first existing parent's
    return os.access(directory, os.W_OK | os.X_OK)


def not_a_directory(directory: Path) -> str | None:
    """What is wrong with `directory` as the cache directory (a file, or under one), or None."""
    for part in (directory, *directory.parents):
        if not part.exists():
            continue
        if part.is_dir():
            return None
        if part != directory:
            return f"{directory} is under {part}, a file, not a directory"
        hint = f" ({directory.parent} holds it)" if directory.name == "responses.sqlite" else ""
        return (
            f"{directory} is a file, not a directory; the cache directory is the one that "
            f"holds responses.sqlite{hint}"
        )
    return None


def directory_made(directory: Path) -> str | None:
    """Make the cache directory `directory` (with its parents) if it is missing; None once it
    exists, else why it cannot be made (a read-only mount, a parent this user may not write)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"{directory} cannot be created ({exc.strerror or exc})"
    return None
