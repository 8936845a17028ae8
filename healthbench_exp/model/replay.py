"""One call's way through the response cache, the same for the direct endpoint and the batch
judge: replay the reply stored under its key, or claim the key until the reply paid for now is
stored (`ResponseCache.lookup`: another process sharing the cache that misses the same key
meanwhile waits for it, and replays it)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from healthbench_exp.core.completer import Reply
from healthbench_exp.model.cache import CachedReply, Claim, ResponseCache
from healthbench_exp.model.endpoint_stats import EndpointStats


@contextlib.asynccontextmanager
async def replay_or_claim(
    cache: ResponseCache | None, key: str, profile: int | None, stats: EndpointStats
) -> AsyncIterator[Reply | None]:
    """Inside: the stored reply of `key` (replayed: counted in `stats`' cache hits and replayed
    tokens), or None, the key then claimed (when the cache holds a claim for it) until the
    block ends, by which the caller has stored the reply it paid for (or failed). No cache:
    None, nothing claimed."""
    found = await cache.lookup(key, profile) if cache is not None else None
    if isinstance(found, CachedReply):
        stats.cache_hits += 1
        stats.replayed_prompt_tokens += found.prompt_tokens
        stats.replayed_completion_tokens += found.completion_tokens
        yield Reply(found.text, found.prompt_tokens, found.completion_tokens, True)
        return
    try:
        yield None
    finally:
        if cache is not None and isinstance(found, Claim):
            cache.release(found)  # once its reply is committed
