"""A dead endpoint ends the run in about a minute, and nothing more is paid once it is declared.

An endpoint that answers nothing usable (HTTP 5xx, refused connections, no reply within
`runner.request_timeout_s`, 429s without rate-limit headers) would otherwise be retried at an
ever slower pace for hours. `EndpointHealth` watches one endpoint as the run uses it: every
*attempt* that brings nothing usable counts (`attempt_failed`: the endpoint reports each one,
the client's own retries included), and so does every call whose reply was unusable (`failed`:
an empty or refused reply); a call that brings a usable reply is a success. It declares the
endpoint dead when

- none of its first `dead_after_calls` attempts was a success (`runner.dead_endpoint_calls`),
  or
- since its last success (or its first call) at least MIN_FAILED_ATTEMPTS attempts failed and
  `dead_after_s` seconds passed without a success (`runner.dead_endpoint_s`; checked on every
  failure and about once a second by the loop's watch).

A 429 that carries rate-limit headers (`x-ratelimit-*`) is a living endpoint pacing the run:
it counts neither way, and each success starts both counts afresh, so a slow endpoint that
answers is never dead. Calls answered from the response cache count neither way.

Once one endpoint is dead the run's `Halt` is set: no call to any endpoint of the run is sent
after that (`Halt.check`, before each request goes out, and `guard`, before each call), and
every call waiting on the dead endpoint (in flight, retrying, or paced behind a 429) ends at
once with `EndpointStopped`, which is a `BudgetExhausted`: its row ends `not run`, recorded with
what it had (a model reply paid for), so a resume finishes it and pays nothing twice. The engine
then ends the run with the reason (`reason`): the endpoint, what it answered, counted by kind,
its last errors.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from healthbench_exp.core.completer import Completer, Reply
from healthbench_exp.core.endpoint_errors import BudgetExhausted, QuotaExhausted, RequestFailed

T = TypeVar("T")
LAST_ERRORS = 3
ERROR_CHARS = 160
# the time rule needs at least so many failed attempts: one failure and a slow reply after it
# is a living endpoint
MIN_FAILED_ATTEMPTS = 3
# what an attempt that brought nothing usable was, in the order the stop line lists them
REFUSED = "refused connections"
NO_REPLY = "no reply (timed out)"
CONNECTION_ERRORS = "connection errors"
SERVER_ERRORS = "HTTP 5xx"
BARE_429 = "HTTP 429 without rate-limit headers"
CLIENT_ERRORS = "other HTTP 4xx"
UNUSABLE = "unusable replies"
KINDS = (REFUSED, NO_REPLY, CONNECTION_ERRORS, SERVER_ERRORS, BARE_429, CLIENT_ERRORS, UNUSABLE)


class EndpointStopped(BudgetExhausted):
    """The run was halted (an endpoint declared dead, see the module docstring): this call was
    not sent, or not finished."""


class Halt:
    """The run's stop, shared by all its endpoints: once `stop`ped, no request is sent."""

    def __init__(self) -> None:
        self.reason = ""  # empty while the run goes on
        self.leaving = False  # a stopping signal came: no row starts either (`leave`)
        # since the halt, a request or a row was held back (refused by `check`, or a row not
        # started): the run is short of its end, not only stopped after it
        self.held_back = False

    def stop(self, reason: str) -> None:
        """Halt the run (the first reason is kept)."""
        if not self.reason:
            self.reason = reason

    def leave(self, reason: str) -> None:
        """A stopping signal: halt the run (`stop`) and start no more rows (a row not started
        stays absent from the run's records, as at any interruption; a resume runs it)."""
        self.stop(reason)
        self.leaving = True

    def check(self) -> None:
        """Raise `EndpointStopped` if the run is halted (called before a request goes out)."""
        if self.reason:
            self.held_back = True
            raise EndpointStopped(self.reason)


