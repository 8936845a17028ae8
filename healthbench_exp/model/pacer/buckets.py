"""The endpoint's copy of the server's rate-limit buckets, learnt from the
`x-ratelimit-limit/remaining/reset-*` headers of its replies (see `HeaderBuckets`); each request
holds a `Ticket` (`tickets.py`) whose moves the copy makes."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping

from healthbench_exp.model.pacer.server_waits import parse_duration
from healthbench_exp.model.pacer.tickets import KINDS, Ticket, TicketError, TicketState

HEADROOM = 0.02  # of a learnt bucket's capacity, kept unspent against counting differences
# a request sent up to this many seconds before another may reach the server after it (while the
# client is busy sending hundreds at once, or opening a connection): see `HeaderBuckets`
REORDER_S = 2.0
# ... at least this much (requests sent together in one burst), else twice the longest delay
# from sending to admission of the latest DELAYS_KEPT replies (see `HeaderBuckets.reorder_window`)
REORDER_FLOOR_S = 0.05
DELAYS_KEPT = 64
# two admissions closer than this are of unknown order (the reply's time is read when the event
# loop gets to it, `openai-processing-ms` is whole milliseconds): see `HeaderBuckets._sent_before`
ORDER_UNCERTAIN_S = 0.02
# a limit that moves (see `HeaderBuckets._pace`)
DRIFT_GAIN = 0.5
MIN_REFILL_SHARE = 0.05
MIN_READING_S = 0.05  # exact readings closer than this move nothing (their error is noise)
UNKNOWN_POLL_S = 0.005  # see `HeaderBuckets.unknown_wait_s`
# Before any reply has told the limits, the requests out at once hold at most this many tokens:
# the smallest token bucket OpenAI gives a first-tier account (30,000 a minute for gpt-4.1, o3,
# gpt-5), so a first burst never overruns an account it knows nothing of
FIRST_BURST_TOKENS = 30_000.0
# ... for this long at most from the first sending: a server that answers slowly (or only with
# errors, retried with backoff inside the client) is not held back
FIRST_REPLY_WAIT_S = 2.0
PENDING_SLACK = 1e-6  # of a cost: the float error a pending sum may show below 0


class HeaderBuckets:
    """The endpoint's copy of the server's rate-limit buckets (requests and tokens), learnt from
    the `x-ratelimit-limit/remaining/reset-*` headers of its replies, so requests start when the
    server will admit them instead of being refused.

    Every request takes its cost from the copy when it starts (1 request; its prompt at 4
    characters per token plus the completion tokens it asks for, as OpenAI counts) and keeps
    the level it left (`mark`). A reply's `remaining` is the server's level just after it took
    the same request, so `remaining - mark`, less the corrections made since the mark, is how far
    the copy is off: added to the copy now, it corrects it without counting the requests started
    since, or an earlier correction, twice. Until a reply has carried
    the headers nothing is known and nothing waits for the copy; an endpoint that sends none
    costs nothing. (Until the first reply, `EndpointPacer` lets no more requests start than
    can be sent at once, and no more out than a first-tier bucket holds: see `unknown_wait_s`;
    a limit the user states paces from the first request: see `stated`.)

    A request may wait between its start here and its sending (for a slot under the in-flight
    caps), while the server's bucket refills: its mark is taken again when it is sent
    (`sending`), as the level the server will see (the copy now, plus the costs of the requests
    started but not yet sent, `pending`). A mark from the start would count that refill twice,
    the copy running ahead of the server by the refill of the wait (132,000 tokens after a wait
    of 0.66 s at 200,000 a second, when 1,380 judge calls queued for 256 slots).

    Requests do not reach the server in the order they were sent: one sent last may find a free
    connection while those sent before it still wait for theirs (0.2 to 0.7 s when the client
    sends 250 at once). Its reply's `remaining` was then read before the server took their
    costs, which its mark had already counted: taken at face value, the correction gives all of
    them back (680,000 tokens, half the bucket, in the first drain of a 1.2M bucket), the pacer
    lets that many more start, and the server refuses them when the others arrive. So a reply's
    correction keeps the costs of the requests sent before it (within REORDER_S) and not yet
    answered (`in_flight`) taken: a request overtaken may not have been counted yet, and one
    still travelling after the later one's reply most likely was not.

    For the same reason a request is admitted some time after it is sent, and the server's
    bucket refills meanwhile: a mark from the sending counts that refill twice (200,000 tokens a
    second, for the 0.2 to 0.7 s above). Where the reply says how long the server held the
    request (`openai-processing-ms`, as OpenAI's do), it was admitted no later than that long
    before the reply came, and the correction leaves that refill out.

    How long before another a request must have been sent to be admitted before it is
    measured, not assumed (`reorder_window`): twice the longest delay from sending to admission
    of the latest replies, at least REORDER_FLOOR_S, at most REORDER_S. With a fixed 2 s, a
    small bucket's requests (one every half second, each reserving 2,048 completion tokens)
    were counted twice by every reply that overtook one, and the copy ran half a bucket low.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock  # monotonic seconds: the only time the copy reads
        self.level = dict.fromkeys(KINDS, 0.0)  # relative until learnt: marks stay comparable
        self.shift = dict.fromkeys(KINDS, 0.0)  # the corrections made so far (see `learn`)
        self.pending = dict.fromkeys(KINDS, 0.0)  # taken by requests not sent yet
        self.in_flight: dict[int, tuple[float, float]] = {}  # sent, not answered: cost, sent at
        # answered lately, and admitted (by the reply's openai-processing-ms): cost, sent at, when
        self.admitted: dict[int, tuple[float, float, float]] = {}
        self.sent = 0  # requests sent so far (the next one's place in the sending order)
        # one sent longer before another was admitted before it (a long reply still running)
        self.reorder_s = REORDER_S
        self.answered = False  # whether any reply has come (with the headers or without)
        self.per_s: dict[str, float] = {}  # refill per second of each learnt bucket (see `_pace`)
        self.limit_per_s: dict[str, float] = {}  # ... as the headers give it (the account's)
        self.read_at: dict[str, float] = {}  # when each was last read exactly (see `_pace`)
        self.capacity: dict[str, float] = {}
        self.updated = clock()
        self.delays: deque[float] = deque(maxlen=DELAYS_KEPT)  # sending to admission, seconds
        self.first_burst = FIRST_BURST_TOKENS  # see `unknown_wait_s`
        self.first_sent_at: float | None = None
        self._watchers: list[asyncio.Future[None]] = []  # woken when the copy rises
        self.stated_per_minute: dict[str, float] = {}  # the limits the user states (`stated`)

    def stated(self, tokens_per_minute: float | None, requests_per_minute: float | None) -> None:
        """The account's limits as the user states them: requests are paced by them from the
        first one, from a bucket that holds a first burst (FIRST_BURST_TOKENS, or a second's
        worth of requests), until the replies' headers tell the server's own. Stated twice (two
        roles on one account: see `adopt`), the lower of each limit holds."""
        for kind, per_minute, burst in (
            ("tokens", tokens_per_minute, min(FIRST_BURST_TOKENS, tokens_per_minute or 0.0)),
            ("requests", requests_per_minute, max(1.0, (requests_per_minute or 0.0) / 60.0)),
        ):
            known = self.stated_per_minute.get(kind)
            if per_minute and (known is None or per_minute < known):
                self.stated_per_minute[kind] = per_minute
                self.per_s[kind] = per_minute / 60.0
                self.capacity[kind] = burst
                self.level[kind] = burst

    def adopt(self, other: HeaderBuckets) -> None:
        """Another pacer of the same account now draws on this copy (see
        `pace.share_buckets`): the limits its user stated hold here too. Only before any
        request has started on either (nothing to carry over but the statement)."""
        if self.sent or other.sent or any(self.pending.values()) or any(other.pending.values()):
            raise TicketError("buckets are shared before any request starts")
        stated = other.stated_per_minute
        self.stated(stated.get("tokens"), stated.get("requests"))

    def watch(self) -> asyncio.Future[None]:
        """A future resolved when the copy next rises (a reply corrects it, a cost goes back, a
        request is sent): a request waiting for room looks again at once, not at the end of the
        wait it had worked out before."""
        waiter = asyncio.get_running_loop().create_future()
        self._watchers.append(waiter)
        return waiter

    def _wake(self) -> None:
        watchers, self._watchers = self._watchers, []
        for waiter in watchers:
            if not waiter.done():
                waiter.set_result(None)

    def reorder_window(self) -> float:
        """How long before another a request may have been sent and still be admitted after
        it (see the class docstring)."""
        if not self.delays:
            return self.reorder_s
        return min(self.reorder_s, max(REORDER_FLOOR_S, 2.0 * max(self.delays)))

    def _refill(self, now: float) -> None:
        elapsed, self.updated = now - self.updated, now
        for kind, per_s in self.per_s.items():
            self.level[kind] = min(self.capacity[kind], self.level[kind] + elapsed * per_s)

    def wait_s(self, tokens: float) -> float:
        """Seconds until a request of `tokens` fits in every learnt bucket (0: now)."""
        if not self.per_s:
            return 0.0
        self._refill(self.clock())
        costs = {"requests": 1.0, "tokens": tokens}
        return max(
            (costs[kind] + HEADROOM * self.capacity[kind] - self.level[kind]) / per_s
            for kind, per_s in self.per_s.items()
        )

    def unknown_wait_s(self, tokens: float = 0.0) -> float | None:
        """Before any reply has come, while a request that started waits to be sent (for a
        slot under the in-flight caps): how long the next may wait before looking again
        (None: it need not wait). Each request started then takes from a copy that knows
        nothing and is sent, unpaced, whenever a slot frees; 176 of 240 requests started
        at once under a limit of 60 a second did, and half were refused. Held back instead,
        they start by the copy the first reply teaches. So does a request that would take the
        tokens out past `first_burst`, for FIRST_REPLY_WAIT_S at most: a first-tier bucket holds
        about eight judge calls, and 30 sent at once had 18 refused."""
        if self.answered or self.per_s:
            return None
        if self.pending["requests"] > 0:
            return UNKNOWN_POLL_S
        out = sum(tokens for tokens, _ in self.in_flight.values())
        if out <= 0 or out + tokens <= self.first_burst:
            return None
        left = (self.first_sent_at or 0.0) + FIRST_REPLY_WAIT_S - self.clock()
        return left if left > 0 else None

    def heard(self, headers: Mapping[str, str]) -> None:
        """Any HTTP answer (a 500 as well): one without rate-limit headers says the server sends
        none, and nothing more is held back for them (see `unknown_wait_s`); one with them is
        learnt from its request's reply (`learn`)."""
        if not any(f"x-ratelimit-remaining-{kind}" in headers for kind in KINDS):
            self.answered = True

    def take(self, tokens: float) -> Ticket:
        """Take a starting request's cost (`tokens`, and one request): its ticket, TAKEN, whose
        mark is the levels it left, until `sending`."""
        now = self.clock()
        self._refill(now)  # up to the capacity before the cost, not after it
        level, shift, pending = self.level, self.shift, self.pending
        level["requests"] -= 1.0
        level["tokens"] -= tokens
        mark = {kind: level[kind] - shift[kind] + pending[kind] for kind in KINDS}
        pending["requests"] += 1.0
        pending["tokens"] += tokens
        return Ticket(tokens, now, mark)

    def sending(self, ticket: Ticket) -> None:
        """`ticket`'s request is being sent now (TAKEN -> SENT): its cost is no longer pending,
        it is in flight, and its mark becomes the level the server will leave on admitting it
        (see the class docstring)."""
        ticket.move((TicketState.TAKEN,), TicketState.SENT)
        self._unpend(ticket.cost)
        now = self.clock()
        self._refill(now)
        level, shift, pending = self.level, self.shift, self.pending
        ticket.mark.update({kind: level[kind] - shift[kind] + pending[kind] for kind in KINDS})
        ticket.seq, ticket.sent_at = self.sent, now
        self.in_flight[self.sent] = (ticket.cost, now)
        self.sent += 1
        if self.first_sent_at is None:
            self.first_sent_at = now
        self._wake()

    def ended(self, ticket: Ticket) -> None:
        """`ticket`'s request has ended. Never sent (budget, cancellation: TAKEN -> RETURNED),
        its cost goes back, once; sent and not learnt from (an error, a timeout: SENT ->
        UNANSWERED), it is no longer in flight; answered or refused (learnt from, out of flight
        already), nothing changes. Ending a ticket twice raises TicketError."""
        if ticket.state in (TicketState.ANSWERED, TicketState.REFUSED):
            return
        if ticket.state is TicketState.SENT:
            ticket.move((TicketState.SENT,), TicketState.UNANSWERED)
            self._leave_flight(ticket)
            self._wake()
            return
        ticket.move((TicketState.TAKEN,), TicketState.RETURNED)
        self._unpend(ticket.cost)
        self.level["requests"] += 1.0
        self.level["tokens"] += ticket.cost
        self._wake()

    def _unpend(self, tokens: float) -> None:
        """A request's cost is no longer pending (sent, or given back): never below nothing."""
        pending = self.pending
        pending["requests"] -= 1.0
        pending["tokens"] -= tokens
        if min(pending["requests"], pending["tokens"]) < -PENDING_SLACK * max(1.0, tokens):
            raise TicketError(f"pending cost below zero: {pending}")

    def _leave_flight(self, ticket: Ticket) -> None:
        """`ticket` leaves `in_flight`: exactly once, and only from the copy that sent it."""
        if self.in_flight.pop(ticket.seq, None) is None:
            raise TicketError(f"request {ticket.seq} is not in flight here")

    def learn(self, headers: Mapping[str, str], ticket: Ticket, admitted: bool = True) -> None:
        """Correct the copy from the headers of the reply to `ticket`'s request (SENT ->
        ANSWERED, or -> REFUSED when not `admitted`: a 429); it leaves `in_flight`. A
        429's `remaining` was read before the request's cost and nothing was taken: the same
        correction gives its cost back (it is taken again, by a new ticket, when the request is
        sent again). The
        requests sent before it, within REORDER_S, and not answered yet stay taken (see the
        class docstring), and the server's refill from the sending to the admission, where the
        reply tells it, is left out. Where the reply tells when the server admitted the request
        (`openai-processing-ms`), the requests answered already are placed by their own
        admissions too (see `_sent_before`)."""
        entering = TicketState.ANSWERED if admitted else TicketState.REFUSED
        ticket.move((TicketState.SENT,), entering)
        self._leave_flight(ticket)
        self.answered = True
        self._wake()
        now = self.clock()
        at = _admitted_at(headers, now)
        if at is not None and admitted:
            self.admitted[ticket.seq] = (ticket.cost, ticket.sent_at, at)
        told = [(kind, headers.get(f"x-ratelimit-remaining-{kind}")) for kind in KINDS]
        if all(remaining is None for _, remaining in told):
            return  # a reply without the headers tells nothing (most servers send none)
        self._refill(now)
        travelling = self._sent_before(ticket, at)
        clean = not any(travelling.values())  # no request of unknown order: an exact reading
        # from its sending to its admission, at most (0: the reply does not say when)
        on_the_way = 0.0 if at is None else max(0.0, at - ticket.sent_at)
        self.delays.append(on_the_way if at is not None else now - ticket.sent_at)
        for kind, remaining in told:
            if remaining is None:
                continue
            try:
                left = float(remaining)
                per_s = float(headers[f"x-ratelimit-limit-{kind}"]) / 60.0  # per minute
                reset = parse_duration(headers.get(f"x-ratelimit-reset-{kind}", ""))
            except (KeyError, ValueError):
                continue
            if per_s <= 0 or reset is None:
                continue
            self.capacity[kind] = max(left + reset * per_s, self.capacity.get(kind, 0.0))
            refill = self.per_s.get(kind, per_s) if self.limit_per_s.get(kind) == per_s else per_s
            self.limit_per_s[kind] = per_s
            error = left - (ticket.mark[kind] + self.shift[kind]) - travelling[kind]
            error -= on_the_way * refill
            self.shift[kind] += error
            self.level[kind] = min(self.capacity[kind], self.level[kind] + error)
            # a 429's correction also gives back its own cost, which no refill explains
            drift = error if admitted else error - (ticket.cost if kind == "tokens" else 1.0)
            self.per_s[kind] = self._pace(kind, refill, per_s, drift, now, clean)

    def _pace(
        self, kind: str, refill: float, limit: float, error: float, now: float, clean: bool
    ) -> float:
        """The refill the copy counts on from now: the headers' limit, less what the account's
        other jobs take of it. Each exact reading (`clean`) whose error shows the copy refilled
        faster (or slower) than the server since the exact reading before it (with no inexact
        one between) moves it by DRIFT_GAIN of that difference, by half or double at most,
        between MIN_REFILL_SHARE of the limit and the limit: when other jobs start spending the
        limit, the copy slows down within a few replies; when they stop, the
        replies show it, and the pace comes back."""
        last = self.read_at.pop(kind, None)
        if not clean:  # the copy is set from an inexact reading: the next one is no measure
            return refill
        self.read_at[kind] = now
        if last is None or now - last < MIN_READING_S:
            return refill
        moved = refill + DRIFT_GAIN * error / (now - last)
        moved = min(2.0 * refill, max(0.5 * refill, moved))  # at most halved or doubled
        return min(limit, max(MIN_REFILL_SHARE * limit, moved))

    def _sent_before(self, ticket: Ticket, at: float | None) -> dict[str, float]:
        """The costs that the server's `remaining` for `ticket`'s request (admitted
        `at`, None: not known) had not taken yet, though its mark had: the requests sent before
        it, within `reorder_window`, and not answered yet, or answered and admitted after it.
        Less the costs it had taken twice: requests sent after it (not in its mark, taken from
        the copy since) that the server admitted before it. In a burst of twelve sent at once
        the server admitted the fourth sent after the tenth, and the third's reply came before
        the tenth's: counted by the unanswered alone, the copy ran a request's cost high.
        Admissions closer than ORDER_UNCERTAIN_S are taken in the order that keeps the copy
        low."""
        travelling = dict.fromkeys(KINDS, 0.0)
        seq, since = ticket.seq, ticket.sent_at - self.reorder_window()
        for other, (tokens, sent_at) in self.in_flight.items():  # in the sending order
            if other > seq:
                break
            if sent_at >= since:
                travelling["requests"] += 1.0
                travelling["tokens"] += tokens
        if at is None:
            return travelling
        stale = ticket.sent_at - 2 * self.reorder_s
        for other, (tokens, sent_at, admitted_at) in list(self.admitted.items()):
            if sent_at < stale:
                del self.admitted[other]
            elif other < seq and sent_at >= since and admitted_at > at - ORDER_UNCERTAIN_S:
                travelling["requests"] += 1.0
                travelling["tokens"] += tokens
            elif other > seq and admitted_at < at - ORDER_UNCERTAIN_S:
                travelling["requests"] -= 1.0
                travelling["tokens"] -= tokens
        return travelling


def _admitted_at(headers: Mapping[str, str], now: float) -> float | None:
    """When the server admitted the request whose reply came `now` (monotonic), at the latest:
    it held it `openai-processing-ms` (None: the reply does not say)."""
    processing = headers.get("openai-processing-ms")
    if processing is None:
        return None
    try:
        return now - float(processing) / 1000.0
    except ValueError:
        return None
