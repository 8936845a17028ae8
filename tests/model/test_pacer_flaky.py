"""A flaky provider on the fake clock (`testing/fake_clock.py`): 10% of the requests refused at
random, 429, 500 and 503 in equal shares, each with `retry-after-ms: 50` and no rate-limit
header (an overloaded provider, not a limit). A brief 429 delays the request refused alone: the
run costs little more than a clean one and the pace is never cut. A limit whose 429s name such a
short wait is still followed once its refusals grow common. Every figure is fake seconds."""

from __future__ import annotations

import asyncio
import random

from healthbench_exp.builtin_endpoint.limits import AccountLimits
from healthbench_exp.config.schema import OfflineServerConfig
from healthbench_exp.model.pacer import EndpointPacer, classify_429
from healthbench_exp.testing.fake_clock import FakeClock

BRIEF = {"retry-after-ms": "50"}  # the flaky provider's every refusal: come back in 50 ms
RETRY_S = 0.05  # a 500 or 503 is retried by the poster after that same Retry-After


async def run_flaky(
    fake: FakeClock,
    pacer: EndpointPacer,
    *,
    requests: int,
    error_rate: float,
    latency_s: float,
    workers: int = 32,
    server: AccountLimits | None = None,
    limited_first: int = 0,
    seed: int = 0,
) -> tuple[int, float]:
    """`requests` calls through `pacer` by `workers` at once, as the endpoint makes them: each
    sending is refused at random with `error_rate` (a third each 429, 500, 503, all carrying
    BRIEF), and by `server`'s limits (a 429 carrying BRIEF too) when given. A 5xx is retried
    after its Retry-After without the pacer (the poster's retries); a 429 goes to
    `pacer.refused` and starts again. The 429s, and the fake seconds until the last reply."""
    draws = random.Random(seed)
    refused = 0
    left = requests
    sendings = 0
    began = fake.now()

    async def worker() -> None:
        nonlocal refused, left, sendings
        while left > 0:
            left -= 1
            while True:
                ticket = await pacer.start(0.0)
                pacer.buckets.sending(ticket)
                sendings += 1
                if sendings <= limited_first:  # a limit's 429, no header: not brief
                    refused += 1
                    await fake.sleep(latency_s / 10)
                    pacer.buckets.learn({}, ticket, admitted=False)
                    await pacer.refused(classify_429({}, {}), ticket.started_at)
                    continue
                while (draw := draws.random()) < error_rate and draw < 2 * error_rate / 3:
                    await fake.sleep(latency_s / 10 + RETRY_S)  # a 500/503, retried
                limited = server is not None and server.admit("m", 0)[1] is not None
                if limited or draw < error_rate:  # a 429
                    refused += 1
                    await fake.sleep(latency_s / 10)
                    pacer.buckets.learn(BRIEF, ticket, admitted=False)
                    await pacer.refused(classify_429(BRIEF, {}), ticket.started_at)
                    continue
                await fake.sleep(latency_s)
                pacer.buckets.learn({}, ticket)
                pacer.succeeded(ticket.started_at)
                break

    tasks = [asyncio.ensure_future(worker()) for _ in range(workers)]
    while not all(task.done() for task in tasks):
        await fake.advance(0.05)
    await asyncio.gather(*tasks)
    return refused, fake.now() - began


def test_a_flaky_provider_costs_little_and_never_cuts_the_pace() -> None:
    """400 requests, 32 at once, at 400 ms and at 20 ms a reply: with 10% refused at random the
    run takes at most 1.5 times the clean run's fake seconds, and the pace stays unpaced
    (before, every such 429 paused the endpoint and cut its pace: about ten times as long)."""

    async def timed(error_rate: float, latency_s: float) -> tuple[int, float, float | None]:
        fake = FakeClock()
        pacer = EndpointPacer("judge", clock=fake.clock)
        refused, took = await run_flaky(
            fake, pacer, requests=400, error_rate=error_rate, latency_s=latency_s
        )
        return refused, took, pacer.base_rate

    for latency_s in (0.4, 0.02):
        _, clean, _ = asyncio.run(timed(0.0, latency_s))
        refused, flaky, pace = asyncio.run(timed(0.1, latency_s))
        assert refused >= 8, refused  # the 429s came (about 13 in 440 sendings)
        assert pace is None  # never cut
        assert flaky <= 1.5 * clean, (latency_s, flaky, clean)


def test_a_flaky_provider_after_a_brief_limit_costs_little() -> None:
    """The same flaky provider whose first 4 answers were a limit's 429s without any header:
    that limit cuts the pace once; the random brief 429s after it are not that limit's (they
    name a short wait, its did not), so they delay their own requests alone and the run takes
    at most 1.5 times the clean run's fake seconds after the same limit (before, each of them
    cut the pace again: over ten times as long)."""

    async def timed(error_rate: float, latency_s: float) -> float:
        fake = FakeClock()
        pacer = EndpointPacer("judge", clock=fake.clock)
        _, took = await run_flaky(
            fake,
            pacer,
            requests=400,
            error_rate=error_rate,
            latency_s=latency_s,
            limited_first=4,
        )
        return took

    for latency_s in (0.4, 0.02):
        clean, flaky = asyncio.run(timed(0.0, latency_s)), asyncio.run(timed(0.1, latency_s))
        assert flaky <= 1.5 * clean, (latency_s, flaky, clean)


def test_a_limit_whose_429s_name_a_short_wait_is_still_followed() -> None:
    """A server that admits 600 requests a minute (a bucket of 600) and refuses beyond it with
    a 429 carrying only `retry-after-ms: 50`: the refusals soon pass BRIEF_SHARE_MAX of the
    answers, so they pace the endpoint as a limit does: few refused, most of the limit used."""

    async def scenario() -> tuple[int, float, int, float | None]:
        fake = FakeClock()
        server = AccountLimits(
            OfflineServerConfig(rate_limit_requests=600, rate_limit_window_s=60.0), fake.now
        )
        pacer = EndpointPacer("judge", clock=fake.clock)
        refused, took = await run_flaky(
            fake, pacer, requests=2_000, error_rate=0.0, latency_s=0.4, server=server
        )
        return refused, took, server.admitted["limited_requests"], pacer.base_rate

    refused, took, admitted, pace = asyncio.run(scenario())
    allowed = 600 + 10 * took
    assert pace is not None  # paced as a limit
    assert refused <= 0.05 * (admitted + refused), (refused, admitted)
    assert admitted >= 0.85 * allowed, (admitted, allowed, took)
