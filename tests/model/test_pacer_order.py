"""The pacer's copy of the server's token bucket when requests reach the server later than
they were sent, or out of the order in which they were sent (as when the client's CPU is busy
sending hundreds of requests at once), against the built-in server's own limiter
(`AccountLimits`, as its routes call it), all on one fake clock (`testing/fake_clock.py`):
nothing sleeps or reads the wall clock."""

from __future__ import annotations

import asyncio

from healthbench_exp.builtin_endpoint.limits import AccountLimits, request_tokens
from healthbench_exp.config.schema import OfflineServerConfig
from healthbench_exp.model.pacer import EndpointPacer, Ticket, share_buckets
from healthbench_exp.model.pacer.tickets import TicketState
from healthbench_exp.testing.fake_clock import FakeClock

CAPACITY = 60_000  # tokens per 60 s window: 1,000 a second
COST = 1_000  # tokens per request: a 4,000-character prompt, no max_tokens
MESSAGES = [{"role": "user", "content": "x" * 4 * COST}]


def server(fake: FakeClock, capacity: int = CAPACITY, window_s: float = 60.0) -> AccountLimits:
    return AccountLimits(
        OfflineServerConfig(rate_limit_tokens=capacity, rate_limit_window_s=window_s), fake.now
    )


def post(limits: AccountLimits, cost: int = COST) -> tuple[int, dict[str, str]]:
    """One chat completion admitted (or refused) now and answered at once, as the built-in
    server's routes answer it: its status and headers (`openai-processing-ms` 0)."""
    headers, refusal = limits.admit("bench-judge", cost)
    if refusal is not None:
        return refusal[0], refusal[2]
    return 200, {**headers, "openai-processing-ms": "0"}


def test_a_reply_that_overtook_earlier_requests_does_not_give_their_cost_back() -> None:
    """A burst of requests is sent; the last one reaches the server first (a free connection
    while the others wait for theirs). Its reply's `x-ratelimit-remaining-tokens` was read
    before the server had taken the others' costs. No time passes."""
    fake = FakeClock()
    limits = server(fake)
    assert request_tokens({}, MESSAGES) == COST  # the server counts what the pacer takes

    async def scenario() -> tuple[int, int, int]:
        pacer = EndpointPacer("judge", clock=fake.clock)
        buckets = pacer.buckets

        async def send_one() -> Ticket:
            mark = await pacer.start(COST)
            buckets.sending(mark)
            return mark

        def answered(mark: Ticket, reply: tuple[int, dict[str, str]]) -> int:
            buckets.learn(reply[1], mark, admitted=reply[0] != 429)  # as the endpoint does
            buckets.ended(mark)
            return reply[0]

        first = await send_one()  # one reply tells the limits
        assert answered(first, post(limits)) == 200
        burst = []  # as many as the copy holds: then the pacer would hold the next one back
        while buckets.wait_s(COST) <= 0:
            burst.append(await send_one())
        assert len(burst) >= 50
        # the last one sent reaches the server first and is answered while the rest travel
        statuses = [answered(burst[-1], post(limits))]
        # what the pacer lets start now, before any other reply has come
        more = []
        while buckets.wait_s(COST) <= 0 and len(more) < CAPACITY // COST:
            more.append(await send_one())
        for mark in [*burst[:-1], *more]:  # then the others reach the server, in order
            statuses.append(answered(mark, post(limits)))
        return len(burst), len(more), statuses.count(429)

    burst, more, refused = asyncio.run(scenario())
    # the copy was not raised by the cost of the requests still travelling (before: by all 50
    # or so of them, and as many more started at once; the server refused those)
    assert more <= 2 and refused == 0, (burst, more, refused)


def test_the_refill_while_a_request_travels_to_the_server_is_not_counted_twice() -> None:
    """With the bucket drained, one request is sent and reaches the server 0.1 s later (the
    client busy), while the bucket refills 10,000 tokens: the server's remaining at admission
    holds that refill, and so does the copy's own, from the sending. The reply says how long
    the server held the request (`openai-processing-ms`), so the copy counts it once."""
    capacity, cost, travel_s = 100_000, 2_000, 0.1  # 100,000 tokens a second
    fake = FakeClock()
    limits = server(fake, capacity, 1.0)

    async def scenario() -> tuple[int, int]:
        pacer = EndpointPacer("judge", clock=fake.clock)
        buckets = pacer.buckets

        async def send_one() -> Ticket:
            mark = await pacer.start(cost)
            buckets.sending(mark)
            return mark

        def answered(mark: Ticket, reply: tuple[int, dict[str, str]]) -> int:
            buckets.learn(reply[1], mark, admitted=reply[0] != 429)
            buckets.ended(mark)
            return reply[0]

        statuses = [answered(await send_one(), post(limits, cost))]
        while buckets.wait_s(cost) <= 0:  # drain it, each answered at once
            statuses.append(answered(await send_one(), post(limits, cost)))
        waiting = asyncio.ensure_future(send_one())  # when the copy holds its cost again
        await fake.advance(buckets.wait_s(cost))
        late = await waiting
        await fake.advance(travel_s)  # on its way
        statuses.append(answered(late, post(limits, cost)))
        more = []  # what the pacer lets start now, at once
        while buckets.wait_s(cost) <= 0 and len(more) < capacity // cost:
            more.append(await send_one())
        statuses += [answered(mark, post(limits, cost)) for mark in more]
        return len(more), statuses.count(429)

    more, refused = asyncio.run(scenario())
    # the copy held the server's refill of the 0.1 s (5 requests), not twice that: before,
    # about 5 more started and were refused
    assert refused == 0 and more >= 3, (more, refused)


