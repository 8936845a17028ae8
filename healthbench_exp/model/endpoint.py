"""Endpoints (Chat Completions or the Responses API, `model.wire`): the response cache, the
pacer, the concurrency limits, the budget and the checks of each reply, in front of the
transport (`model/transport.py`: the real `openai.AsyncOpenAI` client by default)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from healthbench_exp.config.schema import EndpointConfig, HttpClient
from healthbench_exp.core.completer import Reply
from healthbench_exp.core.endpoint_errors import (
    EmptyReply,
    FatalEndpointError,
    QuotaExhausted,
    RequestFailed,
)
from healthbench_exp.model.access import OPENAI_DEFAULT_URL, ClientSettings, shared_tls_context
from healthbench_exp.model.cache import (
    CachedReply,
    Profile,
    RequestKeys,
    ResponseCache,
    prompt_chars,
)
from healthbench_exp.model.clock import Clock
from healthbench_exp.model.costs import Budget, request_estimate_usd, tier_cost_usd
from healthbench_exp.model.endpoint_stats import EndpointStats
from healthbench_exp.model.health import (
    CONNECTION_ERRORS,
    NO_REPLY,
    REFUSED,
    UNUSABLE,
    Halt,
    answer_failure,
)
from healthbench_exp.model.http import NO_REPLY as TIMED_OUT
from healthbench_exp.model.http import REFUSED as CONNECTION_REFUSED
from healthbench_exp.model.http import Answer, DirectPoster, HttpError
from healthbench_exp.model.pacer import (
    AdaptiveLimit,
    EndpointPacer,
    LoopTurns,
    RateLimited,
    Refusal,
    Ticket,
    TurnLapsed,
    brief_refusal,
    classify_429,
)
from healthbench_exp.model.replay import replay_or_claim
from healthbench_exp.model.reply_json import json_map
from healthbench_exp.model.request_slots import (
    concurrency_slots,
    counted_in_flight,
    journal_entry,
    reserved_spend,
)
from healthbench_exp.model.spend_journal import SpendJournal
from healthbench_exp.model.transport import SdkClients, Transport
from healthbench_exp.model.wire import (
    PATHS,
    cache_params,
    read_reply,
    reply_limit,
    request_body,
    system_role,
    with_messages,
)

if TYPE_CHECKING:
    import openai


def _not_watched(kind: str, error: str) -> None:
    """An endpoint no run watches counts its failed attempts nowhere."""


@dataclass(frozen=True)
class Shared:
    """What the endpoints of a run share: the run's stop (`halt`, `model.health.Halt`: once set,
    no request is sent; the budget sets it when it refuses a request; the run's
    `engine.control.RunControl` owns it), the run's one clock (every time the request path
    reads, every wait it sleeps: pacer, buckets, limits, retries, the stall notice's silence),
    the response cache, the cap on requests in flight together (`runner.max_in_flight`), the
    budget (`budget.max_usd`) and the event loop's turns (`LoopTurns`)."""

    halt: Halt
    clock: Clock
    cache: ResponseCache | None = None
    limit: asyncio.Semaphore | None = None
    budget: Budget | None = None
    turns: LoopTurns = field(default_factory=LoopTurns)
    journal: SpendJournal | None = None  # the run's spend journal (`model.spend_journal`)


