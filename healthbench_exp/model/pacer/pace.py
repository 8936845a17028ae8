"""One pace for every request to an endpoint, kept through its rate-limit 429s.

A rate-limit 429 is never a failure. The refused request is re-sent once the endpoint may be
called again, without using up the bounded retries that 5xx answers and timeouts get. Every
request to an endpoint starts through its `EndpointPacer`, so a 429 slows all of them down
together: the whole endpoint pauses for as long as the server says (`retry-after-ms`,
`retry-after`, "Please try again in 1.2s", or the `x-ratelimit-reset-*` header of the exhausted
limit), then requests start at a pace (requests per second) set a little below what the server
accepted lately, which rises again while no 429 comes. A brief refusal (a 429 that asks to
come back within BRIEF_WAIT_S and carries no rate-limit header: an overloaded provider, not a
limit) delays only the request refused, unless such refusals grow common. Only a quota error
(`insufficient_quota`: billing, credit) stops the run. What a 429 means, and how long it says
to wait, is read in `refusals.py` (`classify_429`).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from collections.abc import Hashable, Iterable

from healthbench_exp.model.clock import Clock
from healthbench_exp.model.pacer.buckets import HeaderBuckets
from healthbench_exp.model.pacer.refusals import Refusal
from healthbench_exp.model.pacer.tickets import Ticket

log = logging.getLogger(__name__)

MIN_RATE = 0.05  # requests per second: the slowest pace (3 a minute)
SLOW_START_RATE = 1.0  # requests per second: the pace after a 429 met unpaced
OBSERVE_S = 10.0  # the pace after a 429 is set from the successes of this many seconds
PACE_MARGIN = 0.9  # ... times this
# after a cut the pace doubles every DOUBLING_S up to what the server sustained before it
# (without bound when it sustained nothing yet), then rises by RAMP_PER_REQUEST of that for
# every request started: a probe past a limit costs one 429 in about sqrt(2 R / RAMP) requests
# at R a second (60 at 1 a second, 200 at 10), whatever R is (a rise per second cost one in
# 6 R: 8% of the requests refused at 2 a second)
DOUBLING_S = 1.0
MAX_DOUBLINGS = 60.0  # past this the pace is as good as none (and 2.0**x stays finite)
RAMP_PER_REQUEST = 0.0005
CEILING_FLOOR = 0.5  # of the pace refused: the least the rate climbed back to quickly can be
SHOWN_RATE_BELOW = 10_000.0  # the progress line names a pace below this (requests a second)
NOTICE_EVERY_S = 30.0  # one log line per endpoint at most this often
# a brief 429 (`refusals.brief_refusal`) delays only the request refused, unless brief
# refusals are more than this share of the endpoint's last BRIEF_WINDOW answers: a limit that
# names a short wait (its refused requests would otherwise be re-sent into it at once; 12%
# refused under a header-less 600 a minute, against 1.7% paced)
BRIEF_SHARE_MAX = 0.25
BRIEF_WINDOW = 32


class TurnLapsed(Exception):
    """A request that started before the endpoint was last cut or paused by a 429 without
    rate-limit headers reached its sending (it waited for a slot meanwhile): it goes back to
    the pacer, its cost returned, instead of meeting the limit the 429 told of. A run's
    hundreds of judge calls started before the first 429 were otherwise all sent into it:
    27% of a run's requests refused under a limit of 600 a minute."""


