"""Running an evaluation: sample replies, grade every criterion, score, write, track.

`evaluate` is the async core. Up to `runner.max_concurrent` examples are in flight; each asks the
model once per rollout, then sends all its judge calls together (at most
`runner.max_parallel_judges` at once), bounded again per endpoint by `max_concurrency`. Each
finished example is written to disk at once, so a crash keeps everything finished before it.
`run_eval` is the synchronous whole: config in, files and summary out.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from healthbench_exp.cli import startup
from healthbench_exp.config.measured import measured_fingerprint
from healthbench_exp.config.schema import (
    CompletionSource,
    Config,
    PromptOrder,
    TaskKind,
    needed_roles,
)
from healthbench_exp.core.completer import Completer
from healthbench_exp.core.counts import RunCounts
from healthbench_exp.core.endpoint_errors import FatalEndpointError, RequestFailed
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.core.types import CriterionGrade, ExampleResult, WorkItem
from healthbench_exp.core.version import __version__
from healthbench_exp.data.completions import work_items
from healthbench_exp.data.healthbench import load_examples
from healthbench_exp.engine.stops import interruptible, signal_handlers_kept
from healthbench_exp.grading.comparison import length_adjusted, run_to_run_std, worst_at_k
from healthbench_exp.grading.grader import (
    grade_criterion,
    render_conversation,
    rubric_item_text,
    template_sha256,
)
from healthbench_exp.grading.scoring import (
    aggregate_metrics,
    bootstrap_std,
    clipped_mean,
    consensus_breakdown,
    example_metrics,
)
from healthbench_exp.grading.verdict_watch import UnparseableWatch
from healthbench_exp.model.access import (
    OPENAI_DEFAULT_URL,
    check_reachable,
    endpoint_url,
    resolve_api_key,
)
from healthbench_exp.model.cache import ResponseCache, cache_dir
from healthbench_exp.model.costs import (
    Budget,
    BudgetExhausted,
    cumulative_usage,
    record_invocation,
    usage_summary,
)
from healthbench_exp.model.endpoint import ChatEndpoint
from healthbench_exp.model.limits import EndpointStats
from healthbench_exp.model.stall import watch_endpoints
from healthbench_exp.output.wandb.tracker import JobContext

if TYPE_CHECKING:
    from healthbench_exp.testing.server import ServerProcess

log = logging.getLogger(__name__)
T = TypeVar("T")


class Progress:
    """A tqdm bar over (example, rollout) rows with the run's `RunCounts` as live counters
    (the same counts the end-of-run table and summary.json report); silent when disabled."""

    def __init__(
        self, total: int, enabled: bool, endpoints: list[ChatEndpoint], unit: str = "ex"
    ) -> None:
        self.endpoints = endpoints
        self.counts = RunCounts(rows=total)
        self.bar = None
        self.interactive = False
        if enabled:
            import sys

            from tqdm import tqdm

            self.interactive = sys.stderr.isatty()
            self.bar = tqdm(
                total=total,
                unit=unit,
                desc="examples" if unit == "ex" else "rows",
                dynamic_ncols=True,
                mininterval=0.5 if self.interactive else 10.0,
            )

    def update(self, result: ExampleResult) -> None:
        self.counts.add(result)
        self._show()

    def update_grade(self, grade: CriterionGrade) -> None:
        """Count a finished meta-eval row (one grade, no ExampleResult)."""
        self.counts.add_grade(grade)
        self._show()

    def _show(self) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(self.postfix(), refresh=False)
            self.bar.update(1)

    def postfix(self) -> str:
        """Counters, and each rate-limited endpoint's wait and pace."""
        in_flight = sum(e.stats.in_flight for e in self.endpoints)
        counters = {**self.counts.progress_fields(), "in_flight": in_flight}
        parts = [
            ", ".join(f"{name}={value}" for name, value in counters.items()),
            *filter(None, (e.pacer.describe() for e in self.endpoints)),
        ]
        return ", ".join(parts)

    def refresh(self) -> None:
        """Show the current postfix though no example finished (a rate-limit wait, a stall);
        redrawn at once on a terminal only (a log file gets it with the next update)."""
        if self.bar is not None:
            self.bar.set_postfix_str(self.postfix(), refresh=self.interactive)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