class ChatEndpoint:
    """One endpoint's client, adaptive concurrency limit, fixed parameters, cache and counters."""

    def __init__(
        self,
        role: str,
        config: EndpointConfig,
        *,
        base_url: str | None,
        api_key: str,
        temperature: float | None,
        max_tokens: int | None,
        transport: Transport | None = None,
        shared: Shared,
        identity: str | None = None,
        on_attempt_failed: Callable[[str, str], None] | None = None,
    ) -> None:
        transport = transport or Transport()
        cache = shared.cache
        self.clock = clock = shared.clock
        self.role = role
        self.config = config
        self.limit = AdaptiveLimit(config.max_concurrency, clock.now)
        self.stats = EndpointStats(lowest_limit=config.max_concurrency)
        # every request starts through it: a rate-limit 429 pauses and paces them all
        self.pacer = EndpointPacer(
            role,
            config.rate_limit.requests_per_minute,
            config.rate_limit.tokens_per_minute,
            clock=clock,
        )
        self.url = base_url or OPENAI_DEFAULT_URL
        self.timeout_s = transport.timeout_s
        # when a reply (any HTTP answer) last came, and since when requests have been in flight:
        # the later of the two is how long the endpoint has been silent (see `silent_for`)
        self.last_reply_at = self.busy_since = clock.now()
        # every attempt that brought nothing usable, by kind (`model.health.KINDS`) and its
        # error: the run's `EndpointHealth.attempt_failed` when the run watches it
        self.on_attempt_failed: Callable[[str, str], None] = on_attempt_failed or _not_watched
        self.halt = shared.halt
        # 429s are not retried by the client (see SdkClients) but here, without a bound
        settings: ClientSettings = {
            "api_key": api_key,
            "base_url": base_url,
            "max_retries": transport.max_retries,
        }
        # the openai clients, made at the first request (the Batch API uses them too)
        self.api = config.api
        self.sdk = SdkClients(
            settings,
            transport,
            config.max_concurrency,
            self._answered,
            PATHS[self.api],
            self._unanswered,
            self._before_retry,
            sleep=clock.sleep,
        )
        # runner.http_client=direct: requests skip the openai client (see model/http.py)
        self.poster: DirectPoster | SdkClients = self.sdk
        if transport.http_client is HttpClient.direct:
            self.poster = DirectPoster(
                base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL,
                api_key,
                max_retries=transport.max_retries,
                timeout_s=transport.timeout_s,
                connect_timeout_s=transport.connect_timeout_s or transport.timeout_s,
                tls=shared_tls_context(),
                on_response=self._answered,
                path=PATHS[self.api],
                on_unanswered=self._unanswered,
                before_retry=self._before_retry,
                sleep=clock.sleep,
            )
        self.cache = cache
        self.shared_limit = shared.limit  # runner.max_in_flight, shared with the other endpoints
        self.budget = shared.budget  # budget.max_usd, shared with the other endpoints
        self.turns = shared.turns  # requests start a few per turn of the loop
        self.journal = shared.journal  # each request sent and answered, as it happens
        # what identifies the endpoint in cache keys (the built-in server's port changes per run,
        # so it is named by its settings instead)
        self.identity = identity or base_url or OPENAI_DEFAULT_URL
        self.body = request_body(config, temperature, max_tokens)
        params = cache_params(self.api, self.body)  # the API is part of every cache key
        self.request_key = RequestKeys(self.identity, params)
        # its replies' profile in the cache (model name and length-changing settings)
        self.profile = (
            None
            if cache is None
            else cache.profile(Profile.of(role, self.identity, params, config.system_message))
        )

    @property
    def clients(self) -> list[openai.AsyncOpenAI]:
        """The `openai.AsyncOpenAI` clients, used in turn; made on first use, in the event loop."""
        return self.sdk.clients

    def _answered(self, status: int, headers: Mapping[str, str]) -> None:
        self.last_reply_at = self.clock.now()
        self.pacer.buckets.heard(headers)
        if status == 429:
            self.stats.rate_limited += 1
            if not brief_refusal(headers):  # a brief one delays its own request alone
                self.limit.rate_limited()
            self.stats.lowest_limit = self.limit.lowest
        kind = answer_failure(status, headers)
        if kind:
            self.on_attempt_failed(kind, f"HTTP {status}")

    def _unanswered(self, error: HttpError) -> None:
        """An attempt that got no HTTP answer: counted by kind; a refused connection is an
        answer of sorts (the stall notice is for an endpoint that accepts and stays silent)."""
        if error.kind == CONNECTION_REFUSED:
            self.last_reply_at = self.clock.now()
        kinds = {CONNECTION_REFUSED: REFUSED, TIMED_OUT: NO_REPLY}
        self.on_attempt_failed(kinds.get(error.kind, CONNECTION_ERRORS), str(error))

    def _before_retry(self) -> None:
        self.halt.check()  # a halted run sends no retry either

    def silent_for(self, now: float) -> float | None:
        """Seconds since the endpoint last answered while requests wait on it (None: none do)."""
        if self.stats.in_flight <= 0:
            return None
        return now - max(self.last_reply_at, self.busy_since)

    def messages_for(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """The messages actually sent: the configured system message first, if any."""
        return messages_sent(self.config, messages)

    async def complete(
        self, messages: list[dict[str, str]], tag: str = "", prefix_key: str | None = None
    ) -> Reply:
        """The reply to `messages_for(messages)`, from the cache or the endpoint.

        `tag` (rollout and attempt) tells apart calls that are meant to be sampled anew.
        `prefix_key` groups calls that share a long prompt prefix; with `prompt_cache_key` on, it
        is sent so the provider's prompt cache can reuse that prefix (it does not change the reply,
        so it is not part of the response-cache key).
        A miss is claimed (`ResponseCache.lookup`) until its reply is stored: another process
        sharing the cache that misses the same key meanwhile waits for it, and replays it.
        Raises RequestFailed (this call failed for good) or FatalEndpointError (stop the run).
        """
        sent = self.messages_for(messages)
        cache = self.cache
        key = self.request_key(sent, tag) if cache is not None else ""
        async with replay_or_claim(cache, key, self.profile, self.stats) as replay:
            if replay is not None:
                return replay
            paid = await self._request(sent, prefix_key if self.config.prompt_cache_key else None)
            if cache is not None:
                cache.put(key, paid, self.profile)
        return Reply(paid.text, paid.prompt_tokens, paid.completion_tokens)

    async def _request(self, sent: list[dict[str, str]], prefix_key: str | None) -> CachedReply:
        """Send when the pacer allows; a rate-limited request waits and is sent again."""
        # what a tokens limit counts: the prompt at 4 characters a token, and the completion
        body = self.body
        reserved = reply_limit(body)
        tokens = prompt_chars(sent) / 4 + reserved
        pacer = self.pacer
        while True:
            await self.turns.wait()
            ticket = await pacer.start(tokens)
            buckets = pacer.buckets
            refusal: Refusal | None = None
            try:
                reply = await self._send(sent, prefix_key, ticket)
            except TurnLapsed:  # a 429 came while it waited for a slot: start again
                continue
            except RateLimited as refused:  # (learnt from, see `_post`)
                refusal = refused.refusal
            finally:
                buckets.ended(ticket)  # never sent: its cost back; unanswered: out of flight
            if refusal is not None:  # waited out (this request, or the endpoint), sent again
                await pacer.refused(refusal, ticket.started_at)
                continue
            pacer.succeeded(ticket.started_at)
            return reply

    async def _send(
        self, sent: list[dict[str, str]], prefix_key: str | None, ticket: Ticket
    ) -> CachedReply:
        """The reply to `sent`, sent once the request holds its places and its budget (see
        `model.request_slots`), on the pacer's `ticket`: marked sent when it leaves; a usable
        reply's headers teach the pacer's buckets before it ends."""
        stats, config = self.stats, self.config
        self.halt.check()  # the run is halted: nothing more is sent
        estimate = 0.0
        if self.budget is not None:
            chars = sum(len(m["content"]) for m in sent)
            tokens, tier = config.expected_completion_tokens, config.service_tier
            estimate = request_estimate_usd(config.price, chars, tokens, tier)
        async with concurrency_slots(self.limit, self.shared_limit) as outcome:
            with (
                reserved_spend(self.budget, estimate, self.halt) as spend,
                counted_in_flight(stats) as first,
            ):
                if first:
                    self.busy_since = self.clock.now()
                body = with_messages(self.api, self.body, sent)
                if prefix_key is not None:
                    body["prompt_cache_key"] = prefix_key
                self.poster.open()  # made at the first request, before it is marked sent
                self.halt.check()  # halted while this request waited for its places
                self.pacer.sending(ticket)  # the level once sent
                with journal_entry(self.journal, self.role, prompt_chars(sent)) as line:
                    answer = await self._post(body, sent, ticket)
                    outcome.success = True
                    reply = read_reply(self.api, json_map(answer.body))
                    line.usage, line.service_tier = reply.usage, reply.service_tier
                paid = stats.count_paid(reply.usage, reply.service_tier)
                spend.cost_usd = tier_cost_usd(config, *paid) or 0.0
        text, reason = reply.text, reply.finish_reason
        if reason == "content_filter":
            self._failed("Refused")
            self.on_attempt_failed(UNUSABLE, f"refused reply (finish_reason={reason})")
            raise RequestFailed(f"refused reply (finish_reason={reason})")
        if not text:
            self._failed("EmptyReply")
            self.on_attempt_failed(UNUSABLE, f"empty reply (finish_reason={reason})")
            raise EmptyReply(f"empty reply (finish_reason={reason})")
        self.pacer.buckets.learn(answer.headers, ticket, True)  # answered: learnt from
        return CachedReply.of(text, reply.usage, prompt_chars(sent))

    def _failed(self, kind: str) -> None:
        self.stats.failures += 1
        self.stats.errors[kind] = self.stats.errors.get(kind, 0) + 1

    async def _post(
        self, body: Mapping[str, object], sent: list[dict[str, str]], ticket: Ticket
    ) -> Answer:
        """What the endpoint answered. A failed request raises what the run makes of it:
        RateLimited (its headers learnt from on `ticket`: sent again after its wait),
        RequestFailed (this call failed) or FatalEndpointError (stop the run); a cancelled one
        is counted abandoned (sent, maybe paid)."""
        try:
            return await self.poster.post(body)
        except asyncio.CancelledError:
            self.stats.count_abandoned(prompt_chars(sent))
            raise
        except HttpError as exc:
            failure = self._failure(exc)
            if isinstance(failure, RateLimited):  # refused: what the 429 said is learnt
                self.pacer.buckets.learn(exc.headers, ticket, False)
                raise failure from None
            raise failure from exc

    def _failure(self, exc: HttpError) -> Exception:
        """What the run makes of a failed request: RateLimited, RequestFailed or fatal."""
        if exc.status in (401, 403):
            return FatalEndpointError(
                f"{self.role} endpoint refused the API key ({exc.status}); "
                f"check {self.config.api_key_env}"
            )
        if exc.status == 404:
            return FatalEndpointError(
                f"{self.role} endpoint does not know model {self.config.name!r} or the URL "
                f"path {PATHS[self.api]} ({exc.status}); check {self.role}.name, "
                f"{self.role}.base_url and {self.role}.api"
            )
        if exc.status == 429:
            refusal = classify_429(exc.headers, exc.body and {"error": exc.body})
            if refusal.quota:
                return self.quota_stop(refusal.message)
            if not refusal.too_large:
                return RateLimited(refusal)
            self._failed("RequestTooLarge")  # (its attempt counted in `_answered`)
            return RequestFailed(f"RateLimitError: {refusal.message}")
        if exc.status is not None and exc.status < 300:  # a 2xx whose reply is not JSON
            self.on_attempt_failed(UNUSABLE, str(exc))
        self._failed(exc.name)
        return RequestFailed(str(exc))

    def quota_stop(self, message: str) -> QuotaExhausted:
        """What stops the run at this endpoint's 429 `insufficient_quota` (`message`: what the
        endpoint said), whether a call or a batch (`model.batch`) was refused."""
        return QuotaExhausted(
            f"{self.role} endpoint {self.url}: insufficient_quota (429): "
            f"{message or 'quota exhausted'}; add credit or raise the limit"
        )

    async def close(self) -> None:
        await self.sdk.close()
        if self.poster is not self.sdk:
            await self.poster.close()


def messages_sent(config: EndpointConfig, messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """What an endpoint is sent for `messages`: its system message first, if it has one (as a
    `developer` message through the Responses API, as the reference's ResponsesSampler)."""
    if config.system_message is None:
        return list(messages)
    return [{"role": system_role(config.api), "content": config.system_message}, *messages]
