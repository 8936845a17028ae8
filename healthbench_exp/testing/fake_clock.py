"""A fake monotonic clock for the pacer's tests (`model.clock.Clock`): time moves only when the
test says (`advance`), and every sleep on it ends, in deadline order, as time passes its end;
nothing waits on the wall clock."""

from __future__ import annotations

import asyncio
import heapq
import itertools

from healthbench_exp.model.clock import Clock

SETTLE_TURNS = 40  # turns of the event loop that let every woken task run to its next wait


class FakeClock:
    """Seconds from `start`, moved by `advance`; `clock` is the `Clock` to inject."""

    def __init__(self, start: float = 1000.0) -> None:
        self.time = start
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.clock = Clock(self.now, self.sleep)

    def now(self) -> float:
        return self.time

    async def sleep(self, delay: float) -> None:
        """Until `advance` moves the time `delay` seconds past now (at once for 0 or less)."""
        waiter = asyncio.get_running_loop().create_future()
        heapq.heappush(self._timers, (self.time + max(0.0, delay), next(self._order), waiter))
        await waiter

    @staticmethod
    async def settle() -> None:
        """Let every task that can run, run (turns of the loop, no time passes)."""
        for _ in range(SETTLE_TURNS):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        """Move the time `seconds` on, ending each sleep at its own deadline, in order, and
        letting what it wakes run before the next."""
        until = self.time + seconds
        await self.settle()
        while self._timers and self._timers[0][0] <= until:
            deadline, _, waiter = heapq.heappop(self._timers)
            self.time = max(self.time, deadline)
            if not waiter.done():
                waiter.set_result(None)
            await self.settle()
        self.time = until
        await self.settle()
