"""The meta-eval (`task=meta_eval`): how well the judge agrees with physicians (SPEC 4).

Each row (a conversation, a completion, one rubric criterion and several physicians' verdicts)
is graded once per repeat with the configured judge: the reference grader prompt with the
conversation plus the completion as the last `assistant` turn, and the row's `rubric` string as
the rubric item, as given (no `[points]` prefix, no system message). The judge's verdicts are
then compared with the physicians' by `agreement.pairwise_metrics`; each physician is compared
with the other physicians on the same rows (leave one out), and the physicians' average is
reported beside the judge.

A row the judge could not grade (bounded parse retries, or a failed request) is *ungraded*: it
is left out of the judge's metrics, counted and listed; the physicians' metrics use every row.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from healthbench_exp.config.schema import Config, DataSource
from healthbench_exp.core.completer import Completer
from healthbench_exp.core.endpoint_errors import FatalEndpointError
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.core.types import MetaEvalResult, MetaEvalRow
from healthbench_exp.data.healthbench import (
    DataError,
    bundled_sample_path,
    jsonl_rows,
    official_file,
    parse_messages,
    row_label,
    sample_examples,
)
from healthbench_exp.grading.agreement import (
    Rate,
    average_over_raters,
    leave_one_out,
    metric_name,
    pairwise_metrics,
)
from healthbench_exp.grading.grader import grade_criterion, render_conversation
from healthbench_exp.grading.scoring import bootstrap_std
from healthbench_exp.grading.verdict_watch import UnparseableWatch
from healthbench_exp.model.costs import usage_summary
from healthbench_exp.model.stall import watch_endpoints
from healthbench_exp.output.wandb.tracker import JobContext

log = logging.getLogger(__name__)

META_SAMPLE_FILE = "meta_eval_sample.jsonl"
HEADLINE = "pairwise_model_f1_balanced"
PHYSICIAN_HEADLINE = "pairwise_physician_f1_balanced"


def parse_meta_row(row: Any, where: str) -> MetaEvalRow:
    """Validate one meta-eval row; raise DataError naming `where` and the prompt_id."""
    prompt_id, label = row_label(row, where)
    prompt = parse_messages(row.get("prompt"), label)
    for key in ("completion", "completion_id", "rubric", "category"):
        if not isinstance(row.get(key), str):
            raise DataError(f"{label}: '{key}' must be a string")
    if not row["rubric"].strip():
        raise DataError(f"{label}: 'rubric' is empty")
    labels, ids = row.get("binary_labels"), row.get("anonymized_physician_ids")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, bool) for x in labels):
        raise DataError(f"{label}: 'binary_labels' must be a non-empty list of true/false")
    if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
        raise DataError(f"{label}: 'anonymized_physician_ids' must be a list of strings")
    if len(ids) != len(labels):
        raise DataError(
            f"{label}: {len(labels)} binary_labels but {len(ids)} anonymized_physician_ids"
        )
    return MetaEvalRow(
        prompt_id=prompt_id,
        completion_id=row["completion_id"],
        prompt=prompt,
        completion=row["completion"],
        rubric=row["rubric"],
        category=row["category"],
        binary_labels=tuple(labels),
        physician_ids=tuple(ids),
        where=where,
    )


def meta_eval_path(config: Config) -> Path:
    """`dataset.path`, the bundled sample (`dataset.source=bundled`) or the official file."""
    if config.dataset.path:
        path = Path(config.dataset.path).expanduser()
        if not path.is_file():
            from healthbench_exp.config.schema import ConfigError

            raise ConfigError(f"dataset.path={config.dataset.path}: no such file")
        return path
    if config.dataset.source is DataSource.bundled:
        return bundled_sample_path(META_SAMPLE_FILE)
    return official_file(config.dataset, config.task.meta_eval_file, config.task.meta_eval_sha256)


def load_meta_rows(config: Config) -> list[MetaEvalRow]:
    rows = [parse_meta_row(row, where) for where, row in jsonl_rows(meta_eval_path(config))]
    if not rows:
        raise DataError("the meta-eval file has no rows")
    return rows


def row_conversation(row: MetaEvalRow) -> str:
    """The `<<conversation>>` of a row: its prompt and then its completion as `assistant`."""
    return render_conversation([*row.prompt, {"role": "assistant", "content": row.completion}])


async def grade_rows(
    work: list[tuple[MetaEvalRow, int]],
    judge: Completer,
    config: Config,
    on_result: Callable[[MetaEvalResult], None],
) -> list[MetaEvalResult]:
    """Grade every (row, repeat) once; call `on_result` as each finishes; return them in order."""
    from healthbench_exp.engine.runner import Progress

    slots = asyncio.Semaphore(max(config.judge.max_concurrency, config.runner.max_concurrent))
    endpoint = getattr(judge, "endpoint", judge)  # a BatchJudge wraps the endpoint
    progress = Progress(len(work), config.runner.progress, [endpoint], unit="row")
    watch = UnparseableWatch(config.judge.early_stop_unparseable, gate=not config.judge.batch)

    async def one(row: MetaEvalRow, repeat: int) -> MetaEvalResult:
        async with slots:
            grade = await grade_criterion(
                judge,
                row_conversation(row),
                row.rubric,
                config.judge.max_parse_retries,
                repeat,
                prefix_key=f"{row.prompt_id}:{row.completion_id}",
                watch=watch,
                order=config.judge.prompt_order.value,
            )
        result = MetaEvalResult(row, repeat, grade)
        on_result(result)
        progress.update_grade(grade)
        return result

    try:
        async with (
            watch_endpoints([endpoint], config.runner.stall_notice_s, progress.refresh),
            asyncio.TaskGroup() as group,
        ):
            tasks = [group.create_task(one(row, repeat)) for row, repeat in work]
    except* FatalEndpointError as errors:
        raise errors.exceptions[0] from None
    finally:
        progress.close()
    return [task.result() for task in tasks]


def row_statistics(
    results: list[MetaEvalResult], bootstrap_samples: int, seed: int
) -> dict[str, float | int]:
    """The reference's per-row means over graded rows, overall and `{category}: ...`:
    `model_predicted_positive`, `percent_physician_pos`, `num_physician_labels`, each with
    `:n_samples` and `:bootstrap_std` (means not clipped, as simple-evals' generic aggregate)."""
    values: dict[str, list[float]] = defaultdict(list)
    for r in results:
        if r.grade.criteria_met is None:
            continue
        labels = r.row.binary_labels
        row = {
            "num_physician_labels": float(len(labels)),
            "percent_physician_pos": sum(labels) / len(labels),
            "model_predicted_positive": float(r.grade.criteria_met),
        }
        for name, value in row.items():
            values[name].append(value)
            values[f"{r.row.category}: {name}"].append(value)
    stats: dict[str, float | int] = {}
    for name, series in values.items():
        stats[name] = sum(series) / len(series)
        stats[f"{name}:n_samples"] = len(series)
        stats[f"{name}:bootstrap_std"] = bootstrap_std(series, bootstrap_samples, seed, clip=False)
    return stats


def _plain(metrics: dict[str, Rate]) -> dict[str, dict[str, Any]]:
    return {name: asdict(rate) for name, rate in metrics.items()}


def meta_eval_metrics(
    results: list[MetaEvalResult], bootstrap_samples: int, seed: int
) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """(metrics, agreement detail, by-category rows) of a graded meta-eval.

    metrics: `score` (= `pairwise_model_f1_balanced`, the reference's headline); every judge
    metric under its reference name (None where undefined); the physicians' unweighted and
    n-weighted means of their F1 metrics (`physicians_mean:...`, `physicians_weighted_mean:...`);
    `category_mean:` of the two balanced F1s (the unweighted mean over categories, the paper's
    per-criterion view); and the reference's per-row means.
    """
    graded = [r for r in results if r.grade.criteria_met is not None]
    model = pairwise_metrics(
        [bool(r.grade.criteria_met) for r in graded],
        [r.row.binary_labels for r in graded],
        [r.row.category for r in graded],
        "model",
    )
    physicians = leave_one_out(
        [r.row.binary_labels for r in results],
        [r.row.physician_ids for r in results],
        [r.row.category for r in results],
    )
    average = average_over_raters(physicians)
    metrics: dict[str, Any] = {"score": model[HEADLINE].value if HEADLINE in model else None}
    metrics.update({name: rate.value for name, rate in model.items()})
    for name, avg in average.items():
        if "_f1_" in name:
            metrics[f"physicians_mean:{name}"] = avg.mean
            metrics[f"physicians_weighted_mean:{name}"] = avg.weighted_mean
    categories = sorted({r.row.category for r in results})
    by_category = []
    for category in categories:
        judge_rate = model.get(metric_name("model", "f1", "balanced", category))
        phys = average.get(metric_name("physician", "f1", "balanced", category))
        by_category.append(
            {
                "category": category,
                "rows": sum(r.row.category == category for r in results),
                "rows_graded": sum(r.row.category == category for r in graded),
                "model_f1_balanced": judge_rate.value if judge_rate else None,
                "model_n": judge_rate.n if judge_rate else 0,
                "physicians_mean_f1_balanced": phys.mean if phys else None,
                "physicians_weighted_mean_f1_balanced": phys.weighted_mean if phys else None,
                "physicians": phys.raters if phys else 0,
            }
        )
    for key, column in (
        (HEADLINE, "model_f1_balanced"),
        (f"physicians_weighted_mean:{PHYSICIAN_HEADLINE}", "physicians_weighted_mean_f1_balanced"),
    ):
        defined = [row[column] for row in by_category if row[column] is not None]
        metrics[f"category_mean:{key}"] = sum(defined) / len(defined) if defined else None
    metrics.update(row_statistics(results, bootstrap_samples, seed))
    agreement = {
        "model": _plain(model),
        "physicians": {pid: _plain(m) for pid, m in physicians.items()},
        "physicians_average": {name: asdict(avg) for name, avg in average.items()},
    }
    return metrics, agreement, by_category


def build_meta_summary(
    results: list[MetaEvalResult],
    config: Config,
    config_dict: dict[str, Any],
    stats: dict[str, Any],
    wall_time_s: float,
) -> dict[str, Any]:
    from healthbench_exp.engine.runner import protocol

    metrics, agreement, by_category = meta_eval_metrics(
        results, config.runner.bootstrap_samples, config.sampling.seed
    )
    ungraded = [r for r in results if r.grade.criteria_met is None and not r.grade.not_run]
    judge = stats["judge"]
    counts = {
        "rows": len(results),
        "rows_graded": sum(r.grade.criteria_met is not None for r in results),
        "rows_failed": len(ungraded),  # ungraded: left out of the judge's metrics
        "rows_not_run": sum(r.grade.not_run for r in results),  # budget reached: resume to run
        "rollouts_per_example": config.sampling.rollouts_per_example,
        "examples": len({(r.row.prompt_id, r.row.completion_id) for r in results}),
        "categories": len(by_category),
        "physicians": len(agreement["physicians"]),
        "physician_labels": sum(len(r.row.binary_labels) for r in results),
        "judge_replies": sum(r.grade.attempts for r in results),
        "judge_requests": judge["requests"],
        "judge_cache_hits": judge["cache_hits"],
        "judge_prompt_tokens": judge["prompt_tokens"],
        "judge_cached_prompt_tokens": judge["cached_prompt_tokens"],
        "judge_completion_tokens": judge["completion_tokens"],
        "request_errors": {"judge": judge["errors"]},
        "rate_limited": {"judge": judge["rate_limited"]},
        "evaluation_s": round(stats["evaluation_s"], 3),
        "wall_time_s": round(wall_time_s, 3),
    }
    return {
        "task": "meta_eval",
        "metrics": metrics,
        "counts": counts,
        "by_category": by_category,
        "agreement": agreement,
        "failures": [
            {
                "prompt_id": r.row.prompt_id,
                "completion_id": r.row.completion_id,
                "rollout": r.repeat,
                "error": r.grade.error,
            }
            for r in ungraded
        ],
        "usage": usage_summary(config, stats),
        "budget": stats.get("budget"),
        "protocol": protocol(config, "meta-eval: one judge call per row, rubric as given"),
        "config": config_dict,
    }


def run_meta_eval(
    config: Config,
    output_dir: Path,
    config_dict: dict[str, Any],
    job: JobContext | None = None,
) -> dict[str, Any]:
    """Grade the meta-eval rows, write outputs into `output_dir`, return the summary."""
    from healthbench_exp.cli import startup
    from healthbench_exp.engine.runner import (
        account_invocation,
        endpoint_stats,
        judge_transport,
        open_endpoints,
        reachable_endpoints,
        resolve_keys,
        run_async,
    )
    from healthbench_exp.output import files as reporting
    from healthbench_exp.output.dataset import write_meta_eval_dataset
    from healthbench_exp.output.html import pages as html_report
    from healthbench_exp.output.wandb import tracker as tracking

    started = time.monotonic()
    began = datetime.now(UTC)
    readiness = startup.check(config)  # every problem found without a network, at once
    keys = resolve_keys(config)
    output_dir.mkdir(parents=True, exist_ok=True)
    tracker = tracking.start(
        config, config_dict, output_dir, job or tracking.JobContext(), readiness
    )
    try:
        rows = sample_examples(
            load_meta_rows(config), config.sampling.num_examples, config.sampling.seed
        )
        work = [(row, r) for r in range(config.sampling.rollouts_per_example) for row in rows]
        log.info("meta-eval: %d rows x %d repeats to grade", len(rows), len(work) // len(rows))
        with (
            reachable_endpoints(config) as urls,
            reporting.JsonlWriter(output_dir / "meta_eval.jsonl") as writer,
        ):

            def on_result(result: MetaEvalResult) -> None:
                writer.write(result.record)
                tracker.on_row(result.grade)

            async def grade_all() -> tuple[list[MetaEvalResult], dict[str, Any]]:
                async with open_endpoints(config, urls, keys) as endpoints:
                    began = time.monotonic()
                    async with judge_transport(config, endpoints["judge"], output_dir) as judge:
                        results = await grade_rows(work, judge, config, on_result)
                    return results, endpoint_stats(endpoints, began)

            results, stats = run_async(grade_all())
        summary = build_meta_summary(
            results, config, config_dict, stats, time.monotonic() - started
        )
        account_invocation(summary, config, output_dir, began)
        summary["wandb"] = tracker.describe()
        record = RunSummary.from_dict(summary)
        reporting.write_summary(output_dir, record)
        write_meta_eval_dataset(output_dir / "results", [r.record for r in results])
        html_report.write_meta_eval_report(output_dir, record)
    except BaseException as exc:
        tracker.fail(exc)
        raise
    tracker.finish(record, output_dir)  # local outputs are complete; W&B failures only warn
    return summary
