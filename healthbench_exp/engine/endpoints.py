"""The endpoints of one run: which roles it talks to, their URLs (checked reachable), the
clients (sharing the response cache, the in-flight cap and the budget), the judge transport
(direct, or the Batch API), and their counters at the end."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from healthbench_exp.config.schema import (
    BudgetConfig,
    CacheConfig,
    EndpointConfig,
    JudgeConfig,
    OfflineServerConfig,
    RunnerConfig,
)
from healthbench_exp.core.completer import Completer
from healthbench_exp.engine.builtin import builtin_identity, builtin_server
from healthbench_exp.engine.serve import ServedModels, is_served, serve_identity
from healthbench_exp.model.access import (
    OPENAI_DEFAULT_URL,
    check_reachable,
    endpoint_url,
    resolve_api_key,
)
from healthbench_exp.model.batch import BatchJudge
from healthbench_exp.model.cache import ResponseCache, cache_dir
from healthbench_exp.model.costs import Budget
from healthbench_exp.model.endpoint import ChatEndpoint
from healthbench_exp.model.limits import EndpointStats

log = logging.getLogger(__name__)


class Server(Protocol):
    """A started built-in server (`engine.builtin.builtin_server`), as far as this module sees."""

    def wait_ready(self) -> str:
        """Its base URL, once it listens."""


@dataclass(frozen=True)
class Role:
    """One endpoint role (`model` or `judge`) as its client is made: its config section, the
    sampling it sends, and what names it in cache keys."""

    name: str
    endpoint: EndpointConfig
    temperature: float | None
    max_tokens: int | None
    identity: str  # its URL, or what serves it (the built-in or a served model's port changes)


def endpoint_identity(endpoint: EndpointConfig, offline_server: OfflineServerConfig) -> str:
    """What names an endpoint in cache keys: its URL, or the built-in server's settings, or the
    served model's command (their port changes every run)."""
    if endpoint.builtin:
        return builtin_identity(offline_server)
    if is_served(endpoint):
        return serve_identity(endpoint)
    return endpoint.base_url or OPENAI_DEFAULT_URL


def resolve_keys(roles: dict[str, Role]) -> dict[str, str]:
    """API keys of the endpoints the run needs, read before any request (missing: ConfigError)."""
    return {name: resolve_api_key(name, role.endpoint) for name, role in roles.items()}


def reachable_urls(
    roles: dict[str, Role],
    server: Server | None,
    connect_timeout_s: float,
    served: ServedModels | None = None,
) -> dict[str, str | None]:
    """Each role's base URL (None = OpenAI's), each checked reachable so that an unreachable one
    fails fast; waits for the built-in `server` to listen, and for the `served` models' servers
    to answer, if there are any."""
    server_url = None
    if server is not None:
        server_url = server.wait_ready()
        log.info("built-in offline endpoint at %s (its scores are meaningless)", server_url)
    served_urls = served.wait_ready() if served is not None else {}
    for name, url in served_urls.items():
        log.info("%s: %s served at %s", name, roles[name].endpoint.name, url)
    urls = {
        name: served_urls[name] if name in served_urls else endpoint_url(role.endpoint, server_url)
        for name, role in roles.items()
    }
    for name, role_url in urls.items():
        check_reachable(name, role_url or OPENAI_DEFAULT_URL, connect_timeout_s)
    return urls


@contextlib.contextmanager
def reachable_endpoints(
    roles: dict[str, Role], offline_server: OfflineServerConfig, connect_timeout_s: float
) -> Iterator[dict[str, str | None]]:
    """Start the built-in server if a role uses it; yield `reachable_urls`; stop it on exit."""
    needed = any(role.endpoint.builtin for role in roles.values())
    with builtin_server(needed, offline_server) as server:
        yield reachable_urls(roles, server, connect_timeout_s)


@contextlib.asynccontextmanager
async def open_endpoints(
    roles: dict[str, Role],
    urls: dict[str, str | None],
    keys: dict[str, str],
    runner: RunnerConfig,
    cache_config: CacheConfig,
    budget_config: BudgetConfig,
) -> AsyncIterator[dict[str, ChatEndpoint]]:
    """One ChatEndpoint per role in `urls`, sharing the response cache; closed on exit.

    Call inside the running event loop: clients made outside it break the second job of a
    multirun ("Event loop is closed").
    """
    cache = ResponseCache(cache_dir(cache_config.dir)) if cache_config.enabled else None
    shared = asyncio.Semaphore(runner.max_in_flight) if runner.max_in_flight else None
    budget = Budget(budget_config.max_usd) if budget_config.max_usd is not None else None
    endpoints = {
        name: ChatEndpoint(
            name,
            roles[name].endpoint,
            base_url=url,
            api_key=keys[name],
            temperature=roles[name].temperature,
            max_tokens=roles[name].max_tokens,
            max_retries=runner.max_retries,
            timeout_s=runner.reasoning_request_timeout_s
            if roles[name].endpoint.reasoning
            else runner.request_timeout_s,
            connect_timeout_s=runner.connect_timeout_s,
            cache=cache,
            shared_limit=shared,
            identity=roles[name].identity,
            budget=budget,
            http_client=runner.http_client,
        )
        for name, url in urls.items()
    }
    try:
        yield endpoints
    finally:
        for endpoint in endpoints.values():
            await endpoint.close()
        if cache is not None:
            cache.close()


def endpoint_stats(endpoints: dict[str, ChatEndpoint], started: float) -> dict[str, Any]:
    """Counters of both roles (zeros for one that was not used) and the evaluation time."""
    stats: dict[str, Any] = {
        role: asdict(endpoints[role].stats if role in endpoints else EndpointStats())
        for role in ("model", "judge")
    }
    stats["evaluation_s"] = time.monotonic() - started
    budget = next((e.budget for e in endpoints.values() if e.budget is not None), None)
    stats["budget"] = (
        None
        if budget is None
        else {
            "max_usd": budget.max_usd,
            "spent_usd": budget.spent,
            "stopped": budget.stopped,
            "requests_not_sent": budget.refused,
        }
    )
    return stats


@contextlib.asynccontextmanager
async def judge_transport(
    judge_config: JudgeConfig,
    judge: ChatEndpoint,
    output_dir: Path,
    model: ChatEndpoint | None = None,
) -> AsyncIterator[Completer]:
    """The judge endpoint itself, or (judge.batch=true) a BatchJudge in front of it."""
    if not judge_config.batch:
        yield judge
        return

    def sampling() -> bool:
        return model is not None and (model.stats.in_flight > 0 or bool(model.limit.waiters))

    batch = BatchJudge(judge, output_dir, judge_config.batch_poll_s, busy=sampling)
    await batch.start()
    try:
        yield batch
    finally:
        await batch.close()
