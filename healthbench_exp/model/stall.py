"""A silent endpoint is visible: a notice when requests wait and no reply has come for a while.

An endpoint that accepts connections and never answers would otherwise print nothing until its
requests time out (`runner.request_timeout_s`, then the client's retries). While a run
evaluates, `watch_endpoints` checks every endpoint about once a second: when requests are in
flight to it and none of its replies (of any HTTP status) has arrived for
`runner.stall_notice_s`, it logs one line naming the endpoint and how many requests wait, and
repeats it every `stall_notice_s` while the silence lasts. The same tick refreshes the progress
line, so a rate-limit wait shows while nothing finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Protocol

from healthbench_exp.model.clock import Clock

log = logging.getLogger(__name__)


class Watched(Protocol):
    """What the watch needs of an endpoint (endpoints.ChatEndpoint)."""

    role: str
    url: str
    timeout_s: float

    def silent_for(self, now: float) -> float | None: ...


def stall_notices(
    endpoints: Sequence[Watched], stall_notice_s: float, noticed: dict[str, float], now: float
) -> list[str]:
    """The notices due at `now`; `noticed` holds when each role was last reported."""
    notices = []
    for endpoint in endpoints:
        silent = endpoint.silent_for(now)
        if silent is None or silent < stall_notice_s:
            noticed.pop(endpoint.role, None)
            continue
        if now - noticed.get(endpoint.role, float("-inf")) < stall_notice_s:
            continue
        noticed[endpoint.role] = now
        waiting = getattr(getattr(endpoint, "stats", None), "in_flight", 0)
        notices.append(
            f"no reply from the {endpoint.role} endpoint {endpoint.url} for {silent:.0f} s; "
            f"{waiting} requests waiting (each times out after {endpoint.timeout_s:g} s, "
            "runner.request_timeout_s, then is retried up to runner.max_retries times)"
        )
    return notices


async def _watch(
    endpoints: Sequence[Watched],
    stall_notice_s: float,
    on_tick: Callable[[], None],
    clock: Clock,
) -> None:
    noticed: dict[str, float] = {}
    tick = min(1.0, stall_notice_s / 2)
    while True:
        await clock.sleep(tick)
        for notice in stall_notices(endpoints, stall_notice_s, noticed, clock.now()):
            log.warning("%s", notice)
        on_tick()


@contextlib.asynccontextmanager
async def watch_endpoints(
    endpoints: Sequence[Watched],
    stall_notice_s: float,
    on_tick: Callable[[], None],
    clock: Clock,
) -> AsyncIterator[None]:
    """Watch `endpoints` for silence (and call `on_tick` about once a second of `clock`, the
    run's: the endpoints' silences are read on it) while inside."""
    task = asyncio.create_task(_watch(endpoints, stall_notice_s, on_tick, clock))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
