"""Both posters (the direct aiohttp one and the real openai client) return what was answered as
a typed `Answer` (status, headers, body), through the one retry loop, and nothing in model/
passes an answer's headers around through a ContextVar."""

from __future__ import annotations

import ast
import asyncio
import ssl
from pathlib import Path

from aiohttp import web

from healthbench_exp.config.schema import HttpClient
from healthbench_exp.model import http
from healthbench_exp.model.http import Answer, DirectPoster, HttpError
from healthbench_exp.model.transport import SdkClients, Transport

MODEL_DIR = Path(http.__file__).parent
REPLY = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}


async def _answers(failures: int, kind: str) -> tuple[Answer, list[float], list[str]]:
    """Post once through poster `kind` to a loopback server that answers 503 `failures` times
    (with `retry-after-ms: 1`), then 200 with a rate-limit header; the Answer, the retry waits
    slept and every attempt's hooks as seen."""
    calls = 0

    async def answer(request: web.Request) -> web.Response:
        nonlocal calls
        calls += 1
        if calls <= failures:
            return web.json_response({"error": {"message": "busy"}}, status=503,
                                     headers={"retry-after-ms": "1"})  # fmt: skip
        return web.json_response(REPLY, headers={"x-ratelimit-remaining-requests": "7"})

    application = web.Application()
    application.router.add_post("/{tail:.*}", answer)
    runner = web.AppRunner(application)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    slept: list[float] = []
    seen: list[str] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    def heard(status: int, headers: object) -> None:
        seen.append(str(status))

    poster: DirectPoster | SdkClients
    if kind == "direct":
        tls = ssl.create_default_context()
        poster = DirectPoster(url, "sk-test", max_retries=2, timeout_s=10, connect_timeout_s=10,
                              tls=tls, on_response=heard, sleep=sleep)  # fmt: skip
    else:
        settings = {"api_key": "sk-test", "base_url": url, "max_retries": 2}
        transport = Transport(max_retries=2, timeout_s=10, http_client=HttpClient.httpx)
        poster = SdkClients(settings, transport, 4, heard, sleep=sleep)  # type: ignore[arg-type]
    try:
        got = await poster.post({"model": "m", "messages": []})
    finally:
        await poster.close()
        await runner.cleanup()
    return got, slept, seen


def test_both_posters_return_the_answer_after_the_same_retries() -> None:
    for kind in ("direct", "sdk"):
        got, slept, seen = asyncio.run(_answers(2, kind))
        assert isinstance(got, Answer), kind
        assert (got.status, got.body) == (200, REPLY), kind
        assert got.headers["x-ratelimit-remaining-requests"] == "7", kind
        assert slept == [0.001, 0.001], kind  # the server's Retry-After, on the given clock
        assert seen == ["503", "503", "200"], kind


def test_both_posters_give_up_with_the_last_error() -> None:
    for kind in ("direct", "sdk"):
        try:
            asyncio.run(_answers(5, kind))
        except HttpError as error:
            assert (error.status, error.name) == (503, "InternalServerError"), kind
            assert error.headers["retry-after-ms"] == "1", kind
        else:
            raise AssertionError(f"{kind}: a 503 past max_retries must raise")


def test_one_retry_loop_serves_both_posters() -> None:
    """Only `http.with_retries` waits between attempts: no poster has a loop of its own."""
    for name in ("http.py", "transport.py"):
        tree = ast.parse((MODEL_DIR / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                loops = [n for n in ast.walk(node) if isinstance(n, (ast.While, ast.For))]
                calls = {n.func.id for n in ast.walk(node)
                         if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}  # fmt: skip
                assert "retry_delay_s" not in calls, (name, node.name)
                assert not any(isinstance(n, ast.While) for n in loops), (name, node.name)


def test_no_context_variable_carries_state_in_model() -> None:
    """What a request was answered with travels as a returned value, not a ContextVar."""
    for path in sorted(MODEL_DIR.rglob("*.py")):
        assert "ContextVar" not in path.read_text(), path.name
