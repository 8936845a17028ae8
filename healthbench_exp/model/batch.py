"""`judge.batch=true`: judge calls through OpenAI's Batch API (half price, results within 24 h).

NOT the reference protocol's transport (the prompts and parameters are the same). `BatchJudge`
stands in for the judge's ChatEndpoint: `complete` answers from the response cache or queues the
call, its key claimed (`ResponseCache.lookup`) until the batch's reply is stored, so another run
sharing the cache that batches the same call waits for it instead of paying again. When the
queue has stopped growing (no model reply pending, nothing added for `SETTLE_S`), the queued
calls are uploaded as one JSONL file and submitted as one batch; the batch is polled every
`judge.batch_poll_s` seconds and its replies are stored in the response cache (keyed exactly as
synchronous calls, so either transport replays the other) before the waiting graders get them.
Verdicts that cannot be parsed are resampled in a further batch. A batch refused with 429
`insufficient_quota` is the run's quota stop, as a refused call is (`model.health`): the run
halts and writes what finished, with its spend.

Every submitted batch is recorded in `<run dir>/batches.json` when it is created, before it is
waited for (written through the run's `core.run_files.RunFiles`). A run that
stops while a batch is pending is resumed with `resume=<run dir>`: it waits for the recorded
batches and harvests them instead of submitting the calls again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from healthbench_exp.core.completer import Reply
from healthbench_exp.core.endpoint_errors import EmptyReply, RequestFailed
from healthbench_exp.core.run_files import BATCHES_FILE, RunFiles
from healthbench_exp.model.cache import CachedReply, prompt_chars
from healthbench_exp.model.endpoint import ChatEndpoint
from healthbench_exp.model.pacer import classify_429
from healthbench_exp.model.replay import replay_or_claim
from healthbench_exp.model.reply_json import json_map
from healthbench_exp.model.wire import PATHS, read_reply, with_messages

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

SETTLE_S = 1.0
FINAL_STATES = ("completed", "failed", "expired", "cancelled")


class BatchJudge:
    """The judge endpoint, with calls sent in batches; `complete` as ChatEndpoint's."""

    def __init__(
        self,
        endpoint: ChatEndpoint,
        files: RunFiles,
        poll_s: float,
        busy: Callable[[], bool] = lambda: False,
        record: str = BATCHES_FILE,  # a jury member's: its own file (see `model.roles`)
    ) -> None:
        self.endpoint = endpoint
        self.config = endpoint.config
        self.stats = endpoint.stats
        self.files = files
        self.record_name = record
        self.record = files.directory / record
        self.poll_s = poll_s
        self.busy = busy  # True while replies that will need grading are still being sampled
        self.pending: dict[str, tuple[list[dict[str, str]], asyncio.Future[Reply]]] = {}
        self.last_added = 0.0
        self.worker: asyncio.Task[None] | None = None
        # the replies of an earlier attempt's batch that this invocation harvested (and counted
        # as paid: it pays for them now), by key: each answers its call once as paid here, not
        # also as a replay from the response cache
        self.harvested: dict[str, Reply] = {}

    def messages_for(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        return self.endpoint.messages_for(messages)

    async def complete(
        self, messages: list[dict[str, str]], tag: str = "", prefix_key: str | None = None
    ) -> Reply:
        sent = self.endpoint.messages_for(messages)
        key = self.endpoint.request_key(sent, tag)
        # a miss is claimed until its reply is stored (at the harvest), as on the direct path:
        # another run sharing the cache that batches the same call meanwhile waits for it
        if (harvested := self.harvested.pop(key, None)) is not None:
            return harvested
        endpoint = self.endpoint
        async with replay_or_claim(endpoint.cache, key, endpoint.profile, self.stats) as replay:
            if replay is not None:
                return replay
            if key not in self.pending:
                future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
                self.pending[key] = (sent, future)
                self.last_added = endpoint.clock.now()
            return await asyncio.shield(self.pending[key][1])

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Harvest the batches an earlier attempt of this run submitted, then start submitting."""
        for entry in self._recorded():
            if not entry.get("harvested"):
                log.info("waiting for batch %s submitted by an earlier attempt", entry["id"])
                await self._wait_and_harvest(str(entry["id"]))
        self.worker = asyncio.create_task(self._submit_when_settled())

    async def close(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.worker

    async def _submit_when_settled(self) -> None:
        while True:
            await self.endpoint.clock.sleep(min(0.2, SETTLE_S))
            settled = self.endpoint.clock.now() - self.last_added >= SETTLE_S
            if self.pending and settled and not self.busy():
                batch, self.pending = self.pending, {}
                try:
                    await self._submit(batch)
                except Exception as exc:  # every waiting grader learns why
                    for _, future in batch.values():
                        if not future.done():
                            future.set_exception(self._failure(exc))

    def _failure(self, exc: Exception) -> Exception:
        """What a grader waiting on a batch that could not be submitted makes of `exc`: a 429
        `insufficient_quota` is the quota stop (the run halts, as at a refused call:
        `model.health`), anything else a failed call."""
        if getattr(exc, "status_code", None) == 429:  # the SDK's RateLimitError
            response = getattr(exc, "response", None)
            headers = response.headers if response is not None else {}
            refusal = classify_429(headers, {"error": getattr(exc, "body", None)})
            if refusal.quota:
                return self.endpoint.quota_stop(refusal.message)
        return RequestFailed(f"batch failed: {exc}")

    # -- the Batch API -----------------------------------------------------------------------

    @property
    def client(self) -> openai.AsyncOpenAI:
        return self.endpoint.clients[0]

    async def _submit(self, batch: dict[str, tuple[list[dict[str, str]], asyncio.Future[Reply]]]):
        api = self.endpoint.api
        url = "/v1" + PATHS[api]  # /v1/chat/completions or /v1/responses: the judge's API
        # the Batch API is a tier of its own (billed at its rates): no service_tier in its lines
        body = {k: v for k, v in self.endpoint.body.items() if k != "service_tier"}
        lines = "".join(
            json.dumps(
                {
                    "custom_id": key,
                    "method": "POST",
                    "url": url,
                    "body": with_messages(api, body, sent),
                }
            )
            + "\n"
            for key, (sent, _) in batch.items()
        )
        uploaded = await self.client.files.create(
            file=("healthbench-judge-calls.jsonl", lines.encode("utf-8")), purpose="batch"
        )
        created = await self.client.batches.create(
            input_file_id=uploaded.id,
            endpoint=url,  # type: ignore[arg-type]  # one of the endpoints the SDK lists
            completion_window="24h",
            metadata={"harness": "healthbench-exp"},
        )
        self._write_record([*self._recorded(), {"id": created.id, "requests": len(batch)}])
        log.info("submitted batch %s with %d judge calls", created.id, len(batch))
        await self._wait_and_harvest(created.id, batch)

    async def _wait_and_harvest(
        self,
        batch_id: str,
        waiting: dict[str, tuple[list[dict[str, str]], asyncio.Future[Reply]]] | None = None,
    ) -> None:
        """Poll until the batch ends; cache its replies; answer (or fail) the waiting calls."""
        waiting = waiting or {}
        while True:
            batch = await self.client.batches.retrieve(batch_id)
            if batch.status in FINAL_STATES:
                break
            counts = batch.request_counts
            log.info(
                "batch %s %s: %s of %s done",
                batch_id,
                batch.status,
                getattr(counts, "completed", "?"),
                getattr(counts, "total", "?"),
            )
            await self.endpoint.clock.sleep(self.poll_s)
        answered: set[str] = set()
        if batch.output_file_id:
            content = await self.client.files.content(batch.output_file_id)
            for line in content.text.splitlines():
                if line.strip():
                    key = self._harvest_line(json_map(json.loads(line)), waiting)
                    if key is not None:
                        answered.add(key)
        for key, (_, future) in waiting.items():
            if key not in answered and not future.done():
                future.set_exception(RequestFailed(f"batch {batch_id} ended {batch.status}"))
        self._write_record(
            [
                {**e, "harvested": True, "status": batch.status} if e["id"] == batch_id else e
                for e in self._recorded()
            ]
        )

    def _harvest_line(
        self,
        line: Mapping[str, object],
        waiting: dict[str, tuple[list[dict[str, str]], asyncio.Future[Reply]]],
    ) -> str | None:
        custom_id = line.get("custom_id")
        key = custom_id if isinstance(custom_id, str) else None
        response = json_map(line.get("response"))
        body = json_map(response.get("body"))
        future = waiting[key][1] if key in waiting else None
        if response.get("status_code") != 200:
            self.endpoint._failed(f"Batch{response.get('status_code')}")
            if future is not None and not future.done():
                future.set_exception(RequestFailed(f"batch item failed: {line.get('error')}"))
            return key
        reply = read_reply(self.endpoint.api, body)
        usage = reply.usage
        prompt, _, completion = self.stats.count_paid(usage, reply.service_tier)
        text = reply.text
        if self.endpoint.cache is not None and key is not None and text:
            chars = prompt_chars(waiting[key][0]) if key in waiting else None
            self.endpoint.cache.put(key, CachedReply.of(text, usage, chars), self.endpoint.profile)
        if future is None and key is not None and text:  # an earlier attempt's batch
            self.harvested[key] = Reply(text, prompt, completion)
        if future is not None and not future.done():
            if text:
                future.set_result(Reply(text, prompt, completion))
            else:
                future.set_exception(EmptyReply("empty reply in batch output"))
        return key

    def _recorded(self) -> list[dict[str, object]]:
        try:
            entries: object = json.loads(self.record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []

    def _write_record(self, entries: Sequence[Mapping[str, object]]) -> None:
        """Write `batches.json`, atomically (see `RunFiles.write_batches`)."""
        self.files.write_batches(self.record_name, entries)
