"""An endpoint's in-flight limit, adapted to rate limiting (AIMD), and its counters."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from healthbench_exp.model.reply_json import tokens


@dataclass
class EndpointStats:
    requests: int = 0  # completed paid calls (the client's own HTTP retries not counted)
    cache_hits: int = 0  # calls answered from the response cache
    failures: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    rate_limited: int = 0  # HTTP 429 answers seen, retries included
    lowest_limit: int = 0  # the smallest in-flight limit the adaptive limiter went down to
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0  # prompt tokens the provider served from its prompt cache
    completion_tokens: int = 0  # reasoning tokens included
    reasoning_tokens: int = 0
    replayed_prompt_tokens: int = 0  # usage of the calls answered by the response cache
    replayed_completion_tokens: int = 0
    # requests sent and never answered, cancelled by a stop (a second Ctrl-C, the end of
    # `runner.stop_grace_s`, a fatal error): the endpoint may have done (and billed) the work;
    # their prompts' characters, for the estimate of their cost (`model.costs`)
    abandoned_in_flight: int = 0
    abandoned_prompt_chars: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    # the service tiers the provider reported having served the paid calls at, counted
    service_tiers: dict[str, int] = field(default_factory=dict)

    def count_abandoned(self, prompt_chars: int) -> None:
        """Count one request sent and never answered (cancelled), of `prompt_chars`."""
        self.abandoned_in_flight += 1
        self.abandoned_prompt_chars += prompt_chars

    def count_paid(
        self, usage: Mapping[str, object], service_tier: str | None = None
    ) -> tuple[int, int, int]:
        """Count one paid call with the `usage` (Chat Completions' shape) and the service tier
        its endpoint reported; return its (prompt, provider-cached prompt, completion) tokens."""
        if service_tier is not None:
            self.service_tiers[service_tier] = self.service_tiers.get(service_tier, 0) + 1
        prompt = tokens(usage, "prompt_tokens")
        cached = tokens(usage, "cached_tokens", "prompt_tokens_details")
        completion = tokens(usage, "completion_tokens")
        self.requests += 1
        self.prompt_tokens += prompt
        self.cached_prompt_tokens += cached
        self.completion_tokens += completion
        self.reasoning_tokens += tokens(usage, "reasoning_tokens", "completion_tokens_details")
        return prompt, cached, completion


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
