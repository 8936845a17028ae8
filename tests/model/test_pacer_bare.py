"""429s without any rate-limit header (no `x-ratelimit-*`, no `retry-after`, no wait in the
message), as most OpenAI-compatible servers other than OpenAI's send them, end to end: the real
openai client against the built-in server (`rate_limited_first`, `rate_limit_bare`)."""

from __future__ import annotations

import asyncio

from healthbench_exp.config.schema import EndpointConfig
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.endpoint import ChatEndpoint, Shared, Transport
from healthbench_exp.model.health import Halt
from healthbench_exp.model.pacer import EndpointPacer
from healthbench_exp.model.pacer.refusals import DEFAULT_WAIT_S


async def send_calls(base_url: str, calls: int, in_flight: int = 8) -> EndpointPacer:
    """`calls` chat completions through one endpoint, `in_flight` at most (as a run's rows
    start while others end); its pacer once all are answered."""
    config = EndpointConfig(name="bare", system_message=None, max_concurrency=in_flight)
    endpoint = ChatEndpoint(
        "judge",
        config,
        base_url=base_url,
        api_key="k",
        temperature=None,
        max_tokens=16,
        transport=Transport(max_retries=0, timeout_s=30),
        shared=Shared(halt=Halt(), clock=SYSTEM_CLOCK),
    )
    prompts = [f"{i:04d} say something" for i in range(calls)]
    try:
        await asyncio.gather(
            *(endpoint.complete([{"role": "user", "content": p}], tag="t") for p in prompts)
        )
    finally:
        await endpoint.close()
    return endpoint.pacer


def test_a_burst_of_429s_without_headers_at_the_start_costs_seconds(loopback_server) -> None:
    """The first 9 of 60 calls, 8 in flight, are refused without any rate header: the pace is
    cut to about 1 request a second (nothing sustained yet; the ninth, sent again after the
    cut, cuts it once more) and doubles every second from there: the 60 are answered about
    6 s after the first request. Before, it rose by 5% of 1 request a second every second:
    32 s."""
    calls = 60
    server = loopback_server(latency_ms=40, jitter_ms=20, rate_limited_first=9)
    pacer = asyncio.run(send_calls(server.base_url, calls))
    stats = server.stats()
    assert stats["rate_limited"] == 9 and stats["requests"] == calls, stats
    assert pacer.requeued == 9 and pacer.base_rate is not None and pacer.base_rate <= 1.1
    # the server's own times: its first request to its last reply (the doubling sets it:
    # 1 + 2 + 4 + 8 + 16 + 32 starts in 6 s after the pause, whatever the machine's load)
    span = stats["last_reply_at"] - stats["first_request_at"]
    assert span <= DEFAULT_WAIT_S + 9.0, stats


def test_a_sustained_limit_without_headers_is_followed_with_few_429s(loopback_server) -> None:
    """A server that admits 50 requests a second (a bucket of 100, full at the start) and
    answers 429 without any rate header beyond; 400 calls, 32 in flight at most, so most have
    started and wait for a slot when the bucket runs dry. Those go back to the pacer instead
    of being sent into the limit. What the server counted: <= 5% refused."""
    calls = 400
    server = loopback_server(
        latency_ms=40, jitter_ms=20, rate_limit_requests=100, rate_limit_window_s=2.0,
        rate_limit_bare=True,
    )  # fmt: skip
    asyncio.run(send_calls(server.base_url, calls, in_flight=32))
    stats = server.stats()
    assert stats["requests"] == calls and stats["limited_requests"] == calls, stats
    assert stats["rate_limited"] <= 0.05 * (calls + stats["rate_limited"]), stats["rate_limited"]
