"""The endpoint's copy of the server's rate-limit buckets, learnt from the
`x-ratelimit-limit/remaining/reset-*` headers of its replies (see `HeaderBuckets`), and the
reset durations those headers are written in (`parse_duration`)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(text: str) -> float | None:
    """Seconds in OpenAI's reset format ("20ms", "6s", "1m0s", "1h2m3.5s", "1.2 seconds")."""
    text = text.strip().lower()
    seconds_word = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(?:seconds?|secs?)", text)
    if seconds_word:
        return float(seconds_word.group(1))
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.replace(" ", ""):
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(number) * scale[unit] for number, unit in parts)


HEADROOM = 0.02  # of a learnt bucket's capacity, kept unspent against counting differences
KINDS = ("requests", "tokens")
SENT = "sent"  # in a mark once `sending` (or `unsent`) has settled its pending cost
SEQ, SENT_AT = "seq", "sent_at"  # in a sent request's mark: its place in the sending order, when
# a request sent up to this many seconds before another may reach the server after it (while the
# client is busy sending hundreds at once, or opening a connection): see `HeaderBuckets`
REORDER_S = 2.0
UNKNOWN_POLL_S = 0.005  # see `HeaderBuckets.unknown_wait_s`


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
    can be sent at once: see `unknown_wait_s`.)

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
    """

    def __init__(self) -> None:
        self.level = dict.fromkeys(KINDS, 0.0)  # relative until learnt: marks stay comparable
        self.shift = dict.fromkeys(KINDS, 0.0)  # the corrections made so far (see `learn`)
        self.pending = dict.fromkeys(KINDS, 0.0)  # taken by requests not sent yet
        self.in_flight: dict[int, tuple[float, float]] = {}  # sent, not answered: cost, sent at
        self.sent = 0  # requests sent so far (the next one's place in the sending order)
        # one sent longer before another was admitted before it (a long reply still running)
        self.reorder_s = REORDER_S
        self.answered = False  # whether any reply has come (with the headers or without)
        self.per_s: dict[str, float] = {}  # refill per second of each learnt bucket
        self.capacity: dict[str, float] = {}
        self.updated = time.monotonic()

    def _refill(self, now: float) -> None:
        elapsed, self.updated = now - self.updated, now
        for kind, per_s in self.per_s.items():
            self.level[kind] = min(self.capacity[kind], self.level[kind] + elapsed * per_s)

    def wait_s(self, tokens: float, now: float) -> float:
        """Seconds until a request of `tokens` fits in every learnt bucket (0: now)."""
        if not self.per_s:
            return 0.0
        self._refill(now)
        costs = {"requests": 1.0, "tokens": tokens}
        return max(
            (costs[kind] + HEADROOM * self.capacity[kind] - self.level[kind]) / per_s
            for kind, per_s in self.per_s.items()
        )

    def unknown_wait_s(self) -> float | None:
        """Before any reply has come, while a request that started waits to be sent (for a
        slot under the in-flight caps): how long the next may wait before looking again
        (None: it need not wait). Each request started then takes from a copy that knows
        nothing and is sent, unpaced, whenever a slot frees; 176 of 240 requests started
        at once under a limit of 60 a second did, and half were refused. Held back instead,
        they start by the copy the first reply teaches."""
        if self.answered or self.pending["requests"] <= 0:
            return None
        return UNKNOWN_POLL_S

    def take(self, tokens: float) -> dict[str, float]:
        """Take a starting request's cost; its mark (the levels it left), until `sending`."""
        level, shift, pending = self.level, self.shift, self.pending
        level["requests"] -= 1.0
        level["tokens"] -= tokens
        mark = {kind: level[kind] - shift[kind] + pending[kind] for kind in KINDS}
        pending["requests"] += 1.0
        pending["tokens"] += tokens
        return mark

    def sending(self, tokens: float, mark: dict[str, float]) -> None:
        """The request that took `tokens` and holds `mark` is being sent now: its mark becomes
        the level the server will leave on admitting it (see the class docstring)."""
        level, shift, pending = self.level, self.shift, self.pending
        pending["requests"] -= 1.0
        pending["tokens"] -= tokens
        now = time.monotonic()
        self._refill(now)
        mark.update({kind: level[kind] - shift[kind] + pending[kind] for kind in KINDS})
        mark[SENT], mark[SEQ], mark[SENT_AT] = 1.0, self.sent, now
        self.in_flight[self.sent] = (tokens, now)
        self.sent += 1

    def unsent(self, tokens: float, mark: dict[str, float]) -> None:
        """The request that took `tokens` and holds `mark` has ended: if it was never sent
        (budget, cancellation), its cost goes back; if it was, it is no longer in flight."""
        if SENT in mark:
            if SEQ in mark:
                self.in_flight.pop(int(mark[SEQ]), None)
            return
        mark[SENT] = 0.0  # once
        for kind, cost in (("requests", 1.0), ("tokens", tokens)):
            self.pending[kind] -= cost
            self.level[kind] += cost

    def learn(self, headers: Mapping[str, str], mark: dict[str, float]) -> None:
        """Correct the copy from the headers of the reply to the request that left `mark`. A
        429's `remaining` was read before the request's cost and nothing was taken: the same
        correction gives its cost back (it is taken again when the request is sent again). The
        requests sent before it, within REORDER_S, and not answered yet stay taken (see the
        class docstring), and the server's refill from the sending to the admission, where the
        reply tells it, is left out."""
        self.answered = True
        if SEQ in mark:
            self.in_flight.pop(int(mark[SEQ]), None)  # answered
        told = [(kind, headers.get(f"x-ratelimit-remaining-{kind}")) for kind in KINDS]
        if all(remaining is None for _, remaining in told):
            return  # a reply without the headers tells nothing (most servers send none)
        now = time.monotonic()
        self._refill(now)
        travelling = self._sent_before(mark)
        on_the_way = _to_admission_s(headers, mark, now)
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
            self.per_s[kind] = per_s
            self.capacity[kind] = max(left + reset * per_s, self.capacity.get(kind, 0.0))
            error = left - (mark[kind] + self.shift[kind]) - travelling[kind]
            error -= on_the_way * per_s
            self.shift[kind] += error
            self.level[kind] = min(self.capacity[kind], self.level[kind] + error)

    def _sent_before(self, mark: dict[str, float]) -> dict[str, float]:
        """The costs of the requests sent before the one holding `mark`, at most `reorder_s`
        before it, and not answered yet."""
        travelling = dict.fromkeys(KINDS, 0.0)
        if SEQ not in mark:
            return travelling
        seq, since = int(mark[SEQ]), mark[SENT_AT] - self.reorder_s
        for other, (tokens, sent_at) in self.in_flight.items():  # in the sending order
            if other > seq:
                break
            if sent_at >= since:
                travelling["requests"] += 1.0
                travelling["tokens"] += tokens
        return travelling


def _to_admission_s(headers: Mapping[str, str], mark: dict[str, float], now: float) -> float:
    """Seconds at most from the sending of the request holding `mark` to its admission: its
    reply came `now`, and the server held it `openai-processing-ms` (0: the reply does not say)."""
    processing = headers.get("openai-processing-ms")
    if processing is None or SENT_AT not in mark:
        return 0.0
    try:
        held_s = float(processing) / 1000.0
    except ValueError:
        return 0.0
    return max(0.0, now - held_s - mark[SENT_AT])
