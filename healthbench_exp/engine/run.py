"""The engine's entry: `run(task, settings, sinks)` runs any task and returns its summary;
`estimate(task, settings)` is the dry run. The only engine functions that see the whole config:
they hand each part the section it reads.

One run: read the API keys; start the built-in endpoint if a role uses it, and the model server
of each served role (`engine.serve`: they get ready while the task loads its rows); check every
endpoint is reachable; `start` the sinks; run the rows in the async loop (`loop.evaluate`,
under the run's one `control.RunControl`: its stop, grace, endpoint health, failure-fraction
stop and counters), each result to every sink and to the task's summarizer as it finishes (no
list of every result is kept); summarize; record
this invocation's usage in `invocations.jsonl`; then the sinks `finish` in the order given (the
CLI puts the local files first and W&B last). Anything raised on the way `fail`s the sinks that
had not finished and propagates: ConfigError / DataError / FatalEndpointError before or instead
of a partial result, RunInterrupted on a signal (the first one's grace over, the usage is
recorded and the partial summary given to the sinks first, `end_interrupted`).

The engine and the layers below it write no file of the run directory themselves: the sinks do,
and `RunSettings.files` (the CLI's `output.run_dir.RunDirectory`) writes the invocations, the
batch records and the served models' logs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from healthbench_exp.config.measured import measured_fingerprint
from healthbench_exp.config.schema import Config, ConfigError
from healthbench_exp.core.errors import OutputWriteError
from healthbench_exp.core.outcome import Tally, run_outcome
from healthbench_exp.core.run_end import Status
from healthbench_exp.core.run_files import INVOCATIONS_FILE, RunFiles
from healthbench_exp.core.sink import Sink
from healthbench_exp.core.summary import RunSummary, Usage
from healthbench_exp.engine.builtin import builtin_server
from healthbench_exp.engine.control import RunControl
from healthbench_exp.engine.endpoints import (
    endpoint_identity,
    reachable_endpoints,
    reachable_urls,
    resolve_keys,
)
from healthbench_exp.engine.estimate import estimate_run
from healthbench_exp.engine.late_signals import DeferredSignals
from healthbench_exp.engine.loop import LoopSettings, Reached, evaluate, run_async
from healthbench_exp.engine.pilot import FirstRows, pilot_record
from healthbench_exp.engine.serve import served_models
from healthbench_exp.engine.stops import RunInterrupted, StoppedEarly, leaving, signals_held
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.costs import sum_costs
from healthbench_exp.model.invocations import cumulative_usage, record_invocation, record_killed
from healthbench_exp.model.probe import with_probed_limits
from healthbench_exp.model.roles import Counters, Roles
from healthbench_exp.published.run_side import with_published
from healthbench_exp.tasks.base import Measured, Summarizer, Task

log = logging.getLogger(__name__)

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class RunSettings:
    """How to run a task: the whole config (read here only) and the run directory, whose files
    the engine and the layers below it write through `files` (`core.run_files`)."""

    config: Config
    files: RunFiles
    # the resolved config as plain data, as the task's summary records it: the fingerprint of
    # what an invocation cut short measured (None: the dataclasses' own fields, enums as text)
    config_dict: Mapping[str, object] | None = None

    @property
    def output_dir(self) -> Path:
        return self.files.directory


def roles_of(config: Config) -> Roles:
    """The run's roles (`model.roles.Roles`), each endpoint named in cache keys as the engine
    starts it (`endpoints.endpoint_identity`)."""
    return Roles.of(config, lambda endpoint: endpoint_identity(endpoint, config.offline_server))


def run(task: Task[Item, Result], settings: RunSettings, sinks: Sequence[Sink]) -> RunSummary:
    """Run `task`, feeding `sinks`; return the summary (see the module docstring)."""
    config, output_dir = settings.config, settings.output_dir
    started = time.monotonic()
    began = datetime.now(UTC)
    roles = roles_of(config)
    needed = roles.needed
    keys = resolve_keys(needed)
    output_dir.mkdir(parents=True, exist_ok=True)
    if killed := record_killed_invocations(settings, roles):  # before this one sends a request
        log.warning(killed)
    loop = LoopSettings(
        config.runner,
        config.judge.early_stop_unparseable,
        config.cache,
        config.budget,
        settings.files,
    )
    demo = any(role.endpoint.builtin for role in needed.values())
    finished = 0
    control: RunControl | None = None  # made once the endpoints are reachable
    accounted = False  # this invocation's usage is in invocations.jsonl
    finishing = DeferredSignals()  # once the work is done, a signal lets the outputs finish
    summarizer: Summarizer[Result] | None = None  # made once the rows are loaded
    try:
        with (  # the servers get ready while the data loads; stopped however the run ends
            builtin_server(demo, config.offline_server) as server,
            served_models({n: r.endpoint for n, r in needed.items()}, settings.files) as served,
        ):
            items = task.items()  # emptied as the rows start (`loop.evaluate`)
            summarizer = task.summarizer(len(items))
            task.continue_from(output_dir)  # before the sinks rewrite the run's records
            urls = reachable_urls(needed, server, config.runner.connect_timeout_s, served)
            for sink in sinks:
                sink.start()

            def on_result(position: int, result: Result) -> None:
                for sink in sinks:
                    sink.on_result(result, position)
                summarizer.add(position, result)

            control = RunControl(
                config.runner, roles, urls, task.criteria(items), task.kind, SYSTEM_CLOCK
            )
            reached = Reached(roles, urls, keys)
            evaluation = run_async(
                evaluate(task, items, reached, loop, on_result, control), control.grace
            )
            grace = control.grace
            finishing.begin(grace.signum if grace.answered_all() else None)
        stats = evaluation.counters.as_dict()
        usage = roles.usage(stats)
        measured = Measured(stats, usage, time.monotonic() - started)
        summary = with_published(summarizer.summary(measured))  # beside the published numbers
        with signals_held():  # recorded once, whole, before a signal ends the invocation
            summary = account_invocation(
                summary,
                measured,
                demo,
                settings.files,
                began,
                config.runner.max_failure_fraction,
            )
            accounted = True
        for sink in sinks:
            summary = replace(summary, **sink.describe())
        for sink in sinks:  # in order: local outputs complete before W&B finishes
            sink.finish(summary)
            finished += 1
        finishing.end(complete=True)
        # what finished is written: now say why it ended
        try:
            control.raise_if_stopped(output_dir, summary)
        except StoppedEarly as early:  # the CLI prints the partial table before its line
            early.summary = summary
            raise
    except BaseException as exc:
        finishing.end(complete=False)
        if control is not None and control.counters is not None and not accounted:  # paid still
            wall_time_s = time.monotonic() - started
            if isinstance(exc, RunInterrupted) and summarizer is not None and not leaving():
                finished = end_interrupted(
                    exc,
                    sinks,
                    Interrupted(summarizer, control.counters, wall_time_s, demo),
                    settings,
                    roles,
                    began,
                )
            else:
                cut = record_cut_short(settings, roles, control.counters, began, wall_time_s)
                if isinstance(exc, RunInterrupted) and (note := abandoned_text(cut)):
                    exc.add(note)
        for sink in sinks[finished:]:
            sink.fail(exc)
        raise
    return summary


@dataclass(frozen=True)
class Interrupted:
    """What a run a stopping signal ended holds: its summarizer (the rows that finished), its
    roles' counters (`RunControl.counters`), its wall time and whether it was a demo."""

    summarizer: Summarizer[Any]
    counters: Counters
    wall_time_s: float
    demo: bool


