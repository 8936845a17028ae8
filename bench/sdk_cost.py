"""CPU per chat-completion request, by way of sending: the openai client's calls against `direct`.

    python bench/sdk_cost.py --n 2000

One process posts N chat completions (64 in flight) to the built-in server at zero latency, for
each way of sending in turn, three alternating rounds, and prints the median CPU time of this
process per request (`time.process_time`: user + system, so another process's load changes it
little). The last row sends nothing: an `AsyncClient` whose `send()` returns a canned reply,
what the openai client's own request building and reply wrapping cost. Run it under another
openai (a venv with `openai[aiohttp]>=2.54,<3` layered over this one) to compare versions.
It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from healthbench_exp.builtin_endpoint.server import ServerProcess, server_args
from healthbench_exp.model.access import shared_tls_context
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.http import DirectPoster

if int(openai.__version__.split(".")[0]) >= 3:  # openai 3 sends through httpx2, 2 through httpx
    import httpx2 as hx
else:  # pragma: no cover
    import httpx as hx  # type: ignore[no-redef]

IN_FLIGHT = 64
MESSAGES = [
    {"role": "system", "content": "You are a grader. " * 20},
    {"role": "user", "content": "patient dose symptom fever " * 60},
]
BODY: dict[str, object] = {"model": "bench-judge", "temperature": 0.0, "max_tokens": 100}
CANNED = json.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }
).encode()


async def read_headers(response: hx.Response) -> None:
    """What the endpoint's response hook does with every answer: read a rate-limit header."""
    response.headers.get("x-ratelimit-remaining-tokens")


class AiohttpSend(hx.AsyncClient):
    """An httpx client whose public `send()` goes straight to aiohttp (no httpx auth, redirect
    and stream layers): how much of the openai client's cost is httpx's sending."""

    def __init__(self) -> None:
        super().__init__()
        self.session: aiohttp.ClientSession | None = None

    async def send(self, request: hx.Request, **_: object) -> hx.Response:  # type: ignore[override]
        if self.session is None:
            connector = aiohttp.TCPConnector(limit=0, ssl=shared_tls_context())
            self.session = aiohttp.ClientSession(connector=connector)
        timeout = request.extensions.get("timeout", {})
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        async with self.session.request(
            request.method,
            str(request.url),
            headers=headers,
            data=request.content,
            timeout=aiohttp.ClientTimeout(
                sock_connect=timeout.get("connect"), sock_read=timeout.get("read")
            ),
            allow_redirects=False,
            auto_decompress=False,
        ) as answer:
            content = await answer.read()
        response = hx.Response(
            answer.status, headers=answer.raw_headers, content=content, request=request
        )
        await read_headers(response)
        return response

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()


class Canned(hx.AsyncClient):
    """Answers every request with the same reply without sending it."""

    async def send(self, request: hx.Request, **_: object) -> hx.Response:  # type: ignore[override]
        headers = [(b"content-type", b"application/json")]
        return hx.Response(200, headers=headers, content=CANNED, request=request)


async def measure(url: str, n: int) -> dict[str, list[float]]:
    timeout = openai.Timeout(180.0, connect=180.0)

    def client(http_client: hx.AsyncClient) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key="k", base_url=url, max_retries=4, timeout=timeout, http_client=http_client
        )

    default = client(
        openai.DefaultAioHttpClient(
            event_hooks={"response": [read_headers]}, verify=shared_tls_context()
        )
    )
    lean, canned = client(AiohttpSend()), client(Canned())
    direct = DirectPoster(
        url,
        "k",
        max_retries=4,
        timeout_s=180.0,
        connect_timeout_s=180.0,
        tls=shared_tls_context(),
        on_response=lambda status, headers: None,
        sleep=SYSTEM_CLOCK.sleep,
    )
    # every field of the client's options model given: none of its defaults is deep-copied
    every_option: openai.RequestOptions = {
        "headers": {},
        "max_retries": 4,
        "timeout": timeout,
        "params": {},
    }

    async def raw() -> object:
        answer = await default.chat.completions.with_raw_response.create(
            messages=MESSAGES,  # type: ignore[arg-type]
            model="bench-judge",
            temperature=0.0,
            max_tokens=100,
        )
        return answer.http_response.json()

    def post(to: openai.AsyncOpenAI, **options: object) -> Callable[[], Awaitable[object]]:
        return lambda: to.post(
            "/chat/completions",
            body={**BODY, "messages": MESSAGES},
            cast_to=object,
            **options,  # type: ignore[arg-type]
        )

    ways: dict[str, Callable[[], Awaitable[object]]] = {
        "post(cast_to=object) (the default transport)": post(default),
        "the same, every option given": post(default, options=every_option),
        "chat.completions.create": lambda: default.chat.completions.create(
            messages=MESSAGES,  # type: ignore[arg-type]
            model="bench-judge",
            temperature=0.0,
            max_tokens=100,
        ),
        "with_raw_response.create, JSON read": raw,
        "post over an httpx client sending with aiohttp": post(lean),
        "runner.http_client=direct (DirectPoster)": lambda: direct.post(
            {**BODY, "messages": MESSAGES}
        ),
        "post answered without sending (the SDK's own cost)": post(canned),
    }
    slots = asyncio.Semaphore(IN_FLIGHT)

    async def one(way: Callable[[], Awaitable[object]]) -> None:
        async with slots:
            await way()

    for way in ways.values():  # warm up: connections, imports, caches
        await asyncio.gather(*(one(way) for _ in range(100)))
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(3):
        for name, way in ways.items():
            started = time.process_time()
            await asyncio.gather(*(one(way) for _ in range(n)))
            cpu[name].append((time.process_time() - started) * 1000 / n)
    for sdk in (default, lean, canned):
        await sdk.close()
    await direct.close()
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="requests per way and round")
    args = parser.parse_args()
    with ServerProcess(server_args(latency_ms=0, jitter_ms=0)) as server:
        cpu = asyncio.run(measure(server.base_url, args.n))
    print(f"openai {openai.__version__} over {hx.__name__}; CPU ms per request, median of 3")
    for name, runs in cpu.items():
        figures = ", ".join(f"{x:.3f}" for x in runs)
        print(f"  {name:52s} {statistics.median(runs):.3f}  ({figures})")


if __name__ == "__main__":
    main()
