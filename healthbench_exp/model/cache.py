"""The persistent response cache: every paid reply, stored once, so nothing is paid twice.

One SQLite file in WAL mode: each reply is one autocommitted row, so a process killed with -9
leaves no torn entry, and several processes (joblib jobs of one sweep) can share the file. The key
is a hash of the endpoint, every request parameter, the messages and a tag (rollout, attempt),
so a re-run of the same config is answered from the cache, a new judge re-uses every model reply,
and a new temperature re-samples.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from healthbench_exp.config.schema import ConfigError

log = logging.getLogger(__name__)

CACHE_FILE = "responses.sqlite"
DEFAULT_DIR = "~/.cache/healthbench_exp/cache"


def cache_dir(configured: str | None) -> Path:
    """`cache.dir`, else $HEALTHBENCH_CACHE_DIR, else ~/.cache/healthbench_exp/cache."""
    return Path(configured or os.environ.get("HEALTHBENCH_CACHE_DIR") or DEFAULT_DIR).expanduser()


def request_key(
    endpoint: str, params: dict[str, Any], messages: list[dict[str, str]], tag: str
) -> str:
    """sha256 of everything that determines a reply (the API key is not part of it).

    The messages are hashed as length-prefixed bytes rather than JSON-encoded: the same
    uniqueness for a fraction of the CPU (a grader prompt is several KB).
    """
    return RequestKeys(endpoint, params)(messages, tag)


class RequestKeys:
    """`request_key` for one endpoint's fixed identity and parameters: the JSON-encoded head
    (endpoint, parameters, tag) is hashed once per tag, then copied for every request."""

    def __init__(self, endpoint: str, params: dict[str, Any]) -> None:
        self.endpoint = endpoint
        self.params = params
        self.heads: dict[str, Any] = {}

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
    text: str
    prompt_tokens: int
    completion_tokens: int


class ResponseCache:
    def __init__(self, directory: Path) -> None:
        self.path = directory / CACHE_FILE
        self.unusable: str | None = None  # why the file is no longer used, once it failed
        self.memory: dict[str, CachedReply] = {}  # replies the file could not take
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self._set_up()
        except (sqlite3.Error, OSError) as exc:
            raise ConfigError(
                f"cannot use the response cache {self.path} ({exc}); move the file away, point "
                "cache.dir elsewhere, or set cache.enabled=false"
            ) from None

    def _set_up(self, patience_s: float = 60.0) -> None:
        """WAL mode and the table. Switching to WAL can answer "locked" at once, without the
        busy timeout, while another process opens the same new file: retry that for a while."""
        deadline = time.monotonic() + patience_s
        while True:
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.execute(
                    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT "
                    "NULL, prompt_tokens INTEGER, completion_tokens INTEGER, created REAL)"
                )
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def get(self, key: str) -> CachedReply | None:
        if self.unusable is not None:
            return self.memory.get(key)
        try:
            row = self.db.execute(
                "SELECT text, prompt_tokens, completion_tokens FROM responses WHERE key = ?",
                (key,),
            ).fetchone()
        except sqlite3.Error as exc:
            self._give_up(exc)
            return self.memory.get(key)
        return None if row is None else CachedReply(row[0], row[1] or 0, row[2] or 0)

    def put(self, key: str, reply: CachedReply) -> None:
        """Store a paid reply. If the file refuses it (disk full, damaged), the reply is kept in
        memory for the rest of the run and the file is no longer used (see `_give_up`)."""
        if self.unusable is None:
            try:
                self.db.execute(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                    (key, reply.text, reply.prompt_tokens, reply.completion_tokens, time.time()),
                )
                return
            except sqlite3.Error as exc:
                self._give_up(exc)
        self.memory[key] = reply

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
        return self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # a failed file has been reported already
            self.db.close()