def end_interrupted(
    exc: RunInterrupted,
    sinks: Sequence[Sink],
    run: Interrupted,
    settings: RunSettings,
    roles: Roles,
    began: datetime,
) -> int:
    """End a run the first stopping signal ended, its grace over: record the invocation's usage
    (`account_invocation`, whole, its abandoned requests apart; its line says what was
    abandoned in flight), then give the summary of what finished, marked `partial`, to each
    sink in order (`Sink.interrupted`: summary.json and report.html; W&B fails its run as
    before); `exc.summary` is that summary. A second signal (or anything raised: an output
    that cannot be written) stops the writing, `exc.summary` None (the usage is recorded all
    the same: the run ends interrupted whatever happens here).
    Return how many sinks had it."""
    plain = run.counters.as_dict()
    measured = Measured(plain, roles.usage(plain), run.wall_time_s)
    accounted, done = False, 0
    try:
        summary = with_published(run.summarizer.summary(measured))
        with signals_held():  # recorded once, whole, as a completed invocation's
            summary = account_invocation(summary, measured, run.demo, settings.files, began)
            accounted = True
        summary = replace(summary, partial=True)
        for sink in sinks:
            summary = replace(summary, **sink.describe())
        for sink in sinks:  # in order: local outputs complete before W&B fails its run
            sink.interrupted(summary, exc)
            done += 1
        if sinks:  # (a pilot's has none: nothing of it is shown)
            exc.summary = summary
    except (RunInterrupted, KeyboardInterrupt):  # a second signal: leave at once
        log.warning("leaving now: the partial summary.json or report.html may be missing")
    except Exception as error:  # a full disk, or a bug: the run still ends interrupted
        log.warning("the partial summary.json and report.html were not written: %r", error)
    if not accounted:
        record_cut_short(settings, roles, run.counters, began, run.wall_time_s)
    if note := abandoned_text(Usage.from_dict(measured.usage)):
        exc.add(note)
    return done