async def run_example(
    item: WorkItem,
    model: ChatEndpoint | None,
    judge: Completer,
    max_parallel_judges: int,
    max_parse_retries: int,
    watch: UnparseableWatch | None = None,
    prompt_order: str = "reference",
) -> ExampleResult:
    """Get the reply (sampled, or given by the item) and grade every criterion concurrently."""
    example, rollout = item.example, item.rollout
    given = item.completion is not None or item.error is not None
    if item.error is not None:
        return ExampleResult(
            example, rollout, list(example.prompt), None, [], error=item.error, sampled=False
        )
    if item.completion is not None:  # physician or file completions: nothing is sampled
        sent = list(item.messages or example.prompt)
        text = item.completion
    else:
        assert model is not None
        prompt = list(example.prompt)
        sent = model.messages_for(prompt)
        try:
            text = (await model.complete(prompt, tag=f"rollout={rollout}")).text
        except RequestFailed as exc:
            return ExampleResult(example, rollout, sent, None, [], error=f"model: {exc}")
        except BudgetExhausted as exc:
            return ExampleResult(
                example, rollout, sent, None, [], error=f"not run: {exc}", not_run=True
            )
    conversation = render_conversation([*sent, {"role": "assistant", "content": text}])
    slots = asyncio.Semaphore(max_parallel_judges)

    async def grade(criterion: Any) -> CriterionGrade:
        async with slots:
            return await grade_criterion(
                judge,
                conversation,
                rubric_item_text(criterion),
                max_parse_retries,
                rollout,
                prefix_key=f"{example.prompt_id}:{rollout}",  # the criteria share the conversation
                watch=watch,
                order=prompt_order,
            )

    grades = list(await asyncio.gather(*(grade(c) for c in example.rubrics)))
    stopped = next((g for g in grades if g.not_run), None)
    if stopped is not None:  # scored on some criteria only it would be wrong: leave it for resume
        return ExampleResult(
            example,
            rollout,
            sent,
            text,
            grades,
            error=stopped.error,
            not_run=True,
            sampled=not given,
        )
    metrics = example_metrics(
        example.example_tags, example.rubrics, [g.criteria_met for g in grades]
    )
    return ExampleResult(example, rollout, sent, text, grades, metrics=metrics, sampled=not given)


async def evaluate(
    work: list[WorkItem],
    model: ChatEndpoint | None,
    judge: Completer,
    config: Config,
    on_result: Callable[[ExampleResult], None],
) -> list[ExampleResult]:
    """Grade every item; call `on_result` as each finishes; return them in order.

    A FatalEndpointError in any example cancels the rest and propagates.
    """
    # with batched judge calls every example must reach its judge calls before a batch goes out
    slots = asyncio.Semaphore(
        max(1, len(work)) if config.judge.batch else config.runner.max_concurrent
    )
    progress = Progress(
        len(work),
        config.runner.progress,
        [e for e in (model, getattr(judge, "endpoint", judge)) if e],
    )

    watch = UnparseableWatch(config.judge.early_stop_unparseable, gate=not config.judge.batch)

    async def one(item: WorkItem) -> ExampleResult:
        async with slots:
            result = await run_example(
                item,
                model,
                judge,
                config.runner.max_parallel_judges,
                config.judge.max_parse_retries,
                watch,
                config.judge.prompt_order.value,
            )
        on_result(result)
        progress.update(result)
        return result

    try:
        async with (
            watch_endpoints(progress.endpoints, config.runner.stall_notice_s, progress.refresh),
            asyncio.TaskGroup() as group,
        ):
            tasks = [group.create_task(one(item)) for item in work]
    except* FatalEndpointError as errors:
        raise errors.exceptions[0] from None
    finally:
        progress.close()
    return [task.result() for task in tasks]


