"""Rate limits: how long a 429 says to wait, and one pace for every request to an endpoint.

A rate-limit 429 is never a failure. The refused request is re-sent once the endpoint may be
called again, without using up the bounded retries that 5xx answers and timeouts get. Every
request to an endpoint starts through its `EndpointPacer`, so a 429 slows all of them down
together: the whole endpoint pauses for as long as the server says (`retry-after-ms`,
`retry-after`, "Please try again in 1.2s", or the `x-ratelimit-reset-*` header of the exhausted
limit), then requests start at a pace (requests per second) set a little below what the server
accepted lately, which rises again while no 429 comes. Only a quota error
(`insufficient_quota`: billing, credit) stops the run; see `classify_429`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import time
from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from healthbench_exp.model.buckets import HeaderBuckets, parse_duration

log = logging.getLogger(__name__)

DEFAULT_WAIT_S = 1.0  # a 429 that says nothing about when to come back
MAX_WAIT_S = 600.0  # never trust a single wait longer than this (re-checked afterwards)
MIN_RATE = 0.05  # requests per second: the slowest pace (3 a minute)
OBSERVE_S = 10.0  # the pace after a 429 is set from the successes of this many seconds
PACE_MARGIN = 0.9  # ... times this
RAMP_PER_S = 0.05  # the pace rises by this share of the pace set at the last 429 every second
NOTICE_EVERY_S = 30.0  # one log line per endpoint at most this often

_TRY_AGAIN = re.compile(
    r"try again in\s+((?:\d+(?:\.\d+)?(?:ms|h|m|s))+|\d+(?:\.\d+)?\s*(?:seconds?|secs?))",
    re.IGNORECASE,
)
_QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"}


def _retry_after(value: str) -> float | None:
    """`retry-after`: seconds, or an HTTP date."""
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def wait_from_429(headers: Mapping[str, str], message: str, limit_type: str | None) -> float:
    """Seconds to wait after a rate-limit 429, from what the server said, most exact first:
    `retry-after-ms`, `retry-after`, "try again in Xs" in the message, then the
    `x-ratelimit-reset-*` of the exhausted limit (`limit_type` "requests"/"tokens", else of the
    one with nothing remaining, else the longer). DEFAULT_WAIT_S when it said nothing."""
    candidates: list[float | None] = []
    if "retry-after-ms" in headers:
        with contextlib.suppress(ValueError):
            candidates.append(float(headers["retry-after-ms"]) / 1000.0)
    if "retry-after" in headers:
        candidates.append(_retry_after(headers["retry-after"]))
    found = _TRY_AGAIN.search(message or "")
    if found:
        candidates.append(parse_duration(found.group(1)))
    for wait in candidates:
        if wait is not None and math.isfinite(wait) and wait >= 0:
            return min(wait, MAX_WAIT_S)
    resets = {
        kind: parse_duration(headers.get(f"x-ratelimit-reset-{kind}", ""))
        for kind in ("requests", "tokens")
    }
    if limit_type in resets and resets[limit_type] is not None:
        return min(resets[limit_type] or 0.0, MAX_WAIT_S)
    known = {kind: reset for kind, reset in resets.items() if reset is not None}
    exhausted = [
        reset
        for kind, reset in known.items()
        if headers.get(f"x-ratelimit-remaining-{kind}", "").strip() == "0"
    ]
    waits = exhausted or list(known.values())
    return min(max(waits), MAX_WAIT_S) if waits else DEFAULT_WAIT_S


@dataclass(frozen=True)
class Refusal:
    """What a 429 means: `quota` (stop the run), `too_large` (can never pass: fail this request),
    else a rate limit to wait out for `wait_s` seconds."""

    quota: bool
    too_large: bool
    wait_s: float
    message: str


def classify_429(headers: Mapping[str, str], body: object) -> Refusal:
    """Read a 429's headers and error body (OpenAI's `{"error": {message, type, code}}`)."""
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    message = str(error.get("message") or "")
    code = str(error.get("code") or "")
    kind = str(error.get("type") or "")
    quota = code in _QUOTA_CODES or kind in _QUOTA_CODES
    too_large = message.lower().startswith("request too large")
    limit_type = kind if kind in ("requests", "tokens") else None
    return Refusal(quota, too_large, wait_from_429(headers, message, limit_type), message)


class EndpointPacer:
    """When the next request to one endpoint may start; shared by all its requests.

    Unpaced until the first 429 (or from the start at `requests_per_minute`, when known):
    `wait_turn` then returns at once. A 429 pauses every request until the server's reset time
    and sets the pace to PACE_MARGIN times the successes per second of the last OBSERVE_S
    (halved if there were none), never faster than the pace refused; it then rises linearly,
    by RAMP_PER_S of that pace every second, until the next 429. Only a 429 to a request
    started after the last cut lowers the pace again, so one burst of refusals counts once.
    Held-back requests start in the order they came (O(1) each). Once replies carry
    `x-ratelimit-*` headers, requests also wait until the server's buckets, as learnt from them
    (`HeaderBuckets`), hold their cost, so few are refused at all; a 429 then pauses without
    cutting the pace.
    """

    def __init__(
        self,
        role: str,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
    ) -> None:
        self.role = role
        # requests per second at `last_cut` (None: unpaced); see `rate`
        self.base_rate: float | None = requests_per_minute / 60.0 if requests_per_minute else None
        self.resume_at = 0.0  # no request starts before this (monotonic clock)
        self.next_start = 0.0  # the start time the next paced request gets
        self.last_cut = float("-inf") if self.base_rate is None else time.monotonic()
        self.successes: deque[float] = deque()
        self.first_start: float | None = None
        self._gate = asyncio.Lock()  # the queue of held-back requests (FIFO)
        self.waiting = 0  # requests held back right now
        self.requeued = 0  # rate-limited requests sent again
        self._last_notice = float("-inf")
        self.buckets = HeaderBuckets()  # the server's limits, from its x-ratelimit-* headers
        self.buckets.stated(tokens_per_minute, None)  # a stated token limit paces from the start

    def rate(self, now: float) -> float | None:
        """The pace now, in requests per second (None: unpaced)."""
        if self.base_rate is None:
            return None
        return self.base_rate * (1.0 + RAMP_PER_S * max(0.0, now - self.last_cut))

    async def wait_turn(self) -> float:
        """Wait until a request may start; return its start time (monotonic)."""
        started, mark = await self.start(0.0)
        self.buckets.sending(0.0, mark)  # sent at once
        self.buckets.unsent(0.0, mark)  # and its reply is not learnt from: not kept in flight
        return started

    async def start(self, tokens: float) -> tuple[float, dict[str, float]]:
        """Wait until a request of `tokens` (as the server counts them) may start; return its
        start time (monotonic) and its mark in `buckets` (for `learn`).

        Held-back requests queue first in, first out; only the first of them sleeps, until the
        pause ends, its paced start comes and the learnt buckets hold its cost (all re-read
        after every sleep, so a later 429 or reply moves it). Before the first reply, a
        request that would wait to be sent behind one already started waits here instead
        (`HeaderBuckets.unknown_wait_s`), so it starts by what that reply teaches."""
        now = time.monotonic()
        if self.first_start is None:
            self.first_start = now
        buckets = self.buckets
        if (
            self.base_rate is None
            and now >= self.resume_at
            and not self._gate.locked()
            and buckets.wait_s(tokens, now) <= 0
            and buckets.unknown_wait_s(tokens) is None
        ):
            return now, buckets.take(tokens)
        self.waiting += 1
        try:
            async with self._gate:
                while True:
                    now = time.monotonic()
                    start = max(self.resume_at, self.next_start)
                    start = max(start, now + buckets.wait_s(tokens, now))
                    if start <= now and (poll := buckets.unknown_wait_s(tokens)) is not None:
                        start = now + poll  # nothing known: wait for a sending or a reply
                    if start <= now:
                        break
                    await self._sleep(start - now)
                rate = self.rate(now)
                self.next_start = now + (1.0 / rate if rate else 0.0)
                return now, buckets.take(tokens)
        finally:
            self.waiting -= 1

    async def _sleep(self, delay: float) -> None:
        """Sleep `delay` seconds, or less: until the copy of the buckets rises (a reply, a cost
        given back), so a request never waits on a level it read before."""
        waiter = self.buckets.watch()
        timer = asyncio.get_running_loop().call_later(delay, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()

    def succeeded(self) -> None:
        now = time.monotonic()
        self.successes.append(now)
        while self.successes and self.successes[0] < now - OBSERVE_S:
            self.successes.popleft()

    def rate_limited(self, wait_s: float, started_at: float) -> None:
        """A request started at `started_at` was refused for `wait_s` seconds: pause, re-pace."""
        now = time.monotonic()
        self.requeued += 1
        self.resume_at = max(self.resume_at, now + wait_s)
        self.next_start = max(self.next_start, self.resume_at)
        if started_at >= self.last_cut and not self.buckets.per_s:  # else the headers pace it
            refused_at = self.rate(now)
            paced = self._accepted_rate(now) or (refused_at or 2.0) / 2
            if refused_at is not None:  # refused at this pace: never faster than before
                paced = min(paced, refused_at * PACE_MARGIN)
            self.base_rate = max(MIN_RATE, paced)
            self.last_cut = now
            log.debug("%s: 429, pace cut to %.3f req/s, pause %.3f s", self.role, paced, wait_s)
        if now - self._last_notice >= NOTICE_EVERY_S and self.base_rate is None:
            self._last_notice = now
            log.warning(
                "%s endpoint rate-limited (HTTP 429): waiting %.3g s, then as its x-ratelimit "
                "headers allow; refused requests are sent again",
                self.role,
                wait_s,
            )
        elif now - self._last_notice >= NOTICE_EVERY_S:
            self._last_notice = now
            log.warning(
                "%s endpoint rate-limited (HTTP 429): waiting %.3g s, then %.3g req/s, rising; "
                "refused requests are sent again",
                self.role,
                wait_s,
                self.base_rate,
            )

    def _accepted_rate(self, now: float) -> float:
        """PACE_MARGIN x successes per second over the last OBSERVE_S (0.0 if none)."""
        while self.successes and self.successes[0] < now - OBSERVE_S:
            self.successes.popleft()
        span = min(OBSERVE_S, now - (self.first_start or now))
        if not self.successes or span <= 0:
            return 0.0
        return PACE_MARGIN * len(self.successes) / max(span, 1.0)

    def describe(self) -> str:
        """For the progress line: "rate-limited judge: waiting 4s (37 queued), pace 2.0 req/s"
        ("paced judge: ..." at a configured pace, never refused yet), or "" (unpaced)."""
        if self.base_rate is None and not self.requeued:
            return ""
        parts = []
        now = time.monotonic()
        if self.resume_at > now:
            parts.append(f"waiting {math.ceil(self.resume_at - now)}s ({self.waiting} queued)")
        rate = self.rate(now)
        if rate is not None:
            parts.append(f"pace {rate:.1f} req/s")
        for kind, per_s in self.buckets.per_s.items():  # the account's, as the provider states it
            per_minute = 60 * self.buckets.limit_per_s.get(kind, per_s)
            parts.append(f"limit {per_minute:,.0f} {kind}/min")
        state = "rate-limited" if self.requeued else "paced"
        return f"{state} {self.role}: " + ", ".join(parts or ["recovered"])


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def share_buckets(pacers: Iterable[tuple[Hashable, EndpointPacer]]) -> None:
    """Pacers of the same account key (base URL, API key and model name: OpenAI limits each
    model per organization and project, so a model under test that is also the judge draws on
    one limit) keep one copy of the server's buckets, so neither spends what the other took;
    each alone would learn the other's requests only from its own replies, a latency late."""
    first: dict[Hashable, HeaderBuckets] = {}
    for account, pacer in pacers:
        pacer.buckets = first.setdefault(account, pacer.buckets)
