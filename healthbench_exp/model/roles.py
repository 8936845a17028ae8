"""The roles of a run, built in one place: the model, the judge and each further judge.

`Roles.of(config, identity)` is the one place that works out which roles a run talks to (the
model only when it samples replies, the judge always) and how each is reached: its endpoint
settings, the sampling it sends, what names it in cache keys (`identity`, given by the engine,
which starts the built-in and served endpoints) and its transport (chat completions, or the
Batch API for a judge with `batch: true`). `open_roles` opens them inside the running event
loop: one `ChatEndpoint` per role (its adaptive limit, rate-limit pacing, retries and counters),
all sharing the response cache, the in-flight cap and the budget, with a `BatchJudge` in front
of a batched judge. The engine and the tasks see an open role only as a `Completer` and its
counters. A new role is one more entry of `Roles`; a new transport one more branch of
`_transport`: both here, nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import asdict, dataclass, replace

from healthbench_exp.config.checks import needed_roles
from healthbench_exp.config.schema import (
    Api,
    BudgetConfig,
    CacheConfig,
    Config,
    EndpointConfig,
    JudgeConfig,
    RunnerConfig,
)
from healthbench_exp.core.completer import Completer
from healthbench_exp.core.run_files import BATCHES_FILE, RunFiles
from healthbench_exp.model.batch import BatchJudge
from healthbench_exp.model.cache import CALL_JOURNAL, ResponseCache, cache_dir
from healthbench_exp.model.clock import Clock
from healthbench_exp.model.costs import usage_summary
from healthbench_exp.model.endpoint import ChatEndpoint, Shared, Transport
from healthbench_exp.model.endpoint_stats import EndpointStats
from healthbench_exp.model.health import EndpointHealth, Halt
from healthbench_exp.model.pacer import share_buckets
from healthbench_exp.model.spend_journal import SpendJournal
from healthbench_exp.model.sweep_budget import budget_of

MODEL, JUDGE = "model", "judge"


def slug(name: str) -> str:
    """`name` (a model name, `org/model:tag`) as a file name's part."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


@dataclass(frozen=True)
class Role:
    """One role's settings: its endpoint section, the sampling it sends, what names it in cache
    keys, and (a judge) its transport and parse retries."""

    name: str  # "model", "judge", or a jury member's model name
    endpoint: EndpointConfig
    temperature: float | None
    max_tokens: int | None
    identity: str  # its URL, or what serves it (the built-in or a served model's port changes)
    batch: bool = False  # its calls go through the Batch API (a judge's `batch: true`)
    batch_poll_s: float = 30.0
    max_parse_retries: int = 0

    @property
    def transport(self) -> str:
        """How its calls are sent: "batch", "responses" or "chat.completions" (the protocol's
        words)."""
        if self.batch:
            return "batch"
        return "responses" if self.endpoint.api is Api.responses else "chat.completions"

    @classmethod
    def of_judge(cls, name: str, judge: JudgeConfig, identity: str) -> Role:
        """A judge's role: its sampling, transport and parse retries are in its section."""
        return cls(
            name,
            judge,
            judge.temperature,
            judge.max_tokens,
            identity,
            batch=judge.batch,
            batch_poll_s=judge.batch_poll_s,
            max_parse_retries=judge.max_parse_retries,
        )


