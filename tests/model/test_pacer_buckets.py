"""The pacer at a small bucket (issue 46): a first burst no larger than a first-tier bucket, a
waiting request that starts as soon as a reply makes room, each request's cost counted once
whatever order the server admitted and answered them in, a stated token limit that paces from
the first request, and a limit that moves. The server's side is the built-in server's own
limiter (`AccountLimits`), called in-process on the same fake clock (`testing/fake_clock.py`):
nothing sleeps or reads the wall clock, except against the built-in server in its own process
(`loopback_server`), whose limits refill on the wall clock."""

from __future__ import annotations

import asyncio

import pytest

from healthbench_exp.builtin_endpoint.limits import AccountLimits, Bucket, parse_schedule
from healthbench_exp.config.schema import EndpointConfig, OfflineServerConfig
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.endpoint import ChatEndpoint, Shared, Transport
from healthbench_exp.model.health import Halt
from healthbench_exp.model.pacer import EndpointPacer, Ticket
from healthbench_exp.model.pacer.buckets import (
    FIRST_BURST_TOKENS,
    FIRST_REPLY_WAIT_S,
    HEADROOM,
    REORDER_FLOOR_S,
    HeaderBuckets,
)
from healthbench_exp.testing.fake_clock import FakeClock

COST = 2_448  # a judge call: a 400-token prompt and max_tokens 2,048


def limits(fake: FakeClock, capacity: int, window_s: float = 60.0) -> AccountLimits:
    return AccountLimits(
        OfflineServerConfig(rate_limit_tokens=capacity, rate_limit_window_s=window_s), fake.now
    )


def sent(buckets: HeaderBuckets, cost: float = COST) -> Ticket:
    mark = buckets.take(cost)
    buckets.sending(mark)
    return mark


