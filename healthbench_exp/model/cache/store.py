"""The persistent response cache: every paid reply, stored once, so nothing is paid twice.

One SQLite file in WAL mode: each reply is one autocommitted row, so a process killed with -9
leaves no torn entry, and several processes (joblib jobs of one sweep) can share the file; a key
one of them misses is claimed until its reply is committed (`lookup`, `model.cache.claims`), so
processes that miss it meanwhile wait and replay it rather than pay for it again. The key
is a hash of the endpoint, every request parameter, the messages and a tag (rollout, attempt),
so a re-run of the same config is answered from the cache, a new judge re-uses every model reply,
and a new temperature re-samples.

Each entry also names its *profile* (in `entry_details`; the `profiles` table: role, model name,
endpoint and the settings that change a reply's length: the request parameters and the system
message) and keeps the usage the endpoint reported (prompt, provider-cached prompt, completion
and reasoning tokens, and the prompt's length in characters): the dry run learns reply lengths
and tokens per character from them (`engine.estimate`). Each run records its lookups (hits and
misses per profile: the `runs` and `run_lookups` tables) for `python -m healthbench_exp.cache
stats`. The `responses` table is as its first version made it, so an older harness sharing the
file keeps working; its entries (and those stored before) have no profile ("unknown") and no
usage detail.
`model.cache.admin` reads and prunes the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from healthbench_exp.config.schema import ConfigError
from healthbench_exp.model.cache.claims import Claim, KeyClaims
from healthbench_exp.model.cache.database import (
    CACHE_FILE,
    directory_made,
    not_a_directory,
    open_database,
    open_read_only,
    writable,
)
from healthbench_exp.model.cache.profiles import Profile, profile_id
from healthbench_exp.model.reply_json import tokens

log = logging.getLogger(__name__)

DEFAULT_DIR = "~/.cache/healthbench_exp/cache"


def cache_dir(configured: str | None) -> Path:
    """`cache.dir`, else $HEALTHBENCH_CACHE_DIR, else ~/.cache/healthbench_exp/cache."""
    return Path(configured or os.environ.get("HEALTHBENCH_CACHE_DIR") or DEFAULT_DIR).expanduser()


def request_key(
    endpoint: str, params: Mapping[str, object], messages: list[dict[str, str]], tag: str
) -> str:
    """sha256 of everything that determines a reply (the API key is not part of it).

    The messages are hashed as length-prefixed bytes rather than JSON-encoded: the same
    uniqueness for a fraction of the CPU (a grader prompt is several KB).
    """
    return RequestKeys(endpoint, params)(messages, tag)


class RequestKeys:
    """`request_key` for one endpoint's fixed identity and parameters: the JSON-encoded head
    (endpoint, parameters, tag) is hashed once per tag, then copied for every request."""

    def __init__(self, endpoint: str, params: Mapping[str, object]) -> None:
        self.endpoint = endpoint
        self.params = params
        self.heads: dict[str, hashlib._Hash] = {}

    def __call__(self, messages: list[dict[str, str]], tag: str) -> str:
        head = self.heads.get(tag)
        if head is None:
            head = self.heads[tag] = hashlib.sha256(
                json.dumps([self.endpoint, self.params, tag], sort_keys=True).encode("utf-8")
            )
        digest = head.copy()
        for message in messages:
            for part in (message["role"], message["content"]):
                data = part.encode("utf-8")
                digest.update(b"%d:" % len(data))
                digest.update(data)
        return digest.hexdigest()


@dataclass(frozen=True)
class CachedReply:
    """A paid reply as the cache stores it: its text and the usage its endpoint reported.

    `prompt_chars`: the characters of the messages sent (None: not recorded, an older entry);
    with `prompt_tokens` it gives the endpoint's tokens per character."""

    text: str
    prompt_tokens: int
    completion_tokens: int  # reasoning tokens included
    reasoning_tokens: int = 0
    cached_prompt_tokens: int = 0  # served by the provider's prompt cache
    prompt_chars: int | None = None

    @classmethod
    def of(cls, text: str, usage: Mapping[str, object], prompt_chars: int | None) -> CachedReply:
        """The reply `text` with an OpenAI `usage` object (missing fields count 0)."""
        return cls(
            text,
            tokens(usage, "prompt_tokens"),
            tokens(usage, "completion_tokens"),
            tokens(usage, "reasoning_tokens", "completion_tokens_details"),
            tokens(usage, "cached_tokens", "prompt_tokens_details"),
            prompt_chars,
        )


def prompt_chars(messages: list[dict[str, str]]) -> int:
    """The characters of the messages' contents (what `CachedReply.prompt_chars` counts)."""
    return sum(len(m["content"]) for m in messages)


# The log is copied back into the file (a checkpoint: two fsyncs, which hold the event loop and
# every reply waiting on it for 10 to 70 ms) once it holds so many pages: SQLite's 1,000 meant a
# checkpoint every ~200 replies (about 70 in a 2,000-row run); this, one every ~1,600 replies,
# for at most 32 MB of log on disk.
CHECKPOINT_PAGES = 8192
LOOKUPS_FLUSH_EVERY = 2000  # a run's hit and miss counts are written after so many, and at close