def test_a_long_reply_sent_well_before_does_not_hold_the_copy_back() -> None:
    """A request still running long after it was sent (a long reply) was admitted long before
    a later one: the later reply's correction counts its cost once, as the server did. Only
    the requests sent within `reorder_s` before it stay taken a second time."""
    fake = FakeClock()
    limits = server(fake)

    async def scenario() -> tuple[float, float]:
        buckets = EndpointPacer("model", clock=fake.clock).buckets
        buckets.reorder_s = 0.05

        async def send_one() -> tuple[Ticket, dict[str, str]]:
            mark = buckets.take(COST)
            buckets.sending(mark)
            return mark, limits.admit("model", COST)[0]

        buckets.learn(*reversed(await send_one()))  # one reply tells the limits
        await send_one()  # a long reply: still running at the end
        await fake.advance(0.06)
        await send_one()  # sent just before the next: it may still be on its way
        mark, headers = await send_one()
        buckets.learn(headers, mark)
        return buckets.level["tokens"], float(headers["x-ratelimit-remaining-tokens"])

    level, left = asyncio.run(scenario())
    # the copy is the server's level less the one sent just before (counted again), not less
    # the long one too (a refill of 1,000 tokens a second: under 100 since)
    assert left - COST - 100 <= level <= left - COST + 100, (level, left)


def test_requests_are_in_flight_from_their_sending_until_they_end() -> None:
    async def scenario() -> None:
        pacer = EndpointPacer("judge", clock=FakeClock().clock)
        buckets = pacer.buckets
        answered = await pacer.start(10.0)
        buckets.sending(answered)
        failed = await pacer.start(20.0)
        buckets.sending(failed)
        unsent = await pacer.start(30.0)
        assert list(buckets.in_flight.values()) == [
            (10.0, answered.sent_at),
            (20.0, failed.sent_at),
        ]
        buckets.learn({}, answered)  # a reply (here without headers)
        buckets.ended(answered)  # learnt from: out of flight already, nothing changes
        buckets.ended(failed)  # ended without a reply (an error, a timeout)
        buckets.ended(unsent)
        assert buckets.in_flight == {} and buckets.pending == {"requests": 0.0, "tokens": 0.0}
        assert [ticket.state for ticket in (answered, failed, unsent)] == [
            TicketState.ANSWERED,
            TicketState.UNANSWERED,
            TicketState.RETURNED,
        ]

    asyncio.run(scenario())


def test_the_model_and_a_judge_of_one_model_on_one_account_keep_one_copy() -> None:
    """A model under test that is also the judge draws on one limit. The model sends what the
    bucket holds; none of its replies has come back when the judge would start: with one copy
    the judge waits, where its own copy (learnt before the model's burst) let it spend the
    bucket again and the server refused that."""
    fake = FakeClock()
    limits = server(fake)
    account = ("https://api.example/v1", "key", "gpt-x")
    model, judge, other = (
        EndpointPacer(role, clock=fake.clock) for role in ("model", "judge", "jury:b")
    )
    share_buckets([(account, model), (account, judge), ((*account[:2], "gpt-y"), other)])
    assert model.buckets is judge.buckets and other.buckets is not model.buckets

    async def scenario() -> tuple[int, int]:
        async def send(pacer: EndpointPacer) -> tuple[Ticket, dict[str, str] | None]:
            mark = await pacer.start(COST)
            pacer.buckets.sending(mark)
            headers, refusal = limits.admit(account[2], COST)  # the model the account names
            return mark, None if refusal is not None else headers

        for pacer in (model, judge):  # one reply each tells the limits
            mark, headers = await send(pacer)
            assert headers is not None
            pacer.buckets.learn(headers, mark)
        burst = 0
        while model.buckets.wait_s(COST) <= 0:  # the model's first burst
            burst += 1
            assert (await send(model))[1] is not None
        refused = started = 0  # what the judge would start now
        while judge.buckets.wait_s(COST) <= 0 and started < burst:
            started += 1
            refused += (await send(judge))[1] is None
        return started, refused

    started, refused = asyncio.run(scenario())
    assert started <= 1 and refused == 0, (started, refused)


def test_roles_on_one_account_keep_the_limits_their_users_stated() -> None:
    """The model states no limit, the judge 60,000 tokens a minute, a second judge of the
    same model 30,000: the one copy they share paces by the lowest stated (before, the first
    pacer's copy was kept and the judges' statements were lost: nothing paced them)."""
    account = ("https://api.example/v1", "key", "gpt-x")
    clock = FakeClock().clock
    model = EndpointPacer("model", clock=clock)
    judge = EndpointPacer("judge", tokens_per_minute=60_000, clock=clock)
    jury = EndpointPacer("jury:b", tokens_per_minute=30_000, clock=clock)
    share_buckets([(account, model), (account, judge), (account, jury)])
    shared = model.buckets
    assert judge.buckets is shared and jury.buckets is shared
    assert shared.per_s == {"tokens": 500.0}  # 30,000 a minute
    assert shared.stated_per_minute == {"tokens": 30_000}
