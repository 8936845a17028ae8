"""The built-in endpoint's HTTP side: aiohttp routes over the replies, the batch store and the
account's limits, served on the loopback interface.

`POST /v1/chat/completions` answers as `replies.completion_response` says (after the account's
limits, see `limits`), and so does `POST /v1/responses`, through `responses` (the same replies
and verdicts, as Responses API objects; `no_responses_api` answers it 404 instead, as an older
OpenAI-compatible server does). Each reply echoes the `service_tier` it was sent (`default` for
none or `auto`); `flex_unavailable` answers that many `flex` requests 429 "Resource
Unavailable", as OpenAI answers flex requests it has no capacity for. `GET /stats` returns
request counters, `POST /stats/reset` zeroes them; `GET /stats/requests` returns the latest
RECENT request bodies of either API as received (`{"path", "body"}`, oldest first); the files
and batches routes are `batches.BatchStore`'s (`quota_exhausted` for the judge answers a
batch's creation 429 `insufficient_quota`, as OpenAI refuses a batch without credit). Outages:
`fail_status` answers every request of the limited role after the first `fail_after` with that
status (no rate-limit headers);
`down_after` answers that chat request 503 and closes the port (`serve`). `GET /v1/models` lists
the models given a shutdown date (`shutdown_dates`) with it, `GET /v1/models/{id}` describes any
model (with its `shutdown_date` when one is given); a model past its date is answered, there and
on chat completions, 404 `model_not_found`, as OpenAI's API answers a retired model.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable, Mapping
from datetime import date
from typing import TYPE_CHECKING

from healthbench_exp.builtin_endpoint.batches import BatchStore
from healthbench_exp.builtin_endpoint.limits import AccountLimits, request_tokens
from healthbench_exp.builtin_endpoint.replies import JUDGE_MARKER, Faults, completion_response
from healthbench_exp.builtin_endpoint.responses import as_system, chat_request, response_reply
from healthbench_exp.config.schema import OfflineServerConfig

if TYPE_CHECKING:  # imported where the server runs: the harness only needs server_args
    from aiohttp import web


RECENT = 512  # request bodies kept for `GET /stats/requests`


def _json(
    status: int, body: Mapping[str, object], headers: dict[str, str] | None = None
) -> web.Response:
    from aiohttp import web

    return web.Response(
        body=json.dumps(body).encode("utf-8"),
        status=status,
        content_type="application/json",
        headers=headers,
    )


# OpenAI's answer to a flex request it has no capacity for: retried later, not charged
_FLEX_UNAVAILABLE = {
    "error": {
        "message": "Resource Unavailable: flex processing has no capacity for this request "
        "right now; retry later or use another service tier.",
        "type": "resource_unavailable",
        "param": None,
        "code": "resource_unavailable",
    }
}


# an outage's answer (`fail_status`, `down_after`): no rate-limit headers
_OUTAGE = {"error": {"message": "the server is having an outage", "type": "server_error"}}


def _not_found(path: str) -> web.Response:
    return _json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})


def parse_shutdown_dates(text: str) -> dict[str, str]:
    """`"id=YYYY-MM-DD,..."` as a mapping (ValueError for an entry without `=` or a bad date)."""
    dates = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        model, sep, day = entry.partition("=")
        if not sep:
            raise ValueError(f"shutdown_dates: {entry!r} is not id=YYYY-MM-DD")
        dates[model.strip()] = date.fromisoformat(day.strip()).isoformat()
    return dates


def _model_not_found(model: str) -> web.Response:
    """OpenAI's answer to a model that does not exist (or no longer does)."""
    message = f"The model `{model}` does not exist or you do not have access to it."
    error = {"message": message, "type": "invalid_request_error", "param": None}
    return _json(404, {"error": {**error, "code": "model_not_found"}})


