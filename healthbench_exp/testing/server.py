"""The built-in offline endpoint: a real loopback HTTP server speaking `/v1/chat/completions`.

Its scores are meaningless. It exists so the whole pipeline (HTTP, retries, parsing, scoring,
outputs) runs without a network or a key. Replies are deterministic: a model reply is derived from
the model name, temperature and messages; a judge verdict is derived from the judge's name and the
grader prompt, so the same judge always gives the same prompt the same verdict. For tests it
injects latency, 429/500/503 errors, malformed verdicts and empty replies at configurable rates
(seeded), and judge-only faults: verdicts fenced without the `json` label (which the reference
parse rejects), empty verdicts and 500s; a model request whose last message contains
`REFUSE_MARKER` is answered as refused (`finish_reason: content_filter`). Usage is reported as
4 characters per token; a request with `reasoning_effort` also reports REASONING_TOKENS
reasoning tokens.

It is one asyncio process (aiohttp's server, on uvloop where installed), so hundreds of requests
held for their injected latency cost it almost nothing and each is answered within about a
millisecond of its latency: a thread per connection, as `http.server` has, added 40 ms to every
request at 256 in flight. Run on its own:
`python -m healthbench_exp.offline_server --port 8000 --latency-ms 200`.
`GET /stats` returns request counters; `POST /stats/reset` zeroes them; `--require-key K` answers
401 to requests without `Authorization: Bearer K`. It also speaks enough of the files and batches
API for OpenAI's Batch API (`POST /v1/files`, `POST /v1/batches`, `GET /v1/batches/{id}`,
`GET /v1/files/{id}/content`); `--batch-delay-s` keeps a batch `in_progress` that long.
Account faults (see `offline_limits`): `--rate-limit-requests N` / `--rate-limit-tokens N` per
`--rate-limit-window-s` answer 429 as OpenAI's rate limiter does, `--quota-exhausted` answers
429 `insufficient_quota`, `--silent` accepts requests and never answers; `--limited-role`
(all, model, judge) says whose requests they apply to.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from healthbench_exp.testing.limits import AccountLimits, request_tokens

if TYPE_CHECKING:  # imported where the server runs: the harness only needs server_args
    from aiohttp import web

JUDGE_MARKER = "Your job is to look at a conversation and a rubric item"
REFUSE_MARKER = "[[offline-server:refuse]]"
REASONING_TOKENS = 64
_SENTENCES = (
    "It is best to talk to a doctor or nurse who can examine you.",
    "If symptoms get worse, such as trouble breathing or chest pain, call emergency services.",
    "Drink fluids, rest, and keep track of how your symptoms change over the next days.",
    "Could you tell me how long this has been going on and whether you take any medicines?",
    "Common causes include infections, dehydration and side effects of medication.",
    "This is general information, not a diagnosis.",
    "Over-the-counter pain relief can help, taken as the label directs.",
    "Seek care today if you notice confusion, fainting or a high fever.",
)
_MALFORMED = (
    "I think the response meets the criterion.",
    '```json\n{"explanation": "The verdict is missing."}\n```',
    '{"explanation": "A string is not a boolean.", "criteria_met": "false"}',
    '{"explanation": "truncated", "criteria_met": tr',
)


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()


def model_reply(model: str, temperature: Any, messages: list[dict[str, Any]]) -> str:
    """A deterministic, health-flavoured reply of 1 to 5 sentences."""
    digest = _digest(model, repr(temperature), json.dumps(messages, sort_keys=True))
    count = 1 + digest[0] % 5
    return " ".join(_SENTENCES[digest[1 + i] % len(_SENTENCES)] for i in range(count))


def judge_reply(grader_prompt: str, judge: str = "") -> str:
    """A verdict in the format the official template asks for, derived from the grader prompt and
    the judge's model name (so two differently named judges disagree on about half the items)."""
    met = _digest(judge, grader_prompt)[0] % 2 == 0
    verdict = {
        "explanation": "Offline verdict derived from a hash of the judge name and grader prompt.",
        "criteria_met": met,
    }
    return "```json\n" + json.dumps(verdict, indent=2) + "\n```"