@dataclass(frozen=True)
class Roles:
    """Every role of a run: the model (kept when it samples nothing: a dry run prices the
    replies still unknown at its rates), the primary judge and the further judges."""

    model: Role
    judge: Role
    jury: tuple[Role, ...] = ()
    samples: bool = True  # the model is called (eval with completions=model)

    @classmethod
    def of(
        cls, config: Config, identity: Callable[[EndpointConfig], str] = lambda e: e.base_url or ""
    ) -> Roles:
        """The roles of `config`; `identity` names an endpoint in cache keys (the engine's, which
        starts the built-in and served endpoints; the start-up checks need none)."""
        model = Role(
            MODEL,
            config.model,
            config.sampling.temperature,
            config.sampling.max_tokens,
            identity(config.model),
        )
        judge = Role.of_judge(JUDGE, config.judge, identity(config.judge))
        jury = tuple(Role.of_judge(m.name, m, identity(m)) for m in config.jury_members)
        return cls(model, judge, jury, samples=MODEL in needed_roles(config))

    @property
    def judges(self) -> tuple[Role, ...]:
        """The judges, the primary one first."""
        return (self.judge, *self.jury)

    @property
    def needed(self) -> dict[str, Role]:
        """The roles the run talks to, by name: the model first when it samples, every judge."""
        return {role.name: role for role in ((self.model,) if self.samples else ()) + self.judges}

    @property
    def every(self) -> dict[str, Role]:
        """Every role, by name, the model's included."""
        return {role.name: role for role in (self.model, *self.judges)}

    def with_endpoints(self, endpoints: Mapping[str, EndpointConfig]) -> Roles:
        """These roles with the endpoint sections of `endpoints` (by role name) in place."""

        def swapped(role: Role) -> Role:
            return replace(role, endpoint=endpoints.get(role.name, role.endpoint))

        return replace(
            self,
            model=swapped(self.model),
            judge=swapped(self.judge),
            jury=tuple(swapped(role) for role in self.jury),
        )

    def usage(self, endpoint_stats: dict[str, object]) -> dict[str, object]:
        """The run's usage and cost per role (`model.costs.usage_summary`) from its counters:
        `model`, `judge`, and each jury member's under `jury` (by name), and the total."""
        usage = usage_summary(
            {name: role.endpoint for name, role in self.every.items()},
            tuple(self.needed),
            {name for name, role in self.every.items() if role.batch},
            endpoint_stats,
        )
        if self.jury:
            usage["jury"] = {role.name: usage.pop(role.name) for role in self.jury}
        return usage

    @property
    def batched(self) -> bool:
        """Whether a judge sends its calls in batches (every row must then reach its judge
        calls before a batch goes out, and no verdict is early enough to stop a run on)."""
        return any(role.batch for role in self.judges)


@dataclass
class Opened:
    """One open role: its settings, its endpoint (limit, pacing, counters) and the Completer
    the tasks call (the endpoint, or the transport in front of it)."""

    role: Role
    endpoint: ChatEndpoint
    completer: Completer

    @property
    def stats(self) -> EndpointStats:
        return self.endpoint.stats


@dataclass(frozen=True)
class Counters:
    """An evaluation's counters, as it left them (`OpenRoles.stats`): each role's
    (`roles`: `model.limits.EndpointStats` as plain data, by name, zeros for a role not
    called), the evaluation time (`evaluation_s`), the budget's state (`budget`:
    `model.costs.Budget.state`, None without one) and the id of the invocation's spend journal
    (`journal`, `model.spend_journal`)."""

    roles: dict[str, dict[str, object]]
    evaluation_s: float
    budget: dict[str, object] | None
    journal: str

    def as_dict(self) -> dict[str, object]:
        """As plain data, in one mapping: each role's counters by name, then `evaluation_s`,
        `budget` and `journal` (what `Roles.usage` and `tasks.base.Measured` read)."""
        plain: dict[str, object] = dict(self.roles)
        plain.update(evaluation_s=self.evaluation_s, budget=self.budget, journal=self.journal)
        return plain


class OpenRoles:
    """The open roles of a run, by name (see `open_roles`)."""

    def __init__(self, roles: Roles, opened: dict[str, Opened], journal: str) -> None:
        self.roles = roles
        self.opened = opened
        self.journal = journal  # the id of the run's spend journal (`model.spend_journal`)

    def completer(self, name: str) -> Completer | None:
        """The Completer of role `name` (None: the run does not talk to it)."""
        entry = self.opened.get(name)
        return None if entry is None else entry.completer

    @property
    def clock(self) -> Clock:
        """The run's one clock, shared by its endpoints (`model.endpoint.Shared`)."""
        return self.endpoints[0].clock

    @property
    def endpoints(self) -> list[ChatEndpoint]:
        """Every open endpoint (the progress line and the stall watch show them)."""
        return [entry.endpoint for entry in self.opened.values()]

    def stats(self, started: float) -> Counters:
        """Each role's counters (zeros for the model when it was not called), the evaluation
        time since `started`, the budget's state (None without one) and the id of the spend
        journal (`journal`: the invocation records it with its usage)."""
        budget = next((e.budget for e in self.endpoints if e.budget is not None), None)
        return Counters(
            roles={
                name: asdict(self.opened[name].stats if name in self.opened else EndpointStats())
                for name in self.roles.every
            },
            evaluation_s=time.monotonic() - started,
            budget=None if budget is None else budget.state(),
            journal=self.journal,
        )


