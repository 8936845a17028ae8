"""One clock per run through the request path: an endpoint made with the run's `Shared` reads
every time and sleeps every wait on the run's `Clock` (here a fake one whose sleeps are
recorded and pass at once): its pacer and buckets, its concurrency limit, its reply times, and
the retries' waits of both posters (the openai client and `runner.http_client=direct`), end
to end against the built-in server."""

from __future__ import annotations

import asyncio

import pytest

from healthbench_exp.config.schema import EndpointConfig, HttpClient
from healthbench_exp.core.endpoint_errors import RequestFailed
from healthbench_exp.model.clock import Clock
from healthbench_exp.model.endpoint import ChatEndpoint, Shared, Transport
from healthbench_exp.model.health import Halt
from healthbench_exp.testing.fake_clock import FakeClock

RETRIES = 2


class RecordingClock:
    """A fake clock whose every sleep is recorded and moves its time on at once."""

    def __init__(self) -> None:
        self.fake = FakeClock()
        self.slept: list[float] = []
        self.clock = Clock(self.fake.now, self.sleep)

    async def sleep(self, delay: float) -> None:
        self.slept.append(delay)
        self.fake.time += max(0.0, delay)
        await asyncio.sleep(0)


@pytest.mark.parametrize("http_client", [HttpClient.aiohttp, HttpClient.direct])
def test_the_endpoint_reads_and_sleeps_on_the_runs_clock(
    loopback_server, http_client: HttpClient
) -> None:
    """Every request answered 500 without Retry-After: the RETRIES backoff waits are slept on
    the run's clock (recorded, none on the wall clock), which the reply times are read on."""
    server = loopback_server(fail_status=500)
    run = RecordingClock()

    async def scenario() -> ChatEndpoint:
        endpoint = ChatEndpoint(
            "judge",
            EndpointConfig(name="m", system_message=None, max_concurrency=4),
            base_url=server.base_url,
            api_key="k",
            temperature=None,
            max_tokens=16,
            transport=Transport(max_retries=RETRIES, timeout_s=30, http_client=http_client),
            shared=Shared(halt=Halt(), clock=run.clock),
        )
        try:
            with pytest.raises(RequestFailed):
                await endpoint.complete([{"role": "user", "content": "hello"}], tag="t")
        finally:
            await endpoint.close()
        return endpoint

    endpoint = asyncio.run(scenario())
    assert len(run.slept) == RETRIES and all(wait > 0 for wait in run.slept), run.slept
    assert endpoint.last_reply_at == run.fake.now()  # the last 500, on the run's clock
    assert endpoint.pacer.clock is run.clock
    assert endpoint.pacer.buckets.clock == run.fake.now
    assert endpoint.limit.clock == run.fake.now