class Faults:
    """Seeded fault injection and request counters (one event loop: no locks needed)."""

    def __init__(
        self,
        *,
        latency_ms: float = 0.0,
        jitter_ms: float = 0.0,
        error_rate: float = 0.0,
        malformed_rate: float = 0.0,
        empty_reply_rate: float = 0.0,
        fenced_rate: float = 0.0,
        judge_empty_rate: float = 0.0,
        judge_error_rate: float = 0.0,
        seed: int = 0,
        require_key: str | None = None,
    ) -> None:
        self.require_key = require_key
        self.latency_ms = latency_ms
        self.jitter_ms = jitter_ms
        self.error_rate = error_rate
        self.malformed_rate = malformed_rate
        self.empty_reply_rate = empty_reply_rate
        # judge replies only, drawn after malformed_rate in this order
        self.fenced_rate = fenced_rate
        self.judge_empty_rate = judge_empty_rate
        self.judge_error_rate = judge_error_rate
        self.rng = random.Random(seed)
        self.prefixes: dict[str, str] = {}
        self.reset()

    def reset(self) -> None:
        self.counts: dict[str, Any] = {
            "requests": 0,
            "model_requests": 0,
            "judge_requests": 0,
            "errors_injected": 0,
            "malformed_injected": 0,
            "empty_injected": 0,
            "fenced_injected": 0,
            "judge_empty_injected": 0,
            "judge_errors_injected": 0,
            "in_flight": 0,
            "peak_in_flight": 0,
            "latency_ms_total": 0,  # the injected latency served, summed over requests
            "held_ms_total": 0.0,  # from reading a request to sending its reply, summed
            "first_request_at": 0.0,  # time.time() of the first request (for start-up time)
            "last_reply_at": 0.0,  # time.time() of the latest reply (with the first: busy time)
            "batches_created": 0,
            "batch_requests": 0,
            "rate_limited": 0,  # answered 429 by the rate limiter (not counted in `requests`)
            "quota_refused": 0,
            "silent_held": 0,  # requests accepted and never answered
        }

    def prefix_cache_hit(self, key: str | None, messages: list[dict[str, Any]]) -> int:
        """Characters of the prompt shared with the previous one under the same
        `prompt_cache_key`: what a provider's prefix cache could have served."""
        if not key:
            return 0
        text = "".join(str(m.get("content", "")) for m in messages)
        previous = self.prefixes.get(key, "")
        self.prefixes[key] = text
        if len(self.prefixes) > 10_000:
            self.prefixes.pop(next(iter(self.prefixes)))
        return len(os.path.commonprefix([previous, text]))  # noqa: RUF071 (characters, as a cache)

    def draw(self) -> tuple[float, float]:
        """(delay in seconds, a uniform draw for this request's fault)."""
        delay = max(0.0, self.latency_ms + self.rng.uniform(-self.jitter_ms, self.jitter_ms))
        self.counts["latency_ms_total"] += round(delay)
        if not self.counts["first_request_at"]:
            self.counts["first_request_at"] = time.time()
        return delay / 1000.0, self.rng.random()

    def count(self, key: str, delta: float = 1) -> None:
        self.counts[key] += delta
        if key == "in_flight":
            self.counts["peak_in_flight"] = max(
                self.counts["peak_in_flight"], self.counts["in_flight"]
            )


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> web.Response:
    from aiohttp import web

    return web.Response(
        body=json.dumps(body).encode("utf-8"),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def _not_found(path: str) -> web.Response:
    return _json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})