class OfflineServer:
    """The routes, over one Faults, one BatchStore and the account's limits, all set by
    `settings`; `require_key`: answer 401 to requests without `Authorization: Bearer <it>`;
    `clock`: the monotonic seconds the limits refill by (the wall clock, given where the
    server is made: `server.main`)."""

    def __init__(
        self,
        settings: OfflineServerConfig,
        require_key: str | None = None,
        *,
        clock: Callable[[], float],
    ) -> None:
        self.faults = Faults(settings, require_key)
        self.batches = BatchStore(settings.batch_delay_s)
        self.limits = AccountLimits(settings, clock)
        self.shutdown_dates = parse_shutdown_dates(settings.shutdown_dates)
        self.responses_api = not settings.no_responses_api
        self.flex_unavailable = settings.flex_unavailable  # flex requests still to refuse
        self.received: deque[dict[str, object]] = deque(maxlen=RECENT)  # the latest bodies
        self.fail_status, self.fail_after = settings.fail_status, settings.fail_after
        self.limited_answered = 0  # requests of the limited role let through (`fail_after`)
        self.down_after = settings.down_after
        self.down = asyncio.Event()  # set at the `down_after`-th chat request: `serve` closes

    def retired(self, model: str) -> bool:
        """Whether `model` is past its shutdown date (today, on this machine's clock)."""
        day = self.shutdown_dates.get(model)
        return day is not None and date.fromisoformat(day) <= date.today()

    def describe(self, model: str) -> dict[str, object]:
        """A model object as `GET /v1/models/{id}` returns it (`shutdown_date` where given)."""
        found: dict[str, object] = {
            "id": model,
            "object": "model",
            "created": 0,
            "owned_by": "system",
        }
        if model in self.shutdown_dates:
            found["shutdown_date"] = self.shutdown_dates[model]
        return found

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
                body=store.files[parts[2]].content, content_type="application/octet-stream"
            )
        if path.rstrip("/") == "/stats/requests":
            return _json(200, {"requests": list(self.received)})
        if path.rstrip("/") == "/stats":
            return _json(200, {**self.faults.counts, **self.limits.limit_stats()})
        if path.rstrip("/") == "/v1/models":
            listed = [self.describe(m) for m in self.shutdown_dates if not self.retired(m)]
            return _json(200, {"object": "list", "data": listed})
        if parts[:2] == ["v1", "models"] and len(parts) >= 3:
            model = "/".join(parts[2:])  # ids such as org/name
            return (
                _model_not_found(model) if self.retired(model) else _json(200, self.describe(model))
            )
        return _not_found(path)

    async def post(self, request: web.Request) -> web.Response:
        path = request.path.rstrip("/")
        raw = await request.read()
        if path == "/stats/reset":
            self.faults.reset()
            self.received.clear()
            return _json(200, {"ok": True})
        if path == "/v1/files":
            return _json(200, self.batches.upload(request.headers["Content-Type"], raw))
        if path == "/v1/batches":
            batch = json.loads(raw)
            if batch.get("input_file_id") not in self.batches.files:
                return _json(404, {"error": {"message": "no such file", "type": "not_found"}})
            if self.limits.quota_exhausted and self.limits.applies(True):  # judge calls only
                self.faults.count("quota_refused")  # as OpenAI: the batch is not created
                return _json(*self.limits.quota_error())
            return _json(200, self.batches.create(batch, self.faults))
        responses = path == "/v1/responses" and self.responses_api
        if path != "/v1/chat/completions" and not responses:
            return _not_found(request.path)
        try:
            sent = json.loads(raw)
            self.received.append({"path": path, "body": sent})
            body, messages = chat_request(sent) if responses else (sent, sent["messages"])
            model = str(body["model"])
            messages = as_system(messages)  # a developer message is the system message
        except (ValueError, KeyError, TypeError):
            return _json(
                400, {"error": {"message": "invalid request body", "type": "invalid_request"}}
            )
        self.faults.count("chat_requests")
        if self.down_after and self.faults.counts["chat_requests"] >= self.down_after:
            self.down.set()  # `serve` closes the port once this answer is sent
            return _json(503, _OUTAGE)
        tier = body.get("service_tier")
        if tier == "flex" and self.flex_unavailable > 0:
            self.flex_unavailable -= 1
            counts = self.faults.counts
            counts["flex_unavailable"] = counts.get("flex_unavailable", 0) + 1
            return _json(429, _FLEX_UNAVAILABLE)
        faults = self.faults
        if isinstance(model, str) and self.retired(model):
            return _model_not_found(model)
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
            if self.fail_status and self.limited_answered >= self.fail_after:
                faults.count("outage_failed")
                return _json(self.fail_status, _OUTAGE)
            self.limited_answered += 1
        faults.count("requests")
        faults.count("in_flight")
        received = time.perf_counter()
        try:
            delay, draw = faults.draw()
            if delay:
                await asyncio.sleep(delay)
            status, payload, extra = completion_response(faults, draw, model, body, messages)
            if status == 200:
                payload["service_tier"] = "default" if tier in (None, "auto") else tier
                if responses:
                    payload = response_reply(payload, sent.get("max_output_tokens"))
            # as OpenAI's, from admitting the request to answering it: the client learns from
            # it when its request was admitted (model/pacer/buckets.py)
            processing = {"openai-processing-ms": f"{(time.perf_counter() - received) * 1e3:.0f}"}
            return _json(status, payload, {**headers, **(extra or {}), **processing})
        finally:
            faults.count("in_flight", -1)
            faults.count("held_ms_total", (time.perf_counter() - received) * 1000.0)
            faults.counts["last_reply_at"] = time.time()


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
        await server.down.wait()  # `down_after`: the port closes, connections are refused
        await runner.cleanup()
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