def account_invocation(
    summary: RunSummary,
    measured: Measured,
    demo: bool,
    files: RunFiles,
    began: datetime,
    max_failure_fraction: float = 1.0,
) -> RunSummary:
    """Record this invocation's usage (`measured`) in the run's `invocations.jsonl`; return
    `summary` with the run's whole usage (every invocation, with the breakdown), and what kind
    of result it is: `partial` (rows not run: the budget or a dead endpoint stopped it; or
    failed rows or ungraded criteria beyond `runner.max_failure_fraction`: its scores cover
    only part of the run, `core.outcome.run_outcome`) and `demo` (the built-in endpoint
    answered: the scores mean nothing)."""
    budget = measured.budget
    invocations = record_invocation(
        files,
        measured.usage,
        None if budget is None else budget.to_dict(),
        began,
        measured_fingerprint(summary.config),
        wall_time_s=measured.wall_time_s,
        journal=journal_of(measured),
    )
    rows_not_run = summary.counts.rows_not_run if summary.counts is not None else 0
    short = (
        summary.counts is not None
        and run_outcome(Tally.of(summary), max_failure_fraction, files.directory).status
        != Status.COMPLETED
    )
    return replace(
        summary,
        usage=Usage.from_dict(cumulative_usage(invocations)),
        partial=bool(rows_not_run) or bool(budget and budget.stopped) or short,
        demo=demo,
    )


def record_cut_short(
    settings: RunSettings,
    roles: Roles,
    counters: Counters,
    began: datetime,
    wall_time_s: float,
) -> Usage:
    """Record the usage of an invocation a signal or an error cut short (its requests were
    paid: a resume's summary sums every invocation's; those abandoned in flight counted apart,
    their cost estimated) in `invocations.jsonl`, whole even if a second signal comes; an
    output that cannot be written loses this line only, not the error that ended the run.
    Return that usage."""
    plain = counters.as_dict()
    measured = Measured(plain, roles.usage(plain), wall_time_s)
    budget = measured.budget
    with signals_held(), contextlib.suppress(OutputWriteError, OSError):
        record_invocation(
            settings.files,
            measured.usage,
            None if budget is None else budget.to_dict(),
            began,
            settings_fingerprint(settings),
            wall_time_s=wall_time_s,
            journal=journal_of(measured),
        )
    return Usage.from_dict(measured.usage)