class EndpointPacer:
    """When the next request to one endpoint may start; shared by all its requests.

    Unpaced until the first 429 (or from the start at `requests_per_minute`, when known). A
    429 pauses every request until the server's reset time and sets the pace to PACE_MARGIN
    times the successes per second of the last OBSERVE_S (since the first cut, once there was
    one; halved if there were none), never faster than the pace refused, or SLOW_START_RATE
    when refused unpaced (the successes were a first burst, not the limit). From there the pace
    doubles every DOUBLING_S up to the successes per second the server sustained before the
    429 (`ceiling`; without bound where it sustained none yet, as in a burst of 429s at the
    start), then rises by RAMP_PER_REQUEST of that for every request started, until the next
    429: once the 429s stop, the pace is back within seconds, and it probes past the rate
    sustained slowly, so a limit without rate-limit headers costs few 429s. Only a 429 to a
    request started after the last cut lowers the pace again, so one burst of refusals counts
    once. Held-back requests start in the order they came (O(1) each). Once replies carry
    `x-ratelimit-*` headers, requests also wait until the server's buckets, as learnt from
    them (`HeaderBuckets`), hold their cost, so few are refused at all; a 429 then pauses
    without cutting the pace. Every time is read from `clock`, and every wait sleeps on it.
    """

    def __init__(
        self,
        role: str,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        clock: Clock,
    ) -> None:
        self.role = role
        self.clock = clock
        # requests per second at `last_cut` (None: unpaced); see `rate`
        self.base_rate: float | None = requests_per_minute / 60.0 if requests_per_minute else None
        # the rate the pace doubles up to after a cut (None: no bound); see `rate`
        self.ceiling: float | None = self.base_rate
        self.probes = 0  # requests started past `ceiling` since the last cut; see `rate`
        self.resume_at = 0.0  # no request starts before this (the clock's seconds)
        self.next_start = 0.0  # the start time the next paced request gets
        self.last_cut = float("-inf") if self.base_rate is None else clock.now()
        self.successes: deque[tuple[float, float]] = deque()  # answered at, started at
        # the last BRIEF_WINDOW answers: True for a brief 429 (see `refused`)
        self.recent_brief: deque[bool] = deque(maxlen=BRIEF_WINDOW)
        self.limited_since = -math.inf  # when the first cut came (see `_accepted_rate`)
        self.limit_is_brief = False  # the first cut came of brief 429s (see `refused`)
        self.first_start: float | None = None
        self._gate = asyncio.Lock()  # the queue of held-back requests (FIFO)
        self.waiting = 0  # requests held back right now
        self.requeued = 0  # rate-limited requests sent again
        self._last_notice = float("-inf")
        # the server's limits, from its x-ratelimit-* headers
        self.buckets = HeaderBuckets(clock.now)
        self.buckets.stated(tokens_per_minute, None)  # a stated token limit paces from the start

    def rate(self, now: float) -> float | None:
        """The pace now, in requests per second (None: unpaced): from `base_rate` at the last
        cut, doubling every DOUBLING_S up to `ceiling`, then rising by RAMP_PER_REQUEST of it
        for every request started since (see the class docstring)."""
        base = self.base_rate
        if base is None:
            return None
        since = max(0.0, now - self.last_cut)
        if self.ceiling is None:
            return base * 2.0 ** min(since / DOUBLING_S, MAX_DOUBLINGS)
        ceiling = max(base, self.ceiling)
        if since < self._climb_s():
            return base * 2.0 ** (since / DOUBLING_S)
        return ceiling * (1.0 + RAMP_PER_REQUEST * self.probes)

    def _climb_s(self) -> float:
        """Seconds from the last cut until the doubling pace reaches `ceiling` (inf: never)."""
        if self.base_rate is None or self.ceiling is None:
            return math.inf
        return DOUBLING_S * math.log2(max(self.base_rate, self.ceiling) / self.base_rate)

    async def start(self, tokens: float) -> Ticket:
        """Wait until a request of `tokens` (as the server counts them) may start; return its
        ticket in `buckets` (TAKEN, with its start time), for `sending`, `learn` and `ended`.

        Held-back requests queue first in, first out; only the first of them sleeps, until the
        pause ends, its paced start comes and the learnt buckets hold its cost (all re-read
        after every sleep, so a later 429 or reply moves it). Before the first reply, a
        request that would wait to be sent behind one already started waits here instead
        (`HeaderBuckets.unknown_wait_s`), so it starts by what that reply teaches."""
        now = self.clock.now()
        if self.first_start is None:
            self.first_start = now
        buckets = self.buckets
        if (
            self.base_rate is None
            and now >= self.resume_at
            and not self._gate.locked()
            and buckets.wait_s(tokens) <= 0
            and buckets.unknown_wait_s(tokens) is None
        ):
            return buckets.take(tokens)
        self.waiting += 1
        try:
            async with self._gate:
                while True:
                    now = self.clock.now()
                    start = max(self.resume_at, self.next_start)
                    start = max(start, now + buckets.wait_s(tokens))
                    if start <= now and (poll := buckets.unknown_wait_s(tokens)) is not None:
                        start = now + poll  # nothing known: wait for a sending or a reply
                    if start <= now:
                        break
                    await self._sleep(start - now)
                rate = self.rate(now)
                self.next_start = now + (1.0 / rate if rate else 0.0)
                if now - self.last_cut >= self._climb_s():
                    self.probes += 1  # started past the rate sustained: the pace rises
                return buckets.take(tokens)
        finally:
            self.waiting -= 1

    def sending(self, ticket: Ticket) -> None:
        """`ticket`'s request is being sent now (`HeaderBuckets.sending`), or TurnLapsed when
        it started before the last cut, or the pause after a 429 is not over, under a pace of
        this pacer's own (not the learnt buckets', which count it as the headers tell)."""
        if not self.buckets.per_s and (
            ticket.started_at < self.last_cut or self.clock.now() < self.resume_at
        ):
            raise TurnLapsed
        self.buckets.sending(ticket)

    async def _sleep(self, delay: float) -> None:
        """Sleep `delay` seconds of the clock, or less: until the copy of the buckets rises (a
        reply, a cost given back), so a request never waits on a level it read before."""
        waiter = self.buckets.watch()
        timer = asyncio.ensure_future(self.clock.sleep(delay))
        try:
            await asyncio.wait((waiter, timer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()

    def succeeded(self, started_at: float | None = None) -> None:
        """A request that started at `started_at` (None: now) was answered now."""
        now = self.clock.now()
        self.recent_brief.append(False)
        self.successes.append((now, now if started_at is None else started_at))
        while self.successes and self.successes[0][0] < now - OBSERVE_S:
            self.successes.popleft()

    async def refused(self, refusal: Refusal, started_at: float) -> None:
        """A request started at `started_at` was refused (a rate-limit 429, `refusal`): a brief
        refusal (`Refusal.brief`) sleeps its own wait on the clock and returns, neither pausing
        nor slowing the other requests (at 10% random refusals, each a cut, a run took ten
        times as long), unless brief refusals were more than BRIEF_SHARE_MAX of the last
        BRIEF_WINDOW answers (a limit that names a short wait), or the endpoint's first cut
        came of brief refusals (that limit's 429s name a short wait: the later ones are the
        probes past it). A limit first told by other 429s (no Retry-After, a long one, its
        headers) does not make the brief ones after it its own: a provider that limits a
        burst and is flaky after it is not cut at each random 429 (a run took minutes for
        seconds). Any other refusal pauses and re-paces the endpoint (`rate_limited`). Either
        way the request then starts again."""
        self.recent_brief.append(refusal.brief)
        noise = sum(self.recent_brief) <= BRIEF_SHARE_MAX * BRIEF_WINDOW
        if refusal.brief and noise and not self.limit_is_brief:
            self.requeued += 1
            await self.clock.sleep(refusal.wait_s)
            return
        if self.limited_since == -math.inf:
            self.limit_is_brief = refusal.brief
        self.rate_limited(refusal.wait_s, started_at)

    def rate_limited(self, wait_s: float, started_at: float) -> None:
        """A request started at `started_at` was refused for `wait_s` seconds: pause, re-pace
        (see the class docstring)."""
        now = self.clock.now()
        self.requeued += 1
        self.resume_at = max(self.resume_at, now + wait_s)
        self.next_start = max(self.next_start, self.resume_at)
        # started after the last cut (at the same tick: before it); else the headers pace it
        if started_at > self.last_cut and not self.buckets.per_s:
            refused_at = self.rate(now)
            accepted = self._accepted_rate(now)
            # refused unpaced: start slow, as the successes were a first burst (class docstring)
            paced, ceiling = SLOW_START_RATE, None
            if refused_at is not None:  # refused at this pace: never faster than before
                paced = min(accepted or refused_at / 2, refused_at * PACE_MARGIN)
            if refused_at is not None and accepted:
                # what was sustained, but no lower than half the pace refused: an estimate
                # from the successes of a second or two must not hold the pace far down
                sustained = max(accepted / PACE_MARGIN, refused_at * CEILING_FLOOR)
                ceiling = min(sustained, refused_at * PACE_MARGIN)
            self.base_rate = max(MIN_RATE, paced)
            self.ceiling = ceiling
            self.last_cut = now
            self.probes = 0
            if self.limited_since == -math.inf:
                self.limited_since = now
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
        """PACE_MARGIN x successes per second over the last OBSERVE_S (0.0 if none); once there
        was a cut, only of the requests started after the first: what the server sustains under
        its limit, not the burst it let through before it first refused (a bucket of 600
        emptied at 80 a second took nine cuts to come down to its 10 a second, each costing
        429s). An estimate from a second or two: the rate climbed back to fast is never set
        below half the pace refused (see `rate_limited`)."""
        while self.successes and self.successes[0][0] < now - OBSERVE_S:
            self.successes.popleft()
        since = max(self.first_start or now, self.limited_since)
        cut = self.limited_since > -math.inf  # then only those started after it (not at it)
        counted = sum(1 for _, at in self.successes if at > since or (at == since and not cut))
        span = min(OBSERVE_S, now - since)
        if not counted or span <= 0:
            return 0.0
        return PACE_MARGIN * counted / max(span, 1.0)

    def describe(self) -> str:
        """For the progress line: "rate-limited judge: waiting 4s (37 queued), pace 2.0 req/s"
        ("paced judge: ..." at a configured pace, never refused yet), or "" (unpaced)."""
        if self.base_rate is None and not self.requeued:
            return ""
        parts = []
        now = self.clock.now()
        if self.resume_at > now:
            parts.append(f"waiting {math.ceil(self.resume_at - now)}s ({self.waiting} queued)")
        rate = self.rate(now)
        if rate is not None and rate < SHOWN_RATE_BELOW:  # past it the pace holds nothing back
            parts.append(f"pace {rate:.1f} req/s")
        for kind, per_s in self.buckets.per_s.items():  # the account's, as the provider states it
            per_minute = 60 * self.buckets.limit_per_s.get(kind, per_s)
            parts.append(f"limit {per_minute:,.0f} {kind}/min")
        state = "rate-limited" if self.requeued else "paced"
        return f"{state} {self.role}: " + ", ".join(parts or ["recovered"])


def share_buckets(pacers: Iterable[tuple[Hashable, EndpointPacer]]) -> None:
    """Pacers of the same account key (base URL, API key and model name: OpenAI limits each
    model per organization and project, so a model under test that is also the judge draws on
    one limit) keep one copy of the server's buckets, so neither spends what the other took;
    each alone would learn the other's requests only from its own replies, a latency late.
    The limits each role's user stated hold on the shared copy (the lower, if they differ)."""
    first: dict[Hashable, HeaderBuckets] = {}
    for account, pacer in pacers:
        shared = first.setdefault(account, pacer.buckets)
        if shared is not pacer.buckets:
            shared.adopt(pacer.buckets)  # its stated limits hold on the shared copy too
            pacer.buckets = shared
