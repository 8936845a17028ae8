"""The direct aiohttp transport names and retries failures as the openai client does."""

from __future__ import annotations

import asyncio
import email.utils
import random
import ssl
import time

import openai
import pytest
from aiohttp import web
from openai._models import FinalRequestOptions

from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.http import DirectPoster, retry_delay_s, should_retry, status_error

try:  # the HTTP library the installed openai client builds its responses with
    import httpx2 as httpx  # openai 3.x
except ImportError:
    import httpx  # type: ignore[no-redef]  # openai 2.x


# every status class the openai client tells apart, and the retry headers it reads
STATUSES = (400, 401, 403, 404, 408, 409, 418, 422, 429, 500, 502, 503, 504)
RETRY_HEADERS: tuple[dict[str, str], ...] = (
    {}, {"x-should-retry": "true"}, {"x-should-retry": "false"}, {"retry-after-ms": "1500"},
    {"retry-after": "30"}, {"retry-after": "0"}, {"retry-after": "soon"},
)  # fmt: skip
BODIES = (b'{"error": {"message": "boom", "type": "server_error"}}', b"{}", b"not json", b"")


def openai_client() -> openai.AsyncOpenAI:
    """The openai client whose own functions `direct` must agree with (never sends anything)."""
    return openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=10)


def openai_response(status: int, headers: dict[str, str], body: bytes) -> httpx.Response:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    return httpx.Response(status, headers=headers, content=body, request=request)


def test_errors_are_named_as_the_openai_client_names_them() -> None:
    """The installed openai client's own error for each status and body: the same class name
    and the same `body` (a new openai release that renames or remaps one fails here)."""
    client = openai_client()
    for status in STATUSES:
        for body in BODIES:
            theirs = client._make_status_error_from_response(openai_response(status, {}, body))
            ours = status_error(status, {}, body)
            assert (ours.name, ours.status) == (type(theirs).__name__, status), (status, body)
            if body:  # an empty body: see the test below
                assert ours.body == theirs.body, (status, body)
            assert str(ours).startswith(f"{ours.name}: Error code: {status}")


def test_an_empty_error_body_is_the_openai_clients() -> None:
    theirs = openai_client()._make_status_error_from_response(openai_response(500, {}, b""))
    assert status_error(500, {}, b"").body == theirs.body


# `direct` follows the openai 3.x client (model/http.py): an error's message is its JSON error's
# `message`, and a Retry-After past 120 s means no retry. The 2.x client (the [verifiers] extra
# installs 2.54) says the whole body and retries whatever the wait: it is not compared there.
OPENAI_3 = pytest.mark.skipif(
    int(openai.__version__.split(".")[0]) < 3,
    reason=f"direct follows openai 3.x's messages, long Retry-After; openai {openai.__version__}",
)


@OPENAI_3
def test_error_messages_are_the_openai_clients() -> None:
    """The message of every status and body (a JSON error's `message` only, never the body's
    text) is the installed openai client's."""
    client = openai_client()
    for status in STATUSES:
        for body in (*BODIES, b'{"message": "top"}', b'{"error": {"message": ""}}', b"[1, 2]"):
            theirs = client._make_status_error_from_response(openai_response(status, {}, body))
            ours = status_error(status, {}, body)
            assert str(ours) == f"{type(theirs).__name__}: {theirs}", (status, body)
            assert ours.body == theirs.body, (status, body)


def test_retries_follow_the_openai_client() -> None:
    """Whether to retry: the openai client's `_should_retry` for every status and header, but
    for a 429, which `direct` never retries itself (the endpoint waits it out: `model.pacer`)."""
    client = openai_client()
    for status in STATUSES:
        for headers in RETRY_HEADERS:
            theirs = client._should_retry(openai_response(status, headers, b"{}"))
            if status == 429 and "x-should-retry" not in headers:
                assert theirs and not should_retry(status, headers)
                continue
            assert should_retry(status, headers) == theirs, (status, headers)


def test_retry_waits_follow_the_openai_client() -> None:
    """The wait before each retry: the openai client's `_calculate_retry_timeout` with the same
    random draw (the server's Retry-After where it is honoured, else backoff with jitter)."""
    client = openai_client()
    options = FinalRequestOptions.construct(method="post", url="/chat/completions", max_retries=10)
    for attempt in range(8):
        for headers in RETRY_HEADERS:
            random.seed(attempt)
            theirs = client._calculate_retry_timeout(10 - attempt, options, httpx.Headers(headers))
            random.seed(attempt)
            assert retry_delay_s(attempt, headers) == pytest.approx(theirs), (attempt, headers)


@OPENAI_3
def test_long_retry_after_follows_the_openai_client() -> None:
    """A Retry-After past a minute is honoured up to the client's limit and refused beyond it
    (no retry), in seconds, milliseconds, an overflowing number or an HTTP date, whatever
    `x-should-retry` says."""
    client = openai_client()
    options = FinalRequestOptions.construct(method="post", url="/chat/completions", max_retries=10)
    late = email.utils.formatdate(time.time() + 3600, usegmt=True)
    for headers in (
        {"retry-after": "90"}, {"retry-after": "119.5"}, {"retry-after": "200"},
        {"retry-after-ms": "90000"}, {"retry-after-ms": "150000"}, {"retry-after": "1e999"},
        {"retry-after": "inf"}, {"retry-after": late},
        {"retry-after": "200", "x-should-retry": "true"},
    ):  # fmt: skip
        assert should_retry(500, headers) == client._should_retry(
            openai_response(500, headers, b"{}")
        )
        random.seed(0)
        theirs = client._calculate_retry_timeout(10, options, httpx.Headers(headers))
        random.seed(0)
        assert retry_delay_s(0, headers) == pytest.approx(theirs)


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
        sleep=SYSTEM_CLOCK.sleep,
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