class OfflineServer:
    """The routes, over one Faults, one BatchStore and the account's limits."""

    def __init__(
        self, faults: Faults, batch_delay_s: float = 0.0, limits: AccountLimits | None = None
    ) -> None:
        self.faults = faults
        self.batches = BatchStore(batch_delay_s)
        self.limits = limits or AccountLimits()

    def app(self) -> web.Application:
        from aiohttp import web

        app = web.Application(client_max_size=1 << 30)  # batch input files can be large
        app.router.add_route("GET", "/{path:.*}", self.get)
        app.router.add_route("POST", "/{path:.*}", self.post)
        return app

    async def get(self, request: web.Request) -> web.Response:
        store = self.batches
        path = request.path
        parts = path.strip("/").split("/")
        if parts[:2] == ["v1", "batches"] and len(parts) == 3 and parts[2] in store.batches:
            return _json(200, store.describe(parts[2]))
        if parts[:2] == ["v1", "files"] and parts[3:] == ["content"] and parts[2] in store.files:
            from aiohttp import web

            return web.Response(
                body=store.files[parts[2]]["content"], content_type="application/octet-stream"
            )
        if path.rstrip("/") == "/stats":
            return _json(200, dict(self.faults.counts))
        if path.rstrip("/") == "/v1/models":
            return _json(200, {"object": "list", "data": []})
        return _not_found(path)

    async def post(self, request: web.Request) -> web.Response:
        path = request.path.rstrip("/")
        raw = await request.read()
        if path == "/stats/reset":
            self.faults.reset()
            return _json(200, {"ok": True})
        if path == "/v1/files":
            return _json(200, self.batches.upload(request.headers["Content-Type"], raw))
        if path == "/v1/batches":
            batch = json.loads(raw)
            if batch.get("input_file_id") not in self.batches.files:
                return _json(404, {"error": {"message": "no such file", "type": "not_found"}})
            return _json(200, self.batches.create(batch, self.faults))
        if path != "/v1/chat/completions":
            return _not_found(request.path)
        try:
            body = json.loads(raw)
            messages = body["messages"]
            model = body["model"]
        except (ValueError, KeyError, TypeError):
            return _json(
                400, {"error": {"message": "invalid request body", "type": "invalid_request"}}
            )
        faults = self.faults
        if (
            faults.require_key
            and request.headers.get("Authorization") != f"Bearer {faults.require_key}"
        ):
            return _json(401, {"error": {"message": "invalid API key", "type": "invalid_api_key"}})
        limits = self.limits
        headers: dict[str, str] = {}
        last = str(messages[-1].get("content", "")) if messages else ""
        if limits.applies(JUDGE_MARKER in last):
            if limits.silent:
                faults.count("silent_held")
                await asyncio.Event().wait()  # accepted, never answered
            if limits.quota_exhausted:
                faults.count("quota_refused")
                return _json(*limits.quota_error())
            headers, refusal = limits.admit(model, request_tokens(body, messages))
            if refusal is not None:
                faults.count("rate_limited")
                return _json(*refusal)
        faults.count("requests")
        faults.count("in_flight")
        received = time.perf_counter()
        try:
            delay, draw = faults.draw()
            if delay:
                await asyncio.sleep(delay)
            status, payload, extra = completion_response(faults, draw, model, body, messages)
            return _json(status, payload, {**headers, **(extra or {})} or None)
        finally:
            faults.count("in_flight", -1)
            faults.count("held_ms_total", (time.perf_counter() - received) * 1000.0)
            faults.counts["last_reply_at"] = time.time()


def completion_response(
    faults: Faults, draw: float, model: str, body: dict[str, Any], messages: list[dict[str, Any]]
) -> tuple[int, dict[str, Any], dict[str, str] | None]:
    """(status, body, headers) of one chat completion; `draw` picks an injected fault."""
    if draw < faults.error_rate:
        faults.count("errors_injected")
        status = (429, 500, 503)[int(draw * 1_000_003) % 3]
        return (
            status,
            {"error": {"message": f"injected {status}", "type": "injected"}},
            {"retry-after-ms": "5"},
        )
    draw = (draw - faults.error_rate) / max(1e-12, 1.0 - faults.error_rate)
    last = str(messages[-1].get("content", "")) if messages else ""
    is_judge = JUDGE_MARKER in last
    faults.count("judge_requests" if is_judge else "model_requests")
    if is_judge:
        fenced = faults.malformed_rate + faults.fenced_rate
        empty = fenced + faults.judge_empty_rate
        if draw < faults.malformed_rate:
            faults.count("malformed_injected")
            text = _MALFORMED[int(draw * 1_000_003) % len(_MALFORMED)]
        elif draw < fenced:  # ``` without `json`: the reference parse cannot read it
            faults.count("fenced_injected")
            text = judge_reply(last, model).replace("```json\n", "```\n", 1)
        elif draw < empty:
            faults.count("judge_empty_injected")
            text = ""
        elif draw < empty + faults.judge_error_rate:
            faults.count("judge_errors_injected")
            return 500, {"error": {"message": "injected judge 500", "type": "injected"}}, None
        else:
            text = judge_reply(last, model)
    elif draw < faults.empty_reply_rate:
        faults.count("empty_injected")
        text = ""
    else:
        text = model_reply(model, body.get("temperature"), messages)
    finish_reason = "content_filter" if not is_judge and REFUSE_MARKER in last else "stop"
    prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
    # a request with `reasoning_effort` "thinks" REASONING_TOKENS tokens, billed as output
    reasoning = REASONING_TOKENS if body.get("reasoning_effort") else 0
    cached_chars = faults.prefix_cache_hit(body.get("prompt_cache_key"), messages)
    return (
        200,
        {
            "id": "offline-" + hashlib.sha256(text.encode()).hexdigest()[:12],
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_chars // 4,
                "prompt_tokens_details": {"cached_tokens": cached_chars // 4},
                "completion_tokens": len(text) // 4 + reasoning,
                "completion_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": prompt_chars // 4 + len(text) // 4 + reasoning,
            },
        },
        None,
    )