@contextlib.asynccontextmanager
async def open_roles(
    roles: Roles,
    urls: dict[str, str | None],
    keys: dict[str, str],
    runner: RunnerConfig,
    cache_config: CacheConfig,
    budget_config: BudgetConfig,
    files: RunFiles,
    halt: Halt,
    healths: Mapping[str, EndpointHealth],
    clock: Clock,
) -> AsyncIterator[OpenRoles]:
    """Open every needed role (its URL in `urls`, its key in `keys`), sharing the response cache,
    the in-flight cap, the budget, the run's stop (`halt`) and its one `clock`; each endpoint
    with a health in `healths` (by role) reports every failed attempt to it. A batched judge's
    batches are recorded in the run's directory, through `files`.
    Closed on exit.

    With `cache.enabled=false` the roles share the run's own call journal instead
    (`<run dir>/.calls`, a response cache no other run reads): a resume after a kill then
    pays again only the calls in flight at the kill, not those finished inside rows the kill
    cut short, which the run's records lack. A completed run removes it (`discard_call_journal`).

    Call inside the running event loop: clients made outside it break the second job of a
    multirun ("Event loop is closed").
    """
    cache = (
        ResponseCache(cache_dir(cache_config.dir))
        if cache_config.enabled
        else ResponseCache(files.directory / CALL_JOURNAL, record_run=False, shared=False)
    )
    journal = SpendJournal(files)  # what this invocation pays, kept if it is killed
    shared = Shared(
        halt=halt,
        clock=clock,  # the run's one clock, through the whole request path
        cache=cache,
        limit=asyncio.Semaphore(runner.max_in_flight) if runner.max_in_flight else None,
        budget=budget_of(budget_config, files.directory),
        journal=journal,
    )
    endpoints = {
        name: ChatEndpoint(
            name,
            role.endpoint,
            base_url=urls[name],
            api_key=keys[name],
            temperature=role.temperature,
            max_tokens=role.max_tokens,
            transport=Transport.of(runner, role.endpoint),
            shared=shared,
            identity=role.identity,
            on_attempt_failed=healths[name].attempt_failed if name in healths else None,
        )
        for name, role in roles.needed.items()
    }
    # one model on one account: one rate limit, one copy of it (see share_buckets)
    accounts = {
        name: (urls[name], keys[name], role.endpoint.name) for name, role in roles.needed.items()
    }
    share_buckets((accounts[name], endpoint.pacer) for name, endpoint in endpoints.items())
    model = endpoints.get(MODEL)

    def sampling() -> bool:  # replies that will need grading are still being sampled
        return model is not None and (model.stats.in_flight > 0 or bool(model.limit.waiters))

    try:
        async with contextlib.AsyncExitStack() as stack:
            opened = {
                name: Opened(
                    role,
                    endpoints[name],
                    await stack.enter_async_context(
                        _transport(role, endpoints[name], files, sampling)
                    ),
                )
                for name, role in roles.needed.items()
            }
            yield OpenRoles(roles, opened, journal.id)
    finally:
        for endpoint in endpoints.values():
            await endpoint.close()
        cache.close()
        journal.close()
        if shared.budget is not None:
            shared.budget.close()  # a sweep's ledger: this job's exact spend


@contextlib.asynccontextmanager
async def _transport(
    role: Role, endpoint: ChatEndpoint, files: RunFiles, busy: Callable[[], bool]
) -> AsyncIterator[Completer]:
    """How a role's calls are sent: its endpoint itself, or (`batch`) a BatchJudge in front."""
    if not role.batch:
        yield endpoint
        return
    # each batched judge records its own batches (a resume harvests them with its own client)
    record = BATCHES_FILE if role.name == JUDGE else f"batches-{slug(role.name)}.json"
    batch = BatchJudge(endpoint, files, role.batch_poll_s, busy=busy, record=record)
    await batch.start()
    try:
        yield batch
    finally:
        await batch.close()
