"""The direct aiohttp transport names and retries failures as the openai client does."""

from __future__ import annotations

import asyncio
import json
import ssl

import pytest
from aiohttp import web

from healthbench_exp.model.http import DirectPoster, retry_delay_s, should_retry, status_error


def test_errors_are_named_as_the_openai_client_names_them() -> None:
    body = json.dumps({"error": {"message": "boom", "type": "server_error"}}).encode()
    error = status_error(500, {}, body)
    assert error.name == "InternalServerError" and error.status == 500
    assert str(error).startswith("InternalServerError: Error code: 500 - {'error': ")
    assert error.body == {"message": "boom", "type": "server_error"}  # the `error` object
    assert status_error(401, {}, b"").name == "AuthenticationError"
    assert status_error(404, {}, b"not json").body == "not json"
    assert status_error(429, {}, b"{}").name == "RateLimitError"
    assert status_error(418, {}, b"").name == "APIStatusError"


def test_retries_follow_the_openai_client() -> None:
    assert should_retry(500, {}) and should_retry(503, {}) and should_retry(409, {})
    assert not should_retry(400, {}) and not should_retry(401, {})
    assert not should_retry(500, {"x-should-retry": "false"})
    assert should_retry(400, {"x-should-retry": "true"})
    assert retry_delay_s(0, {"retry-after-ms": "1500"}) == 1.5  # the server's word, up to 60 s
    assert 0.375 <= retry_delay_s(0, {}) <= 0.5  # else 0.5 s doubling, jitter 0.75 to 1
    assert 6.0 <= retry_delay_s(10, {"retry-after": "120"}) <= 8.0  # capped at 8 s


async def _through_proxy_or_not(
    base_url: str | None, env: pytest.MonkeyPatch
) -> tuple[list[str], list[str]]:
    """Post once to `base_url` (None: the direct server) with HTTP_PROXY at a loopback proxy;
    the request targets each of the two loopback servers saw."""
    seen: dict[str, list[str]] = {"proxy": [], "direct": []}

    def app(name: str) -> web.Application:
        async def answer(request: web.Request) -> web.Response:
            seen[name].append(str(request.url))
            reply = {"choices": [{"message": {"content": name}, "finish_reason": "stop"}]}
            return web.json_response(reply)

        application = web.Application()
        application.router.add_post("/{tail:.*}", answer)
        return application

    runners = [web.AppRunner(app(name)) for name in ("proxy", "direct")]
    ports = []
    for runner in runners:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ports.append(runner.addresses[0][1])
    env.setenv("HTTP_PROXY", f"http://127.0.0.1:{ports[0]}")
    poster = DirectPoster(
        base_url or f"http://127.0.0.1:{ports[1]}/v1",
        "sk-test",
        max_retries=0,
        timeout_s=10,
        connect_timeout_s=10,
        tls=ssl.create_default_context(),
        on_response=lambda status, headers: None,
    )
    try:
        for _ in range(2):  # the proxy is looked up once, then used for every request
            await poster.post({"model": "m", "messages": []})
    finally:
        await poster.close()
        for runner in runners:
            await runner.cleanup()
    return seen["proxy"], seen["direct"]


def test_proxies_from_the_environment_are_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxied, direct = asyncio.run(_through_proxy_or_not("http://upstream.test/v1", monkeypatch))
    assert proxied == ["http://upstream.test/v1/chat/completions"] * 2 and direct == []
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # NO_PROXY covers the host: sent directly
    proxied, direct = asyncio.run(_through_proxy_or_not(None, monkeypatch))
    assert proxied == [] and len(direct) == 2
