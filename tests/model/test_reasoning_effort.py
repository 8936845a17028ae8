"""`reasoning_effort` as the judge's and the model's request parameter, seen by a real server.

The built-in loopback server's own routes answer; a subclass records each chat request's body
before answering it, so the test reads what the real openai client actually sent.
"""

from __future__ import annotations

import asyncio
import json
import typing
from dataclasses import replace
from typing import Any

import pytest
from aiohttp import web
from openai.types.shared import ReasoningEffort

from healthbench_exp.builtin_endpoint.routes import OfflineServer
from healthbench_exp.config.checks import validate
from healthbench_exp.config.schema import REASONING_EFFORTS, ConfigError, EndpointConfig
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.endpoint import ChatEndpoint, Shared, Transport, request_body
from healthbench_exp.model.health import Halt
from tests.config.test_config import composed


class RecordingServer(OfflineServer):
    """The built-in server, keeping the JSON body of every chat-completions request."""

    def __init__(self) -> None:
        super().__init__(composed("experiment=demo").offline_server, clock=SYSTEM_CLOCK.now)
        self.bodies: list[dict[str, Any]] = []

    async def post(self, request: web.Request) -> web.Response:
        if request.path.rstrip("/") == "/v1/chat/completions":
            self.bodies.append(json.loads(await request.read()))
        return await super().post(request)


async def send_one(config: EndpointConfig, temperature: float | None, max_tokens: int | None):
    """One request through a ChatEndpoint to a RecordingServer; the body the server got."""
    server = RecordingServer()
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    endpoint = ChatEndpoint(
        "judge",
        config,
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key="k",
        temperature=temperature,
        max_tokens=max_tokens,
        transport=Transport(max_retries=0, timeout_s=10),
        shared=Shared(halt=Halt(), clock=SYSTEM_CLOCK),
    )
    try:
        await endpoint.complete([{"role": "user", "content": "hello"}], tag="t")
    finally:
        await endpoint.close()
        await runner.cleanup()
    (body,) = server.bodies
    return body


def test_the_gpt54_judge_sends_reasoning_effort_low_and_no_temperature() -> None:
    judge = composed("judge=gpt54").judge
    body = asyncio.run(send_one(judge, judge.temperature, judge.max_tokens))
    assert body["model"] == "gpt-5.4-2026-03-05"
    assert body["reasoning_effort"] == "low"
    assert "temperature" not in body and "max_tokens" not in body
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful assistant."}


def test_reasoning_effort_is_sent_for_any_model_and_judge() -> None:
    model = composed("model=gpt41mini", "model.reasoning_effort=high").model
    body = asyncio.run(send_one(model, 0.5, 2048))
    sent = (body["reasoning_effort"], body["temperature"], body["max_tokens"])
    assert sent == ("high", 0.5, 2048)
    judge = composed("judge.reasoning_effort=minimal").judge
    assert request_body(judge, judge.temperature, judge.max_tokens)["reasoning_effort"] == "minimal"
    assert "reasoning_effort" not in request_body(composed().judge, 0.5, 2048)


def test_the_cache_key_covers_reasoning_effort() -> None:
    judge = composed("judge=gpt54").judge
    low = request_body(judge, None, None)
    high = request_body(replace(judge, reasoning_effort="high"), None, None)
    assert low != high  # the body is the response cache's key (model.cache.RequestKeys)


def test_the_allowed_efforts_are_the_sdks() -> None:
    literal = next(a for a in typing.get_args(ReasoningEffort) if a is not type(None))
    assert set(REASONING_EFFORTS) == set(typing.get_args(literal))


@pytest.mark.parametrize("role", ["model", "judge"])
def test_an_unknown_effort_is_refused_naming_the_valid_ones(role: str) -> None:
    config = composed(f"{role}.reasoning_effort=lowest")
    with pytest.raises(ConfigError, match=f"{role}.reasoning_effort must be one of none, minimal"):
        validate(config)