class EndpointHealth:
    """One endpoint's successes and failed attempts as the run sees them; dead once it answers
    nothing usable.

    `dead_after_calls` / `dead_after_s`: 0 never (see the module docstring). `halt`: the run's
    stop, set when this endpoint is declared dead."""

    def __init__(
        self,
        role: str,
        url: str,
        dead_after_calls: int,
        dead_after_s: float,
        halt: Halt | None = None,
        *,
        clock: Callable[[], float],
    ) -> None:
        self.role, self.url = role, url
        self.dead_after_calls, self.dead_after_s = dead_after_calls, dead_after_s
        self.halt = halt or Halt()
        self.clock = clock
        self.successes = 0
        self.failures: Counter[str] = Counter()  # failed attempts since the last success, by kind
        self.failures_in_run: Counter[str] = Counter()  # every failed attempt of the run, by kind
        self.since: float | None = None  # the last success, else the first call
        self.first_call: float | None = None
        self.last_errors: deque[str] = deque(maxlen=LAST_ERRORS)
        self.dead = False
        self.why = ""
        # its 429 insufficient_quota: the run is halted (its calls in flight still answer)
        self.quota: QuotaExhausted | None = None
        # the tasks awaiting a call to it (see `guard`), and those `_stop` cancelled
        self.pending: set[asyncio.Task[object]] = set()
        self.stopped: set[asyncio.Task[object]] = set()

    def _called(self) -> None:
        if self.since is None:
            self.since = self.clock()
        if self.first_call is None:
            self.first_call = self.since

    def failed_attempts(self) -> int:
        """Attempts that brought nothing usable since the last success (or the first call)."""
        return sum(self.failures.values())

    def succeeded(self) -> None:
        self.successes += 1
        self.failures.clear()
        self.since = self.clock()

    def attempt_failed(self, kind: str, error: str = "") -> None:
        """One attempt brought nothing usable (`kind`: one of KINDS); `error` its text."""
        self._called()
        self.failures[kind] += 1
        self.failures_in_run[kind] += 1
        if error:
            self._remember(error)
        self.check()

    def failed(self, error: BaseException) -> None:
        """A call failed for good: its error is remembered (its attempts the endpoint counted,
        `attempt_failed`)."""
        self._remember(str(error))
        self.check()

    def _remember(self, error: str) -> None:
        text = error[:ERROR_CHARS]
        if text in self.last_errors:  # the last distinct ones
            self.last_errors.remove(text)
        self.last_errors.append(text)

    def check(self) -> bool:
        """Whether the endpoint is dead (declared so now if it just became so)."""
        if self.dead:
            return True
        failed = self.failed_attempts()
        if not self.successes and self.dead_after_calls and failed >= self.dead_after_calls:
            self._stop(f"none of its first {failed} attempts was a success")
        elif (
            self.dead_after_s
            and failed >= min(MIN_FAILED_ATTEMPTS, self.dead_after_calls or MIN_FAILED_ATTEMPTS)
            and self.since is not None
            and self.clock() - self.since >= self.dead_after_s
        ):
            since = "its last success" if self.successes else "its first call"
            self._stop(f"no success in the {self.clock() - self.since:.0f} s since {since}")
        return self.dead

    def answered(self) -> str:
        """What it answered since its last success, by kind: `HTTP 5xx 40, refused ...`."""
        counted = [f"{kind} {self.failures[kind]}" for kind in KINDS if self.failures[kind]]
        return ", ".join(counted) or "nothing"

    def answered_in_run(self) -> str:
        """What it answered over the whole run: `42 successes; failed attempts: HTTP 5xx 80`."""
        counted = [f"{k} {self.failures_in_run[k]}" for k in KINDS if self.failures_in_run[k]]
        return f"{self.successes} successes; failed attempts: {', '.join(counted) or 'none'}"

    def _stop(self, why: str) -> None:
        self.dead = True
        errors = " | ".join(self.last_errors) or "none"
        after = self.clock() - (self.first_call if self.first_call is not None else self.clock())
        self.why = (
            f"the {self.role} endpoint {self.url} answered nothing usable: {why}, declared dead "
            f"{after:.0f} s after its first call (failed attempts: {self.answered()}; last "
            f"errors: {errors})"
        )
        self.halt.stop(self.why)
        # the task whose failed attempt declared it ends its call by itself (no retry goes out:
        # `Halt.check`); a cancellation of the running task would land after its call ended
        reporting = asyncio.current_task() if self.pending else None
        for task in self.pending:
            if task is not reporting:
                self.stopped.add(task)
                task.cancel()

    def reason(self) -> str:
        """Why it was declared dead (empty while it is not)."""
        return self.why

    async def guard(self, call: Awaitable[Reply]) -> Reply:
        """Await one call to the endpoint, counting how it ended; raise `EndpointStopped` if the
        run is halted (or this endpoint is declared dead while the call waits).

        The call is awaited in the calling task (no task of its own: one fewer per request);
        `_stop` cancels that task, and the cancellation it caused is taken back here (as
        `asyncio.timeout` does), so a task also cancelled from elsewhere stays cancelled."""
        if self.halt.reason:  # held back, as `Halt.check` counts it: the run is short of its end
            if asyncio.iscoroutine(call):
                call.close()
            self.halt.check()
        self._called()
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
        except QuotaExhausted as exc:  # no call can succeed: halt the run, record what finished
            self.quota = self.quota or exc
            self.halt.stop(str(exc))
            raise EndpointStopped(str(exc)) from None
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


def answer_failure(status: int, headers: Mapping[str, str]) -> str:
    """What kind of failed attempt an HTTP answer was (`model.health.KINDS`), '' for one that
    is not: a success, or a 429 with rate-limit headers (a living endpoint pacing the run)."""
    if status >= 500:
        return SERVER_ERRORS
    if status == 429:
        paced = any(name.lower().startswith("x-ratelimit-") for name in headers)
        return "" if paced else BARE_429
    if status >= 400:
        return CLIENT_ERRORS
    return ""