def settings_fingerprint(settings: RunSettings) -> str:
    """The fingerprint of what the run measures (`config.measured`), from its config."""
    plain = settings.config_dict
    if plain is None:
        plain = json.loads(json.dumps(asdict(settings.config), default=str))
    return measured_fingerprint(plain)


def journal_of(measured: Measured) -> str | None:
    """The id of the invocation's spend journal (`model.spend_journal`; None: it opened none)."""
    journal = measured.endpoints.get("journal")
    return journal if isinstance(journal, str) else None


def record_killed_invocations(settings: RunSettings, roles: Roles) -> str:
    """Record each earlier invocation of the run that was killed before it recorded its usage
    (`model.invocations.record_killed`); return a line that says so ('' when none was)."""
    killed = record_killed(
        settings.files, roles.usage, list(roles.every), settings_fingerprint(settings)
    )
    if not killed:
        return ""
    usage = [Usage.from_dict(recorded) for recorded in killed]
    paid = sum(r.requests for u in usage for r in (u.model, u.judge, *(u.jury or {}).values()))
    cost = sum_costs(u.total_cost_usd for u in usage)
    dollars = "an unknown cost (no price)" if cost is None else f"${cost:.4f}"
    in_flight = sum(u.abandoned() for u in usage)
    estimate = sum_costs(u.abandoned_cost_usd or 0.0 for u in usage)
    guess = "unknown (no price)" if estimate is None else f"about ${estimate:.4f}, estimated"
    return (
        f"a killed invocation's spend is counted from its journal: {paid} paid requests, "
        f"{dollars}; {in_flight} in flight at the kill, maybe billed ({guess})"
    )


def abandoned_text(usage: Usage) -> str:
    """`2 requests abandoned in flight (model 1, judge 1), about $0.0040 (estimated), counted
    in invocations.jsonl` ('' when none was)."""
    count = usage.abandoned()
    if not count:
        return ""
    roles = {"model": usage.model, "judge": usage.judge, **(usage.jury or {})}
    by_role = ", ".join(
        f"{name} {role.abandoned_in_flight}"
        for name, role in roles.items()
        if role.abandoned_in_flight
    )
    cost = usage.abandoned_cost_usd
    dollars = "an unknown cost (no price)" if cost is None else f"about ${cost:.4f} (estimated)"
    return (
        f"{count} request{'' if count == 1 else 's'} abandoned in flight ({by_role}), "
        f"{dollars}, counted in {INVOCATIONS_FILE}"
    )


def estimate(task: Task[Item, Result], settings: RunSettings) -> dict[str, object]:
    """The dry run: the run's calls, tokens and cost, estimated; nothing is sent.

    No API key is needed and no endpoint is contacted (not even the built-in server), unless a
    role's `rate_limit.probe` asks to read its limits from one request (see `model.probe`), or
    `dry_run.pilot=N` asks to run the first N rows first (see `engine.pilot`): then the keys are
    needed, and the estimate measures those rows.
    """
    config = settings.config
    pilot = None
    if config.dry_run.pilot:
        if not config.cache.enabled:
            raise ConfigError(
                "dry_run.pilot needs the response cache (the run reuses the pilot's calls "
                "from it): drop cache.enabled=false"
            )
        first = FirstRows(task, config.dry_run.pilot)
        summary = run(first, replace(settings, files=settings.files.within("pilot")), [])
        pilot = pilot_record(summary, first.sent)
    roles = roles_of(config)
    probed = [name for name, role in roles.needed.items() if role.endpoint.rate_limit.probe]
    if probed:
        with reachable_endpoints(
            roles.needed, config.offline_server, config.runner.connect_timeout_s
        ) as urls:
            endpoints = {name: role.endpoint for name, role in roles.needed.items()}
            probed_limits = with_probed_limits(endpoints, urls, config.runner.request_timeout_s)
            roles = roles.with_endpoints(probed_limits)
    return {
        **estimate_run(task, roles, config.judge, config.cache, pilot),
        "rate_limits_probed": probed,
    }