@contextlib.contextmanager
def steady_collector(young_threshold: int = 20_000) -> Iterator[None]:
    """Keep Python's cyclic garbage collector from stalling the event loop while requests fly.

    With the defaults, a request's short-lived objects outlive several young collections (one
    every 700 allocations) with hundreds of requests in flight, get promoted, and trigger full
    collections that scan everything start-up made (imports, config, rows); each stalls every
    reply waiting on the loop. Here start-up's objects are frozen out of the scans and young
    collections come every `young_threshold` allocations, so most request objects die by
    reference counting first. Cyclic garbage is still collected. Restored on exit (a multirun
    runs several jobs in one process), unless the caller had frozen objects itself.

    Measured with 2,000 examples at 256 in flight: collections took 4.6 s of a 53 s evaluation
    before (full ones up to 0.3 s), 0.7 s after; CPU per request fell by about a seventh.
    """
    thresholds = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    gc.collect()
    gc.freeze()
    gc.set_threshold(young_threshold, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if not frozen_before:
            gc.unfreeze()


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run on uvloop where it is installed (Linux, macOS), with a `steady_collector`: the event
    loop's own CPU per request roughly halves, which is what keeps hundreds of requests in
    flight on one core."""
    from healthbench_exp.model.event_loop import event_loop_factory

    with (
        steady_collector(),
        signal_handlers_kept(),
        asyncio.Runner(loop_factory=event_loop_factory()) as runner,
    ):
        return runner.run(interruptible(coroutine))  # SIGINT/SIGTERM: RunInterrupted


def builtin_identity(config: Config) -> str:
    """The built-in server in cache keys: its settings, since injected faults (malformed
    verdicts) change its replies and must not be replayed to a run without them."""
    from healthbench_exp.testing.server import server_args

    # what changes no reply: the batch delay and the account faults (rate limits, quota, silence)
    settings = {
        **asdict(config.offline_server),
        "batch_delay_s": 0.0,
        "rate_limit_requests": 0,
        "rate_limit_tokens": 0,
        "quota_exhausted": False,
        "silent": False,
    }
    return "builtin " + " ".join(server_args(**settings))


def endpoint_identity(config: Config, role: str) -> str:
    """What names `role`'s endpoint in cache keys: its URL, or the built-in server's settings
    (its port changes every run)."""
    endpoint = getattr(config, role)
    if endpoint.builtin:
        return builtin_identity(config)
    return endpoint.base_url or OPENAI_DEFAULT_URL


@contextlib.contextmanager
def builtin_server(config: Config) -> Iterator[ServerProcess | None]:
    """The built-in server if a needed endpoint uses it, else None; stopped on exit.

    It is started, not waited for: it gets ready while the caller loads the data.
    """
    if not any(getattr(config, role).builtin for role in needed_roles(config)):
        yield None
        return
    from healthbench_exp.testing.server import ServerProcess, server_args

    process = ServerProcess(server_args(**asdict(config.offline_server))).start()
    try:
        yield process
    finally:
        process.stop()


def reachable_urls(config: Config, server: ServerProcess | None) -> dict[str, str | None]:
    """Each needed role's base URL (None = OpenAI's), each checked reachable so that an
    unreachable one fails fast; waits for the built-in `server` to listen, if there is one."""
    server_url = None
    if server is not None:
        server_url = server.wait_ready()
        log.info("built-in offline endpoint at %s (its scores are meaningless)", server_url)
    urls = {role: endpoint_url(getattr(config, role), server_url) for role in needed_roles(config)}
    for role, url in urls.items():
        check_reachable(role, url or OPENAI_DEFAULT_URL, config.runner.connect_timeout_s)
    return urls


@contextlib.contextmanager
def reachable_endpoints(config: Config) -> Iterator[dict[str, str | None]]:
    """Start the built-in server if needed; yield `reachable_urls`; stop the server on exit."""
    with builtin_server(config) as server:
        yield reachable_urls(config, server)


@contextlib.asynccontextmanager
async def open_endpoints(
    config: Config, urls: dict[str, str | None], keys: dict[str, str]
) -> AsyncIterator[dict[str, ChatEndpoint]]:
    """One ChatEndpoint per role in `urls`, sharing the response cache; closed on exit.

    Call inside the running event loop: clients made outside it break the second job of a
    multirun ("Event loop is closed").
    """
    runner = config.runner
    cache = ResponseCache(cache_dir(config.cache.dir)) if config.cache.enabled else None
    shared = asyncio.Semaphore(runner.max_in_flight) if runner.max_in_flight else None
    budget = Budget(config.budget.max_usd) if config.budget.max_usd is not None else None
    sampling = {
        "model": (config.sampling.temperature, config.sampling.max_tokens),
        "judge": (config.judge.temperature, config.judge.max_tokens),
    }
    endpoints = {
        role: ChatEndpoint(
            role,
            getattr(config, role),
            base_url=url,
            api_key=keys[role],
            temperature=sampling[role][0],
            max_tokens=sampling[role][1],
            max_retries=runner.max_retries,
            timeout_s=runner.reasoning_request_timeout_s
            if getattr(config, role).reasoning
            else runner.request_timeout_s,
            connect_timeout_s=runner.connect_timeout_s,
            cache=cache,
            shared_limit=shared,
            identity=endpoint_identity(config, role),
            budget=budget,
            http_client=runner.http_client,
        )
        for role, url in urls.items()
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


async def _evaluate_with_clients(
    work: list[WorkItem],
    output_dir: Path,
    config: Config,
    urls: dict[str, str | None],
    keys: dict[str, str],
    on_result: Callable[[ExampleResult], None],
) -> tuple[list[ExampleResult], dict[str, Any]]:
    """Create the clients inside the running loop, evaluate, close them; return results, stats."""
    async with open_endpoints(config, urls, keys) as endpoints:
        started = time.monotonic()
        model = endpoints.get("model")
        async with judge_transport(config, endpoints["judge"], output_dir, model) as judge:
            results = await evaluate(work, model, judge, config, on_result)
        return results, endpoint_stats(endpoints, started)


@contextlib.asynccontextmanager
async def judge_transport(
    config: Config, judge: ChatEndpoint, output_dir: Path, model: ChatEndpoint | None = None
) -> AsyncIterator[Completer]:
    """The judge endpoint itself, or (judge.batch=true) a BatchJudge in front of it."""
    if not config.judge.batch:
        yield judge
        return
    from healthbench_exp.model.batch import BatchJudge

    def sampling() -> bool:
        return model is not None and (model.stats.in_flight > 0 or bool(model.limit.waiters))

    batch = BatchJudge(judge, output_dir, config.judge.batch_poll_s, busy=sampling)
    await batch.start()
    try:
        yield batch
    finally:
        await batch.close()


def dry_run(config: Config, output_dir: Path, config_dict: dict[str, Any]) -> dict[str, Any]:
    """Estimate the run's calls, tokens and cost into `estimate.json`; send nothing.

    No API key is needed and no endpoint is contacted (not even the built-in server), unless a
    role's `rate_limit.probe` asks to read its limits from one request (see `probe`).
    """
    from healthbench_exp.engine.estimate import estimate_run
    from healthbench_exp.output.files import write_json

    startup.check(config, dry_run=True)
    probed = [role for role in needed_roles(config) if getattr(config, role).rate_limit.probe]
    if probed:
        from healthbench_exp.model.probe import with_probed_limits

        with reachable_endpoints(config) as urls:
            endpoints = {role: getattr(config, role) for role in needed_roles(config)}
            timeout_s = config.runner.request_timeout_s
            config = replace(config, **with_probed_limits(endpoints, urls, timeout_s))
    estimate = {**estimate_run(config), "rate_limits_probed": probed}
    output_dir.mkdir(parents=True, exist_ok=True)
    write_json(output_dir / "estimate.json", {**estimate, "config": config_dict})
    return estimate


def resolve_keys(config: Config) -> dict[str, str]:
    """API keys of the endpoints the run needs, read before any request (missing: ConfigError)."""
    return {role: resolve_api_key(role, getattr(config, role)) for role in needed_roles(config)}


def run_eval(
    config: Config,
    output_dir: Path,
    config_dict: dict[str, Any],
    job: JobContext | None = None,
) -> dict[str, Any]:
    """Run the configured task, write every output into `output_dir`, return the summary.

    `config_dict` is the resolved config as plain data (it holds env var names, never keys);
    `job` carries what Hydra knows (overrides, sweep directory) for tracking.
    Raises ConfigError / DataError / FatalEndpointError before or instead of a partial result.
    """
    from healthbench_exp.output import files as reporting
    from healthbench_exp.output.dataset import write_results_dataset
    from healthbench_exp.output.html import pages as html_report
    from healthbench_exp.output.wandb import tracker as tracking

    if config.task.kind is TaskKind.meta_eval:
        from healthbench_exp.tasks.meta_eval import run_meta_eval

        return run_meta_eval(config, output_dir, config_dict, job)
    started = time.monotonic()
    began = datetime.now(UTC)
    readiness = startup.check(config)  # every problem found without a network, at once
    keys = resolve_keys(config)
    output_dir.mkdir(parents=True, exist_ok=True)
    # W&B opens in its own process once the first result arrives (see tracking.Tracker)
    tracker = tracking.start(
        config, config_dict, output_dir, job or tracking.JobContext(), readiness
    )
    try:
        with builtin_server(config) as server:  # it gets ready while the data loads
            work, completions_info = work_items(
                load_examples(config.dataset),
                config.completions,
                config.sampling,
                system_message=config.model.system_message,
            )
            sampled = config.completions.source is CompletionSource.model
            log.info(
                "%d examples x %d rollouts (%s replies): %d model calls, %d criteria to grade",
                len({item.example.prompt_id for item in work}),
                config.sampling.rollouts_per_example,
                config.completions.source.value,
                len(work) if sampled else 0,
                sum(len(item.example.rubrics) for item in work),
            )
            urls = reachable_urls(config, server)
            with reporting.ResultWriter(output_dir) as writer:

                def on_result(result: ExampleResult) -> None:
                    writer.write(result)
                    tracker.on_result(result)

                results, stats = run_async(
                    _evaluate_with_clients(work, output_dir, config, urls, keys, on_result)
                )
        summary = build_summary(results, config, config_dict, stats, time.monotonic() - started)
        summary["completions"] = completions_info
        account_invocation(summary, config, output_dir, began)
        summary["wandb"] = tracker.describe()
        record = RunSummary.from_dict(summary)
        reporting.write_summary(output_dir, record)
        write_results_dataset(output_dir / "results", results)
        html_report.write_run_report(output_dir)
    except BaseException as exc:
        tracker.fail(exc)
        raise
    tracker.finish(record, output_dir)  # local outputs are complete; W&B failures only warn
    return summary


def account_invocation(
    summary: dict[str, Any], config: Config, output_dir: Path, began: datetime
) -> None:
    """Record this invocation's usage in the run's `invocations.jsonl`; make `summary`'s usage
    the run's whole (every invocation, with the breakdown), and state what kind of result it
    is: `partial` (rows not run: the budget stopped it) and `demo` (the built-in endpoint: the
    scores mean nothing)."""
    invocations = record_invocation(
        output_dir,
        summary["usage"],
        summary.get("budget"),
        began,
        measured_fingerprint(summary["config"]),
    )
    summary["usage"] = cumulative_usage(invocations)
    budget = summary.get("budget")
    summary["partial"] = bool(summary["counts"].get("rows_not_run")) or bool(
        budget and budget["stopped"]
    )
    summary["demo"] = any(getattr(config, role).builtin for role in needed_roles(config))


def build_summary(
    results: list[ExampleResult],
    config: Config,
    config_dict: dict[str, Any],
    endpoint_stats: dict[str, Any],
    wall_time_s: float,
) -> dict[str, Any]:
    """summary.json: reference metrics, counts, failures, labelled consensus scores."""
    scored = [r.metrics for r in results if r.metrics is not None]
    metrics = (
        aggregate_metrics(scored, config.runner.bootstrap_samples, config.sampling.seed)
        if scored
        else {}
    )
    graded = [g for r in results for g in r.grades]
    row_counts = RunCounts.of(results)
    counts = {
        "examples": len({r.example.prompt_id for r in results}),
        "rollouts_per_example": config.sampling.rollouts_per_example,
        **row_counts.summary_fields(),
        "criteria": sum(len(r.example.rubrics) for r in results),
        "judge_replies": sum(g.attempts for g in graded),
        "model_requests": endpoint_stats["model"]["requests"],
        "judge_requests": endpoint_stats["judge"]["requests"],
        "model_cache_hits": endpoint_stats["model"]["cache_hits"],
        "judge_cache_hits": endpoint_stats["judge"]["cache_hits"],
        "model_prompt_tokens": endpoint_stats["model"]["prompt_tokens"],
        "model_completion_tokens": endpoint_stats["model"]["completion_tokens"],
        "judge_prompt_tokens": endpoint_stats["judge"]["prompt_tokens"],
        "judge_cached_prompt_tokens": endpoint_stats["judge"]["cached_prompt_tokens"],
        "judge_completion_tokens": endpoint_stats["judge"]["completion_tokens"],
        "peak_requests_in_flight": {
            role: endpoint_stats[role]["peak_in_flight"] for role in ("model", "judge")
        },
        "request_errors": {role: endpoint_stats[role]["errors"] for role in ("model", "judge")},
        "rate_limited": {role: endpoint_stats[role]["rate_limited"] for role in ("model", "judge")},
        "lowest_in_flight_limit": {
            role: endpoint_stats[role]["lowest_limit"] for role in ("model", "judge")
        },
        "evaluation_s": round(endpoint_stats["evaluation_s"], 3),  # sampling and grading only
        "wall_time_s": round(wall_time_s, 3),
    }
    metrics.update(length_adjusted_metrics(results, config))
    return {
        "task": "eval",
        "metrics": metrics,
        "counts": counts,
        "repeats": repeats_statistics(results)
        if config.sampling.rollouts_per_example > 1
        else None,
        "consensus": consensus_breakdown(metrics),
        "failures": [
            {"prompt_id": r.example.prompt_id, "rollout": r.rollout, "error": r.error}
            for r in results
            if r.error is not None and not r.not_run
        ],
        "usage": usage_summary(config, endpoint_stats),
        "budget": endpoint_stats.get("budget"),
        "protocol": protocol(config, "one judge call per criterion, simple-evals template"),
        "config": config_dict,
    }


def protocol(config: Config, grading: str) -> dict[str, Any]:
    """How the run graded, and whether that is the reference protocol."""
    order = config.judge.prompt_order.value
    departures = []
    if config.judge.prompt_order is not PromptOrder.reference:
        departures.append("rubric item moved after the instructions (shared prefix first)")
    if config.judge.batch:
        departures.append("judge calls through the OpenAI Batch API")
    return {
        "reference": not departures,
        "grading": grading
        + ("; NOT the reference protocol: " + "; ".join(departures) if departures else ""),
        "grader_template_sha256": template_sha256(order),
        "prompt_order": order,
        "judge_transport": "batch" if config.judge.batch else "chat.completions",
        "harness_version": __version__,
    }


def repeats_statistics(results: list[ExampleResult]) -> dict[str, Any]:
    """Run-to-run std of the overall score and worst-at-k, over the scored rows."""
    by_example: dict[str, list[float]] = defaultdict(list)
    by_rollout: dict[int, list[float]] = defaultdict(list)
    for r in results:
        if r.score is not None:
            by_example[r.example.prompt_id].append(r.score)
            by_rollout[r.rollout].append(r.score)
    return {
        "rollouts": len(by_rollout),
        "run_to_run_std": run_to_run_std(by_rollout),
        "worst_at_k": {str(k): v for k, v in worst_at_k(list(by_example.values())).items()},
    }


def length_adjusted_metrics(results: list[ExampleResult], config: Config) -> dict[str, float | int]:
    """`length_adjusted_score` and its stats, if `scoring.length_penalty_per_500_chars` is set."""
    penalty = config.scoring.length_penalty_per_500_chars
    if penalty is None:
        return {}
    adjusted = [
        length_adjusted(
            r.score, len(r.completion or ""), penalty, config.scoring.length_center_chars
        )
        for r in results
        if r.score is not None
    ]
    if not adjusted:
        return {}
    return {
        "length_adjusted_score": clipped_mean(adjusted),
        "length_adjusted_score:n_samples": len(adjusted),
        "length_adjusted_score:bootstrap_std": bootstrap_std(
            adjusted, config.runner.bootstrap_samples, config.sampling.seed
        ),
    }
