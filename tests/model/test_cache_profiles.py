"""A cache profile is one model's: two models alike in role, endpoint and settings are filed
apart, and a file written before the name was part of a profile's identity is upgraded in place
without losing an entry (issue 45, item 1)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from healthbench_exp.model.cache import CachedReply, Profile, ResponseCache
from healthbench_exp.model.cache.admin import (
    Selection,
    groups,
    last_runs,
    open_cache,
    profile_history,
    selection_condition,
)
from healthbench_exp.model.cache.commands import prune, stats
from healthbench_exp.model.cache.database import upgrade_profiles

ENDPOINT = "https://api.example/v1"
SETTINGS = {"temperature": 0.5, "max_tokens": 2048}


def judge(name: str) -> Profile:
    return Profile.of("judge", ENDPOINT, {"model": name, **SETTINGS}, "You are a grader.")


def test_two_models_alike_in_all_else_are_two_profiles(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    first, second = cache.profile(judge("gpt41")), cache.profile(judge("gpt41mini"))
    assert first is not None and second is not None and first != second
    assert cache.profile(judge("gpt41")) == first  # registered once
    for i in range(3):
        cache.put(f"a{i}", CachedReply("yes", 100, 10, prompt_chars=400), first)
    cache.put("b0", CachedReply("no", 50, 2, prompt_chars=200), second)
    cache.close()
    db = open_cache(tmp_path)
    assert db is not None
    assert {g.name: g.entries for g in groups(db)} == {"gpt41": 3, "gpt41mini": 1}
    a, b = profile_history(db, judge("gpt41")), profile_history(db, judge("gpt41mini"))
    assert a is not None and (a.replies, a.completion_tokens) == (3, 10)
    assert b is not None and (b.replies, b.completion_tokens) == (1, 2)
    assert profile_history(db, judge("gpt54")) is None  # a third model has no history
    where, args = selection_condition(db, Selection(name="gpt41mini"), now=0.0)
    assert [(g.name, g.entries) for g in groups(db, where, args)] == [("gpt41mini", 1)]
    db.close()


# The cache file as the harness wrote it before the model's name was part of a profile's key
# (its SCHEMA, statement for statement): the `profiles` table is UNIQUE on role, endpoint and
# settings, so a second judge alike in all but its name was filed under the first one's profile.
OLD_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, "
    "prompt_tokens INTEGER, completion_tokens INTEGER, created REAL)",
    "CREATE TABLE IF NOT EXISTS entry_details (key TEXT PRIMARY KEY, profile INTEGER, "
    "reasoning_tokens INTEGER, cached_prompt_tokens INTEGER, prompt_chars INTEGER)",
    "CREATE TABLE IF NOT EXISTS profiles (id INTEGER PRIMARY KEY, role TEXT NOT NULL, name TEXT "
    "NOT NULL, endpoint TEXT NOT NULL, settings TEXT NOT NULL, UNIQUE (role, endpoint, settings))",
    "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, started REAL, finished REAL, "
    "pid INTEGER, open INTEGER NOT NULL DEFAULT 1)",
    "CREATE TABLE IF NOT EXISTS run_lookups (run INTEGER NOT NULL, profile INTEGER NOT NULL, "
    "hits INTEGER NOT NULL, misses INTEGER NOT NULL, PRIMARY KEY (run, profile))",
)
# what the old harness's `profile_id` asked: an older version sharing the file still does
OLD_QUERY = "SELECT id FROM profiles WHERE role = ? AND endpoint = ? AND settings = ?"
OLD_INSERT = "INSERT OR IGNORE INTO profiles (role, name, endpoint, settings) VALUES (?, ?, ?, ?)"

# key: (text, prompt, completion, reasoning, cached prompt, prompt chars, profile id or None)
OLD_ENTRIES: dict[str, tuple[str, int, int, int, int, int | None, int | None]] = {
    "a1": ("judge a's first", 900, 30, 4, 100, 3600, 1),
    "a2": ("judge a's second", 800, 20, 0, 0, 3200, 1),
    "b1": ("judge b's, filed under a", 700, 40, 0, 0, 2800, 1),
    "m1": ("the model's", 60, 50, 0, 0, 240, 2),
    "first": ("stored before profiles were recorded", 5, 5, 0, 0, None, None),
}


def old_cache_file(directory: Path) -> Path:
    """A cache file as the old harness left it after a judge `a` run, a judge `b` run at the same
    endpoint with the same settings (filed under `a`), and the model's."""
    path = directory / "responses.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    for statement in OLD_SCHEMA:
        db.execute(statement)
    a = judge("a")
    db.execute(OLD_INSERT, (a.role, a.name, a.endpoint, a.settings_json))
    model = Profile.of("model", ENDPOINT, {"model": "m"}, None)
    db.execute(OLD_INSERT, (model.role, model.name, model.endpoint, model.settings_json))
    b = judge("b")  # the old harness found a's profile for b, and inserted nothing
    assert db.execute(OLD_QUERY, (b.role, b.endpoint, b.settings_json)).fetchone() == (1,)
    for created, (key, entry) in enumerate(OLD_ENTRIES.items()):
        text, prompt, completion, reasoning, cached, chars, profile = entry
        db.execute("INSERT INTO responses VALUES (?, ?, ?, ?, ?)", (key, text, prompt, completion,
                                                                    1000.0 + created))  # fmt: skip
        if profile is not None:
            db.execute("INSERT INTO entry_details VALUES (?, ?, ?, ?, ?)",
                       (key, profile, reasoning, cached, chars))  # fmt: skip
    db.execute("INSERT INTO runs VALUES (1, 1000.0, 1010.0, 4242, 0)")
    db.execute("INSERT INTO run_lookups VALUES (1, 1, 0, 3), (1, 2, 1, 0)")
    db.close()
    return path


