"""A dead endpoint ends the run in minutes: one that answers nothing usable is given up on.

An endpoint that fails every call (HTTP 500/503, timeouts, a third of them 429s) would otherwise
be retried at an ever slower pace for hours: rate-limit 429s are waited out without a bound, and
every row has its own calls to fail. `EndpointHealth` watches one endpoint's calls as the run
makes them (`guard`) and declares it dead when

- none of its first `dead_after_calls` answers was a success (failed calls, and 429 answers,
  counted together: `runner.dead_endpoint_calls`), or
- it has failed since its last success (or its first call) and `dead_after_s` seconds have
  passed without a success (`runner.dead_endpoint_s`; checked on every failure and about once a
  second by the loop's watch).

A rate-limited endpoint that also answers is never dead: each success starts both counts
afresh. Calls answered from the response cache count neither way. Once dead, every call waiting
on it (in flight, retrying, or paced behind a 429) ends at once with `EndpointStopped`, which is
a `BudgetExhausted`: its row ends `not run`, recorded with what it had (a model reply paid
for), so a resume finishes it and pays nothing twice. The engine then ends the run with the
reason (`reason`): the endpoint, what it answered, its last errors.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from healthbench_exp.core.completer import Completer, Reply
from healthbench_exp.core.endpoint_errors import BudgetExhausted, RequestFailed

T = TypeVar("T")
LAST_ERRORS = 3
ERROR_CHARS = 160


class EndpointStopped(BudgetExhausted):
    """The endpoint was declared dead (see the module docstring): this call was not finished."""


class Counted(Protocol):
    """What the watch reads of an endpoint's counters (`limits.EndpointStats`)."""

    rate_limited: int


class EndpointHealth:
    """One endpoint's successes and failures as the run sees them; dead once it answers nothing.

    `dead_after_calls` / `dead_after_s`: 0 never (see the module docstring)."""

    def __init__(
        self,
        role: str,
        url: str,
        stats: Counted,
        dead_after_calls: int,
        dead_after_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.role, self.url, self.stats = role, url, stats
        self.dead_after_calls, self.dead_after_s = dead_after_calls, dead_after_s
        self.clock = clock
        self.successes = 0
        self.failures = 0  # failed calls since the last success
        self.rate_limited_before = 0  # 429s seen up to the last success
        self.since: float | None = None  # the last success, else the first call
        self.last_errors: deque[str] = deque(maxlen=LAST_ERRORS)
        self.dead = False
        self.why = ""
        # the tasks awaiting a call to it (see `guard`), and those `_stop` cancelled
        self.pending: set[asyncio.Task[object]] = set()
        self.stopped: set[asyncio.Task[object]] = set()

    def answers_without_success(self) -> int:
        return self.failures + self.stats.rate_limited - self.rate_limited_before

    def succeeded(self) -> None:
        self.successes += 1
        self.failures = 0
        self.rate_limited_before = self.stats.rate_limited
        self.since = self.clock()

    def failed(self, error: BaseException) -> None:
        self.failures += 1
        text = str(error)[:ERROR_CHARS]
        if text in self.last_errors:  # the last distinct ones
            self.last_errors.remove(text)
        self.last_errors.append(text)
        self.check()

    def check(self) -> bool:
        """Whether the endpoint is dead (declared so now if it just became so)."""
        if self.dead:
            return True
        answers = self.answers_without_success()
        if not self.successes and self.dead_after_calls and answers >= self.dead_after_calls:
            self._stop(f"none of its first {answers} answers was a success")
        elif (
            self.dead_after_s
            and answers
            and self.since is not None
            and self.clock() - self.since >= self.dead_after_s
        ):
            since = "its last success" if self.successes else "its first call"
            self._stop(f"no success in the {self.clock() - self.since:.0f} s since {since}")
        return self.dead

    def _stop(self, why: str) -> None:
        self.dead = True
        rate_limited = self.stats.rate_limited - self.rate_limited_before
        errors = " | ".join(self.last_errors) or "none but rate limits"
        self.why = (
            f"the {self.role} endpoint {self.url} answered nothing usable: {why} "
            f"({self.failures} failed calls, {rate_limited} HTTP 429 answers; last errors: "
            f"{errors})"
        )
        for task in self.pending:
            self.stopped.add(task)
            task.cancel()

    def reason(self) -> str:
        """Why it was declared dead (empty while it is not)."""
        return self.why

    async def guard(self, call: Awaitable[Reply]) -> Reply:
        """Await one call to the endpoint, counting how it ended; raise `EndpointStopped` if the
        endpoint is (or is declared while the call waits) dead.

        The call is awaited in the calling task (no task of its own: one fewer per request);
        `_stop` cancels that task, and the cancellation it caused is taken back here (as
        `asyncio.timeout` does), so a task also cancelled from elsewhere stays cancelled."""
        if self.dead:
            if asyncio.iscoroutine(call):
                call.close()
            raise EndpointStopped(self.why)
        if self.since is None:
            self.since = self.clock()
        task: asyncio.Task[object] | None = asyncio.current_task()
        assert task is not None, "guard runs in a task"
        self.pending.add(task)
        try:
            reply = await call
        except asyncio.CancelledError:
            if self._taken_back(task):  # cancelled by `_stop` alone
                raise EndpointStopped(self.why) from None
            raise
        except RequestFailed as exc:
            self.pending.discard(task)  # not cancelled if this failure declares it dead
            self.failed(exc)
            raise
        finally:
            self.pending.discard(task)
            self._taken_back(task)  # (a cancellation the call did not end with)
        if not reply.cached:
            self.succeeded()
        return reply

    def _taken_back(self, task: asyncio.Task[object]) -> bool:
        """Take back the cancellation `_stop` made of `task`, if it made one; whether the task
        is then no longer being cancelled."""
        if task not in self.stopped:
            return False
        self.stopped.discard(task)
        return task.uncancel() == 0


class Guarded:
    """A Completer (and, for a model, `messages_for`) whose calls go through `health.guard`."""

    def __init__(self, inner: Completer, health: EndpointHealth) -> None:
        self.inner = inner
        self.health = health

    def __getattr__(self, name: str) -> object:  # `endpoint`, `stats`, ...: the inner one's
        return getattr(self.inner, name)

    def messages_for(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        return self.inner.messages_for(messages)

    async def complete(
        self, messages: list[dict[str, str]], tag: str = "", prefix_key: str | None = None
    ) -> Reply:
        return await self.health.guard(
            self.inner.complete(messages, tag=tag, prefix_key=prefix_key)
        )
