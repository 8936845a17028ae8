"""The response cache commits the replies of one pass of the event loop together, at its end."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from healthbench_exp.model.cache import CACHE_FILE, CachedReply, ResponseCache
from healthbench_exp.model.cache.store import CHECKPOINT_PAGES


def stored(directory: Path) -> int:
    """The replies another process would see in the file."""
    with sqlite3.connect(directory / CACHE_FILE) as other:
        return int(other.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def test_replies_of_one_loop_pass_are_committed_together(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)

    async def replies() -> tuple[int, int, CachedReply | None]:
        for i in range(3):
            cache.put(f"key-{i}", CachedReply(f"reply {i}", 10, 2, prompt_chars=40))
        before = stored(tmp_path)  # still this pass: not yet committed
        await asyncio.sleep(0)  # the loop's next pass begins with the commit
        return before, stored(tmp_path), cache.get("key-1")

    before, after, hit = asyncio.run(replies())
    assert (before, after) == (0, 3)
    assert hit is not None and hit.text == "reply 1" and hit.prompt_chars == 40
    cache.put("outside", CachedReply("no loop", 1, 1))  # no event loop: committed at once
    assert stored(tmp_path) == 4
    cache.close()
    assert ResponseCache(tmp_path).get("outside") == CachedReply("no loop", 1, 1)


def test_the_log_is_checkpointed_after_so_many_pages_and_stays_bounded(tmp_path: Path) -> None:
    """The write-ahead log is copied back into the file once it holds CHECKPOINT_PAGES pages
    (not SQLite's 1,000: each checkpoint held the event loop), then written from its start
    again: it never grows much past that, and every committed reply stays readable."""
    cache = ResponseCache(tmp_path)
    log = tmp_path / (CACHE_FILE + "-wal")

    async def replies() -> int:
        largest = 0
        for i in range(2500):  # one reply per pass: one commit each, several pages each
            cache.put(f"key-{i:05d}", CachedReply("x" * 200, 10, 2))
            await asyncio.sleep(0)
            largest = max(largest, log.stat().st_size)
        return largest

    largest = asyncio.run(replies())
    pages = largest // 4096
    assert CHECKPOINT_PAGES * 0.9 < pages < CHECKPOINT_PAGES * 1.1, pages  # at the threshold
    assert stored(tmp_path) == 2500
    cache.close()