def test_an_old_format_file_is_upgraded_in_place_without_losing_an_entry(tmp_path: Path) -> None:
    path = old_cache_file(tmp_path)
    cache = ResponseCache(tmp_path)  # opening it for a run upgrades it
    with sqlite3.connect(path) as db:
        (table,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'profiles'").fetchone()
    assert "UNIQUE (role, name, endpoint, settings)" in table
    # every entry is there, with its usage and details, and answers its lookup as before
    assert len(cache) == len(OLD_ENTRIES)
    for key, (text, prompt, completion, reasoning, cached, chars, profile) in OLD_ENTRIES.items():
        expected = CachedReply(text, prompt, completion, reasoning, cached, chars)
        assert cache.get(key, profile) == expected, key
    # the profiles keep their ids, and a second judge alike in all but its name gets its own
    assert cache.profile(judge("a")) == 1
    assert cache.profile(Profile.of("model", ENDPOINT, {"model": "m"}, None)) == 2
    b = cache.profile(judge("b"))
    assert b not in (None, 1, 2)
    cache.put("b2", CachedReply("judge b's own", 600, 10, prompt_chars=2400), b)
    cache.close()
    db = open_cache(tmp_path)
    assert db is not None
    # what the old harness filed under a stays a's (nothing says which judge wrote it); b's
    # later entries are b's
    assert {g.name: g.entries for g in groups(db)} == {"a": 3, "b": 1, "m": 1, "unknown": 1}
    history = profile_history(db, judge("a"))
    assert history is not None and history.replies == 3 and history.reasoning_tokens == 4 / 3
    runs = last_runs(db, count=10)  # the old run's lookups, and this one's
    assert [(r.pid, r.hits, r.misses) for r in runs][-1] == (4242, 1, 3)
    # an older harness sharing the file still finds a profile for its judges and can add one
    c = judge("c")
    assert db.execute(OLD_QUERY, (c.role, c.endpoint, c.settings_json)).fetchone() is not None
    db.execute(OLD_INSERT, (c.role, c.name, c.endpoint, c.settings_json))
    assert not upgrade_profiles(db)  # upgraded once
    db.close()
    # stats and prune on the upgraded file: b's entries go, a's and the rest stay
    shown = "\n".join(stats(tmp_path))
    assert f"{len(OLD_ENTRIES) + 1} entries" in shown and "judge b at" in shown
    removed = prune(tmp_path, Selection(name="b"), yes=True)
    assert removed[0].startswith("removed 1 entries")
    db = open_cache(tmp_path)
    assert db is not None
    assert {g.name: g.entries for g in groups(db)} == {"a": 3, "m": 1, "unknown": 1}
    db.close()


def test_a_read_only_old_format_file_is_read_as_it_is(tmp_path: Path) -> None:
    old_cache_file(tmp_path)
    db = open_cache(tmp_path, write=False)  # a shared, read-only copy: not upgraded
    assert db is not None
    assert {g.name: g.entries for g in groups(db)} == {"a": 3, "m": 1, "unknown": 1}
    history = profile_history(db, judge("a"))
    assert history is not None and history.replies == 3
    (table,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'profiles'").fetchone()
    assert "UNIQUE (role, endpoint, settings)" in table
    db.close()