class ResponseCache:
    """The cache file as one process uses it (see the module docstring).

    `record_run`: count this process's lookups as a run (`stats` shows the hit rate of the last
    runs); a dry run looks up without being one. `shared=False`: no other process opens this
    cache (a run's own call journal): keys are claimed within this process only."""

    def __init__(self, directory: Path, record_run: bool = True, shared: bool = True) -> None:
        self.path = directory / CACHE_FILE
        self.unusable: str | None = None  # why the file is no longer used, once it failed
        self.read_only = False  # a cache this process may not write: used for hits only
        self.memory: dict[str, CachedReply] = {}  # replies the file could not take
        self.run: int | None = None
        self.lookups: dict[int | None, list[int]] = {}  # profile: [hits, misses] not yet written
        self.unflushed = 0
        self.pending: dict[str, CachedReply] = {}  # stored but not yet committed (see `put`)
        self.batched = False  # the open transaction is committed by the event loop
        # taken on a miss (`lookup`), if the file is written
        self.claims = KeyClaims(directory, across_processes=shared)
        self.releasing: list[Claim] = []  # released once the open transaction is committed
        problem = not_a_directory(directory) or directory_made(directory)
        if problem is not None:
            raise ConfigError(
                f"cannot use the response cache: cache.dir {problem}; point cache.dir at a "
                "writable directory or set cache.enabled=false"
            )
        try:
            if writable(self.path):
                self.db = open_database(self.path)
                self.db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
            else:
                self._open_read_only()
                return
        except (sqlite3.Error, OSError) as exc:
            if "readonly" in str(exc).lower() or "read-only" in str(exc).lower():  # e.g. its fs
                self._open_read_only()
                return
            raise ConfigError(
                f"cannot use the response cache {self.path} ({exc}); move the file away, point "
                "cache.dir elsewhere, or set cache.enabled=false"
            ) from None
        if record_run:
            # a file that opens but fails on its first write (a damaged page) is set aside as it
            # would be mid-run: one warning, the run goes on without it
            now = time.time()
            try:
                self.run = self.db.execute(
                    "INSERT INTO runs (started, finished, pid) VALUES (?, ?, ?)",
                    (now, now, os.getpid()),
                ).lastrowid
            except sqlite3.Error as exc:
                self._give_up(exc)

    def _open_read_only(self) -> None:
        """Use a cache this process may not write for its hits only, saying so once: replies
        it has not got are paid and kept in memory for this run, stored nowhere."""
        self.read_only = True
        try:
            self.db = open_read_only(self.path)
            entries = f"{len(self):,} entries"
        except sqlite3.Error as exc:
            self.db = sqlite3.connect(":memory:")
            self.unusable = str(exc)
            entries = f"nothing to read: {exc}" if self.path.exists() else "no file yet"
        log.warning(
            "the response cache %s is read-only (%s): this run uses its replies but stores "
            "nothing new in it; point cache.dir at a writable directory to keep this run's",
            self.path,
            entries,
        )

    def profile(self, profile: Profile) -> int | None:
        """The id under which `profile`'s replies are stored (None once the file failed)."""
        if self.unusable is not None:
            return None
        try:
            return profile_id(self.db, profile, create=not self.read_only)
        except sqlite3.Error as exc:
            self._give_up(exc)
            return None

    def get(self, key: str, profile: int | None = None) -> CachedReply | None:
        """The stored reply for `key`, if any; counted as a hit or a miss of `profile`."""
        reply = self._lookup(key)
        counts = self.lookups.setdefault(profile, [0, 0])
        counts[0 if reply is not None else 1] += 1
        self.unflushed += 1
        if self.unflushed >= LOOKUPS_FLUSH_EVERY:
            self.flush_lookups()
        return reply

    async def lookup(self, key: str, profile: int | None = None) -> CachedReply | Claim | None:
        """The stored reply for `key` (as `get`), else its claim (`model.cache.claims`): send,
        `put` the reply, then `release` the claim. While another call of `key` (another process
        sharing the file, or this one) holds the claim, this waits; if that call stored its
        reply, it is returned, counted as a hit rather than a miss. None: the key is not claimed
        (the file is read-only, failed, or claims are off): send, and `put`."""
        reply = self.get(key, profile)
        if reply is not None or self.read_only or self.unusable is not None:
            return reply
        claimed = await self.claims.claim(key, lambda: self._lookup(key))
        if isinstance(claimed, CachedReply):
            counts = self.lookups.setdefault(profile, [0, 0])  # flushed meanwhile: a delta
            counts[0], counts[1] = counts[0] + 1, counts[1] - 1
        return claimed

    def release(self, claim: Claim) -> None:
        """Release a claim of `lookup` once the replies stored so far are committed (its own
        among them, if it was paid): at once, or at the commit of the open transaction."""
        if self.pending:
            self.releasing.append(claim)
        else:
            claim.release()

    def _lookup(self, key: str) -> CachedReply | None:
        if self.unusable is not None:
            return self.memory.get(key)
        try:
            row = self.db.execute(
                "SELECT r.text, r.prompt_tokens, r.completion_tokens, d.reasoning_tokens, "
                "d.cached_prompt_tokens, d.prompt_chars FROM responses r LEFT JOIN "
                "entry_details d ON d.key = r.key WHERE r.key = ?",
                (key,),
            ).fetchone()
        except sqlite3.Error as exc:
            self._give_up(exc)
            return self.memory.get(key)
        if row is None:
            return self.memory.get(key)  # a read-only cache's replies of this run
        return CachedReply(row[0], row[1] or 0, row[2] or 0, row[3] or 0, row[4] or 0, row[5])

    def put(self, key: str, reply: CachedReply, profile: int | None = None) -> None:
        """Store a paid reply of `profile`. If the file refuses it (disk full, damaged), the
        reply is kept in memory for the rest of the run and the file is no longer used (see
        `_give_up`); a read-only cache keeps it in memory.

        In the event loop, the replies stored in one pass of the loop are committed together at
        its end (`commit`), before it next waits for the network: one transaction instead of
        one per reply (it was the harness's largest own cost per request), and a process killed
        with -9 still loses no reply it had before its last wait. Outside a loop, at once."""
        if self.unusable is None and not self.read_only:
            try:
                if not self.db.in_transaction:
                    self.db.execute("BEGIN")
                    self.batched = self._commit_soon()
                self.pending[key] = reply
                self.db.execute(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                    (key, reply.text, reply.prompt_tokens, reply.completion_tokens, time.time()),
                )
                details = (reply.reasoning_tokens, reply.cached_prompt_tokens, reply.prompt_chars)
                self.db.execute(
                    "INSERT OR REPLACE INTO entry_details VALUES (?, ?, ?, ?, ?)",
                    (key, profile, *details),
                )
                if not self.batched:
                    self.commit()
                return
            except sqlite3.Error as exc:
                self._failed(exc)
        self.memory[key] = reply

    def _commit_soon(self) -> bool:
        """Commit at the end of the event loop's pass (False: no loop runs)."""
        try:
            asyncio.get_running_loop().call_soon(self.commit)
        except RuntimeError:  # no event loop: each reply is its own transaction
            return False
        return True

    def commit(self) -> None:
        """Commit the replies stored since the last commit (see `put`), then release the claims
        waiting on it (`release`)."""
        if self.pending:
            try:
                if self.unusable is None and self.db.in_transaction:
                    self.db.execute("COMMIT")
                self.pending.clear()
            except sqlite3.Error as exc:
                self._failed(exc)
        releasing, self.releasing = self.releasing, []
        for claim in releasing:
            claim.release()

    def _failed(self, error: sqlite3.Error) -> None:
        """A write or commit failed: roll back, keep the uncommitted replies in memory, give up
        the file."""
        with contextlib.suppress(sqlite3.Error):
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
        self.memory.update(self.pending)
        self.pending.clear()
        self._give_up(error)

    def flush_lookups(self, closing: bool = False) -> None:
        """Add the lookups counted since the last flush to this run's record, and mark it
        closed when `closing` (a failure to write them only warns: they are statistics)."""
        self.commit()  # the replies first: the lookups are written in a transaction of their own
        pending, self.lookups, self.unflushed = self.lookups, {}, 0
        if self.run is None or self.unusable is not None or not (pending or closing):
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for profile, (hits, misses) in pending.items():
                    self.db.execute(
                        "INSERT INTO run_lookups VALUES (?, ?, ?, ?) ON CONFLICT (run, profile) "
                        "DO UPDATE SET hits = hits + excluded.hits, "
                        "misses = misses + excluded.misses",
                        (self.run, profile or 0, hits, misses),
                    )
                self.db.execute(
                    "UPDATE runs SET finished = ?, open = ? WHERE id = ?",
                    (time.time(), 0 if closing else 1, self.run),
                )
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            log.warning("could not record this run's cache hits in %s (%s)", self.path, exc)

    def _give_up(self, error: sqlite3.Error) -> None:
        """Stop using a cache file that failed mid-run (a full disk, a damaged page), warning
        once: the run goes on, its replies are still used and written to the run's outputs,
        but are neither stored for a resume nor answered from earlier runs."""
        self.unusable = str(error)
        if "full" in self.unusable:
            fix = "free space on its disk or point cache.dir elsewhere"
        else:
            fix = "move the file away (the next run starts a new one) or point cache.dir elsewhere"
        log.warning(
            "the response cache %s failed (%s): this run goes on without it (its replies are "
            "kept in memory, not stored for a resume); %s",
            self.path,
            error,
            fix,
        )

    def __len__(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # a failed file has been reported already
            self.flush_lookups(closing=True)
            self.db.close()
        self.claims.release_all()
