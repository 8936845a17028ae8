"""An endpoint's in-flight limit, adapted to rate limiting (AIMD: `AdaptiveLimit`), and how
many requests start in one turn of the event loop (`LoopTurns`)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable


class AdaptiveLimit:
    """At most `limit` requests in flight, adapted to rate limiting (AIMD).

    A 429 answer halves the limit (at most once per `cooldown_s` of `clock`, the run's, so one
    burst counts once); every `limit` successes raise it by one, back up to `maximum`. Waiters
    queue first in, first out; every operation is O(1), with no wake-ups of waiters that cannot
    proceed.
    """

    def __init__(self, maximum: int, clock: Callable[[], float], cooldown_s: float = 1.0) -> None:
        self.clock = clock
        self.maximum = self.limit = self.lowest = maximum
        self.cooldown_s = cooldown_s
        self.in_use = 0
        self.successes = 0
        self.last_cut = float("-inf")
        self.waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self.in_use < self.limit and not self.waiters:
            self.in_use += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await waiter  # _wake counts this request in before resolving it
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(success=False)  # woken, then cancelled: give the slot back
            elif waiter in self.waiters:  # not when _wake already dropped it as cancelled
                self.waiters.remove(waiter)
            raise

    def release(self, success: bool) -> None:
        self.in_use -= 1
        if success and self.limit < self.maximum:
            self.successes += 1
            if self.successes >= self.limit:
                self.successes = 0
                self.limit += 1
        self._wake()

    def _wake(self) -> None:
        while self.waiters and self.in_use < self.limit:
            waiter = self.waiters.popleft()
            if not waiter.done():
                self.in_use += 1
                waiter.set_result(None)

    def rate_limited(self) -> None:
        now = self.clock()
        if now - self.last_cut >= self.cooldown_s:
            self.last_cut = now
            self.limit = max(1, self.limit // 2)
            self.lowest = min(self.lowest, self.limit)
            self.successes = 0


PER_TURN = 16  # requests that start per turn of the event loop (see `LoopTurns`)


class LoopTurns:
    """At most `per_turn` requests start in one turn of the event loop, first come first served;
    the others start in the next turns, each after the loop has polled its sockets.

    Started together, the hundreds of judge calls that the first model replies release would
    each build its request and begin opening a connection in one turn of the loop, and none
    would reach the server until all had: at about 2 ms a request, 0.4 s in which a
    rate-limited server's full bucket refilled for nothing (2% of the limit in a 16-second
    run). A few per turn, the first are on the wire while the later ones are being built;
    the loop's work is the same. Shared by the endpoints of a run (one loop)."""

    def __init__(self, per_turn: int = PER_TURN) -> None:
        self.per_turn = per_turn
        self.started = 0  # requests started in this turn
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.next_turn: asyncio.TimerHandle | None = None

    async def wait(self) -> None:
        """Return when this request may start: at once while this turn has room."""
        if not self.waiters and self.started < self.per_turn:
            self.started += 1
            self._schedule()
            return
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        self._schedule()
        await waiter  # cancelled: `_turn` skips it

    def _schedule(self) -> None:
        if self.next_turn is None:  # after the loop's next poll of its sockets
            self.next_turn = asyncio.get_running_loop().call_later(0.0, self._turn)

    def _turn(self) -> None:
        self.next_turn = None
        self.started = 0
        while self.waiters and self.started < self.per_turn:
            waiter = self.waiters.popleft()
            if not waiter.done():
                self.started += 1
                waiter.set_result(None)
        if self.started:
            self._schedule()