def test_before_any_reply_the_requests_out_hold_at_most_a_first_tier_bucket() -> None:
    """30 judge calls started at once, before any reply: a first-tier bucket (30,000 tokens)
    holds 12 of them; the 13th waits for a reply (18 of 30 were refused before)."""

    async def scenario() -> tuple[int, float | None, float | None]:
        pacer = EndpointPacer("judge", clock=FakeClock().clock)
        buckets = pacer.buckets
        started = 0
        while buckets.unknown_wait_s(COST) is None and started < 30:
            mark = await pacer.start(COST)
            buckets.sending(mark)  # sent at once
            started += 1
        held = buckets.unknown_wait_s(COST)
        buckets.learn({}, mark)  # a reply (without headers: a server with no limits)
        return started, held, buckets.unknown_wait_s(COST)

    started, held, after = asyncio.run(scenario())
    assert started == int(FIRST_BURST_TOKENS // COST) == 12
    assert held == FIRST_REPLY_WAIT_S  # held until a reply, 2 s at most
    assert after is None  # a reply came: nothing more is held back


@pytest.mark.parametrize("sent_before_s", [0.0, REORDER_FLOOR_S + 0.01])
def test_a_waiting_request_starts_as_soon_as_a_reply_makes_room(sent_before_s: float) -> None:
    """Nine requests out at once drain the bucket (10 judge calls a minute: a wait of minutes
    for the next); `sent_before_s` later the server refunds five (as a lower count) and the
    reply to a fresh request shows the room. Sent longer ago than the reorder window
    (`HeaderBuckets.reorder_window`), the eight others still unanswered were admitted before
    the fresh one: the waiting request starts at the fresh reply's tick. Sent with it, any of
    them may still be on its way and be admitted after it, so the copy keeps their costs taken:
    its level is 2 calls short, and the request waits 19.2 s, their cost at the refill (a wait
    once seen on the fake clock and thought a bug: it is that hold, not a missed wake-up)."""
    fake = FakeClock()
    server = limits(fake, capacity=10 * COST)

    async def scenario() -> tuple[float, float]:
        pacer = EndpointPacer("judge", clock=fake.clock)
        buckets = pacer.buckets
        marks = [sent(buckets) for _ in range(9)]
        replies = [server.admit("m", COST)[0] for _ in marks]
        buckets.learn(replies[-1], marks[-1])  # the last admitted: the bucket is drained
        waiting = asyncio.ensure_future(pacer.start(COST))
        await fake.advance(sent_before_s)
        assert not waiting.done()  # a wait of minutes at this refill
        server.buckets("m")["tokens"].level += 5 * COST  # the server refunds (as a lower count)
        fresh = sent(buckets, 1.0)
        buckets.learn(server.admit("m", 1)[0], fresh)
        await fake.settle()
        room_at = fake.now()
        if sent_before_s < buckets.reorder_window():  # the eight may still be travelling
            room_at += buckets.wait_s(COST)
            assert room_at - fake.now() == pytest.approx(
                (2 + 1 + HEADROOM * 10) * COST / (10 * COST / 60), rel=1e-3
            )
            await fake.advance(room_at - fake.now() - 0.001)
            assert not waiting.done()
            await fake.advance(0.001)
        assert waiting.done()  # at once: not at the end of the wait worked out before
        return waiting.result().started_at, room_at

    started_at, room_at = asyncio.run(scenario())
    assert started_at == pytest.approx(room_at, abs=1e-9)


def test_requests_sent_apart_are_not_counted_twice_by_a_reply_that_overtook_them() -> None:
    """A small bucket's requests go out one every half second; one with a long reply is still
    running when the next one's reply comes. It was admitted long before that one (the server
    held each for its latency alone, as `openai-processing-ms` tells), so the copy counts its
    cost once, as the server did, not again (with a fixed 2 s window it ran a request low)."""
    fake = FakeClock()
    server = limits(fake, capacity=20 * COST)

    async def scenario() -> tuple[float, float]:
        buckets = HeaderBuckets(fake.now)
        first = sent(buckets)
        headers = server.admit("m", COST)[0]
        buckets.learn({**headers, "openai-processing-ms": "0"}, first)  # one reply tells
        long_one = sent(buckets)
        server.admit("m", COST)
        await fake.advance(0.1)  # the next goes out later
        later = sent(buckets)
        headers = server.admit("m", COST)[0]
        buckets.learn({**headers, "openai-processing-ms": "0"}, later)  # the long one runs on
        buckets.ended(long_one)
        left = float(headers["x-ratelimit-remaining-tokens"])
        return buckets.level["tokens"], left

    level, left = asyncio.run(scenario())
    refill = 20 * COST / 60.0 * 0.2  # at most, since
    assert left - 10 <= level <= left + refill, (level, left)


def test_a_request_admitted_after_another_but_answered_before_it_stays_taken() -> None:
    """Two requests sent together; the server admits the second first, and answers the first
    sooner (a shorter reply). When the second's reply comes, its `remaining` was read before
    the first's admission: the first, answered already, keeps its cost taken in the copy (the
    copy ran a request's cost high, and the server refused what it let start)."""
    fake = FakeClock()
    server = limits(fake, capacity=20 * COST)

    async def scenario() -> tuple[float, float]:
        buckets = HeaderBuckets(fake.now)
        probe = sent(buckets)
        buckets.learn({**server.admit("m", COST)[0], "openai-processing-ms": "0"}, probe)
        first, second = sent(buckets), sent(buckets)
        second_headers = server.admit("m", COST)[0]  # admitted first
        first_headers = server.admit("m", COST)[0]
        # the first's reply comes now, admitted just now; the second's next, admitted 1 s ago
        buckets.learn({**first_headers, "openai-processing-ms": "0"}, first)
        buckets.learn({**second_headers, "openai-processing-ms": "1000"}, second)
        return buckets.level["tokens"], float(first_headers["x-ratelimit-remaining-tokens"])

    level, left = asyncio.run(scenario())
    # the server's level is the first's `remaining` (refill of 816 tokens a second aside)
    assert level <= left + 100, (level, left)


def test_a_stated_token_limit_paces_from_the_first_request() -> None:
    """`judge.rate_limit.tokens_per_minute`: the first requests go out as a bucket of that
    limit holds them (at most a first burst), the next at its refill, before any reply."""
    per_minute = 6 * COST  # a bucket of six judge calls, refilled over a minute

    async def scenario() -> tuple[int, float]:
        pacer = EndpointPacer("judge", tokens_per_minute=per_minute, clock=FakeClock().clock)
        buckets = pacer.buckets
        started = 0
        while buckets.wait_s(COST) <= 0 and started < 20:
            mark = await pacer.start(COST)  # no time passes: it starts at once
            buckets.sending(mark)
            started += 1
        return started, buckets.wait_s(COST)

    started, wait = asyncio.run(scenario())
    assert started == 5  # six, less the headroom kept unspent
    expected = (COST + HEADROOM * per_minute - (per_minute - 5 * COST)) / (per_minute / 60.0)
    assert wait == pytest.approx(expected, rel=0.01)


def test_the_server_schedule_lets_other_jobs_spend_a_share_of_the_refill() -> None:
    schedule = parse_schedule("2:0.5, 1:0.25,4:0")
    assert schedule == [(1.0, 0.25), (2.0, 0.5), (4.0, 0.0)]
    bucket = Bucket(1000, 1.0, schedule, clock=FakeClock().now)
    bucket.level = 0.0
    bucket.started = bucket.updated = 0.0
    bucket.refill(0.5)  # nobody else yet
    assert bucket.level == pytest.approx(500.0)
    bucket.level, bucket.updated = 0.0, 2.0
    bucket.refill(2.5)  # half goes to the others
    assert bucket.level == pytest.approx(250.0)
    with pytest.raises(ValueError, match="T:S"):
        parse_schedule("5")
    with pytest.raises(ValueError, match="T:S"):
        parse_schedule("5:1.0")


async def send_judge_calls(base_url: str, calls: int) -> None:
    config = EndpointConfig(name="small", system_message=None, max_concurrency=256)
    endpoint = ChatEndpoint(
        "judge",
        config,
        base_url=base_url,
        api_key="k",
        temperature=None,
        max_tokens=COST - 400,
        transport=Transport(max_retries=0, timeout_s=30),
        shared=Shared(halt=Halt(), clock=SYSTEM_CLOCK),
    )
    prompts = [f"{i:04d} " + "x" * (4 * 400 - 5) for i in range(calls)]
    try:
        await asyncio.gather(
            *(endpoint.complete([{"role": "user", "content": p}], tag="t") for p in prompts)
        )
    finally:
        await endpoint.close()


def test_a_small_bucket_is_used_whole_and_almost_never_refused(loopback_server) -> None:
    """A first-tier bucket, time scaled down a hundredfold: 30,000 tokens per 0.6 s, about
    twelve judge calls, 40 +- 20 ms a reply; 60 calls started at once through the openai client.
    Before: 18 of the first 30 refused, then a stall of most of the run."""
    calls, capacity, window_s = 60, 30_000, 0.6
    server = loopback_server(
        latency_ms=40,
        jitter_ms=20,
        rate_limit_tokens=capacity,
        rate_limit_window_s=window_s,
        limited_role="all",
    )
    asyncio.run(send_judge_calls(server.base_url, calls))
    stats = server.stats()
    assert stats["requests"] == calls and stats["limited_tokens"] == calls * COST
    assert stats["rate_limited"] <= 2, stats  # 3% at most (none, mostly)
    span = stats["last_reply_at"] - stats["first_request_at"]
    use = stats["limited_tokens"] / (capacity + capacity / window_s * span)
    assert use >= 0.85, (use, span)  # 0.95 to 0.97 measured; the last reply's latency is lost
