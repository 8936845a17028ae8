"""The pacer uses the whole rate limit, from the first request, with few refusals: requests sent
concurrently through a `ChatEndpoint` (the openai client, over HTTP) to the built-in server
under OpenAI-style limits (a requests-per-minute limit, a tokens limit, or both), its replies
jittered. The server's own counters tell what it admitted and refused; the limit's allowance is
its bucket at the first request (full) plus its refill until the last reply."""

from __future__ import annotations

import asyncio

import pytest

from healthbench_exp.config.schema import EndpointConfig
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.endpoint import ChatEndpoint, Shared, Transport
from healthbench_exp.model.health import Halt

REQUESTS = 120  # sent at once; at most CONCURRENCY in flight
CONCURRENCY = 24
PROMPT_TOKENS, MAX_TOKENS = 400, 100  # what the server counts: 4 characters a token
COST = PROMPT_TOKENS + MAX_TOKENS
WINDOW_S = 1.0
CASES = {
    # 30 requests a second bind; the tokens limit allows 50 a second
    "requests": {"rate_limit_requests": 30, "rate_limit_tokens": 50 * COST},
    # 30 requests' tokens a second bind; the requests limit allows 50 a second
    "tokens": {"rate_limit_requests": 50, "rate_limit_tokens": 30 * COST},
}


async def send_all(base_url: str) -> None:
    config = EndpointConfig(name="paced", system_message=None, max_concurrency=CONCURRENCY)
    endpoint = ChatEndpoint(
        "judge",
        config,
        base_url=base_url,
        api_key="k",
        temperature=None,
        max_tokens=MAX_TOKENS,
        transport=Transport(max_retries=0, timeout_s=30),
        shared=Shared(halt=Halt(), clock=SYSTEM_CLOCK),
    )
    prompts = [f"{i:04d} " + "x" * (4 * PROMPT_TOKENS - 5) for i in range(REQUESTS)]
    try:
        await asyncio.gather(
            *(endpoint.complete([{"role": "user", "content": p}], tag="t") for p in prompts)
        )
    finally:
        await endpoint.close()


@pytest.mark.parametrize("binding", sorted(CASES))
def test_paced_requests_use_the_binding_limit_and_are_almost_never_refused(
    binding: str, loopback_server
) -> None:
    limits = CASES[binding]
    server = loopback_server(
        latency_ms=150, jitter_ms=100, rate_limit_window_s=WINDOW_S, limited_role="all", **limits
    )
    asyncio.run(send_all(server.base_url))
    stats = server.stats()
    assert stats["requests"] == REQUESTS
    # the first burst (before any reply has told the limits) fits in the full buckets, so a
    # 429 means that requests were sent beyond what the server's headers allowed
    assert stats["rate_limited"] <= 0.01 * REQUESTS, stats
    admitted = stats[f"limited_{binding}"]
    assert admitted == REQUESTS * (1 if binding == "requests" else COST)
    capacity = limits[f"rate_limit_{binding}"]
    span = stats["last_reply_at"] - stats["first_request_at"]  # about 3.2 s
    use = admitted / (capacity + capacity / WINDOW_S * span)
    # the last reply comes up to 0.25 s after the last admission: 0.93 at most (0.92 to 0.93
    # measured; a client starved of CPU sends late)
    assert use >= 0.8, (use, span)