class BatchStore:
    """The files and batches API, enough for the Batch API: upload a JSONL of chat-completion
    requests, create a batch (answered at once, reported `in_progress` for `delay_s`), poll it,
    download its output file."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}

    def _add_file(self, name: str, purpose: str, content: bytes) -> dict[str, Any]:
        file_id = f"file-offline-{len(self.files) + 1}"
        self.files[file_id] = {"filename": name, "purpose": purpose, "content": content}
        return {
            "id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
            "filename": name, "purpose": purpose, "status": "processed",
        }  # fmt: skip

    def upload(self, content_type: str, raw: bytes) -> dict[str, Any]:
        """A multipart/form-data upload with fields `purpose` and `file`."""
        from email.parser import BytesParser

        message = BytesParser().parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.get_payload():
            name = part.get_param("name", header="content-disposition")
            fields[name] = (part.get_filename(), part.get_payload(decode=True))
        filename, content = fields["file"]
        return self._add_file(filename or "upload.jsonl", fields["purpose"][1].decode(), content)

    def create(self, request: dict[str, Any], faults: Faults) -> dict[str, Any]:
        """Answer every request of the input file now; report the batch done after delay_s."""
        lines = self.files[request["input_file_id"]]["content"].decode().splitlines()
        output = []
        for line in filter(str.strip, lines):
            item = json.loads(line)
            body = item["body"]
            status, payload, _ = completion_response(
                faults, faults.draw()[1], body["model"], body, body["messages"]
            )
            faults.count("requests")
            faults.count("batch_requests")
            output.append(
                {
                    "id": f"batch_req_{len(output)}",
                    "custom_id": item["custom_id"],
                    "response": {"status_code": int(status), "request_id": "", "body": payload},
                    "error": None,
                }
            )
        out = self._add_file(
            "output.jsonl", "batch_output", "".join(json.dumps(o) + "\n" for o in output).encode()
        )
        faults.count("batches_created")
        batch_id = f"batch_offline_{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "request": request,
            "output_file_id": out["id"],
            "total": len(output),
            "created_at": time.time(),
        }
        return self.describe(batch_id)

    def describe(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        done = time.time() >= batch["created_at"] + self.delay_s
        return {
            "id": batch_id,
            "object": "batch",
            "endpoint": batch["request"]["endpoint"],
            "input_file_id": batch["request"]["input_file_id"],
            "completion_window": batch["request"]["completion_window"],
            "status": "completed" if done else "in_progress",
            "created_at": int(batch["created_at"]),
            "output_file_id": batch["output_file_id"] if done else None,
            "error_file_id": None,
            "request_counts": {
                "total": batch["total"],
                "completed": batch["total"] if done else 0,
                "failed": 0,
            },
        }


def server_args(
    latency_ms: float = 0.0,
    jitter_ms: float = 0.0,
    error_rate: float = 0.0,
    malformed_rate: float = 0.0,
    empty_reply_rate: float = 0.0,
    seed: int = 0,
    require_key: str | None = None,
    batch_delay_s: float = 0.0,
    fenced_rate: float = 0.0,
    judge_empty_rate: float = 0.0,
    judge_error_rate: float = 0.0,
    rate_limit_requests: int = 0,
    rate_limit_tokens: int = 0,
    rate_limit_window_s: float = 60.0,
    quota_exhausted: bool = False,
    silent: bool = False,
    limited_role: str = "all",
) -> list[str]:
    """Command-line flags for `python -m healthbench_exp.offline_server`."""
    judge_faults = {
        "fenced-rate": fenced_rate,
        "judge-empty-rate": judge_empty_rate,
        "judge-error-rate": judge_error_rate,
    }
    # the account faults change no reply: named only when set, so the default flags (which name
    # the server in cache keys) stay as they were
    account = (
        ([f"--rate-limit-requests={rate_limit_requests}"] if rate_limit_requests else [])
        + ([f"--rate-limit-tokens={rate_limit_tokens}"] if rate_limit_tokens else [])
        + (
            [f"--rate-limit-window-s={rate_limit_window_s}"]
            if rate_limit_requests or rate_limit_tokens
            else []
        )
        + (["--quota-exhausted"] if quota_exhausted else [])
        + (["--silent"] if silent else [])
    )
    if account:
        account.append(f"--limited-role={limited_role}")
    return (
        ([f"--require-key={require_key}"] if require_key else [])
        # only when set: it changes no reply, and the flags name the server in cache keys
        + ([f"--batch-delay-s={batch_delay_s}"] if batch_delay_s else [])
        # only when set: a server without them keeps its flags (and so its cache keys)
        + [f"--{flag}={rate}" for flag, rate in judge_faults.items() if rate]
        + account
    ) + [
        f"--latency-ms={latency_ms}",
        f"--jitter-ms={jitter_ms}",
        f"--error-rate={error_rate}",
        f"--malformed-rate={malformed_rate}",
        f"--empty-reply-rate={empty_reply_rate}",
        f"--seed={seed}",
    ]


class ServerProcess:
    """The server in a child process on a free port; stopped on exit.

    `with ServerProcess(args) as server:` starts it and waits until it listens. `start()` alone
    returns at once, so the caller can do other work while it starts; `wait_ready()` then waits.
    """

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.process: subprocess.Popen[str] | None = None
        self.base_url = ""

    def start(self) -> ServerProcess:
        if self.process is None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "healthbench_exp.offline_server", "--port=0", *self.args],
                stdout=subprocess.PIPE,
                text=True,
            )
        return self

    def wait_ready(self) -> str:
        """The base URL, once the server listens."""
        if not self.base_url:
            assert self.process is not None and self.process.stdout is not None, "not started"
            line = self.process.stdout.readline()
            if not line.startswith("listening on "):
                self.process.kill()
                raise RuntimeError(f"built-in server did not start (said {line!r})")
            self.base_url = line.split()[-1]
        return self.base_url

    def __enter__(self) -> ServerProcess:
        self.start().wait_ready()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
            if self.process.stdout is not None:
                self.process.stdout.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--error-rate", type=float, default=0.0, help="share answered 429/500/503")
    parser.add_argument("--malformed-rate", type=float, default=0.0, help="share of bad verdicts")
    parser.add_argument("--empty-reply-rate", type=float, default=0.0)
    parser.add_argument(
        "--fenced-rate", type=float, default=0.0, help="share of verdicts fenced without `json`"
    )
    parser.add_argument("--judge-empty-rate", type=float, default=0.0)
    parser.add_argument("--judge-error-rate", type=float, default=0.0, help="judge 500s")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--require-key", default=None, help="answer 401 to any other API key")
    parser.add_argument(
        "--batch-delay-s",
        type=float,
        default=0.0,
        help="Batch API batches stay in_progress so long",
    )
    parser.add_argument("--rate-limit-requests", type=int, default=0, help="per window; 0: none")
    parser.add_argument("--rate-limit-tokens", type=int, default=0, help="per window; 0: none")
    parser.add_argument("--rate-limit-window-s", type=float, default=60.0)
    parser.add_argument("--quota-exhausted", action="store_true", help="429 insufficient_quota")
    parser.add_argument("--silent", action="store_true", help="accept requests, never answer")
    parser.add_argument(
        "--limited-role",
        choices=("all", "model", "judge"),
        default="all",
        help="whose requests the rate limits, quota and silence apply to",
    )
    args = parser.parse_args(argv)
    faults = Faults(
        latency_ms=args.latency_ms,
        jitter_ms=args.jitter_ms,
        error_rate=args.error_rate,
        malformed_rate=args.malformed_rate,
        empty_reply_rate=args.empty_reply_rate,
        fenced_rate=args.fenced_rate,
        judge_empty_rate=args.judge_empty_rate,
        judge_error_rate=args.judge_error_rate,
        seed=args.seed,
        require_key=args.require_key,
    )
    limits = AccountLimits(
        args.rate_limit_requests,
        args.rate_limit_tokens,
        args.rate_limit_window_s,
        args.quota_exhausted,
        args.silent,
        args.limited_role,
    )
    server = OfflineServer(faults, args.batch_delay_s, limits)
    with (
        asyncio.Runner(loop_factory=event_loop_factory()) as runner,
        contextlib.suppress(KeyboardInterrupt),
    ):
        runner.run(serve(server, args.port))


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop where it is installed (Linux, macOS), else None (asyncio's default): the
    loop of both the harness and this server, whose CPU per request it roughly halves."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def serve(server: OfflineServer, port: int) -> None:
    """Serve on 127.0.0.1:`port` (0: a free one), print "listening on <base URL>", run forever."""
    from aiohttp import web

    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    bound = runner.addresses[0][1]
    print(f"listening on http://127.0.0.1:{bound}/v1", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    main()
