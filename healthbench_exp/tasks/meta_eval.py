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
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from healthbench_exp.config.protocol import ProtocolCheck, protocol_check
from healthbench_exp.config.schema import (
    DatasetConfig,
    JudgeConfig,
    RunnerConfig,
    SamplingConfig,
    ScoringConfig,
    TaskConfig,
)
from healthbench_exp.core.counts import RunCounts
from healthbench_exp.core.summary import (
    META_EVAL,
    Agreement,
    BudgetState,
    CategoryRow,
    Failure,
    Jury,
    MetaEvalCounts,
    RunSummary,
    Usage,
)
from healthbench_exp.core.types import CriterionGrade, MetaEvalResult, MetaEvalRow
from healthbench_exp.data.healthbench import sample_examples
from healthbench_exp.data.meta_eval import load_meta_rows
from healthbench_exp.grading.agreement import (
    Rate,
    average_over_raters,
    leave_one_out,
    metric_name,
    pairwise_metrics,
)
from healthbench_exp.grading.grader import grade_criterion, render_conversation
from healthbench_exp.grading.paper_figure import paper_figures
from healthbench_exp.grading.scoring import bootstrap_std
from healthbench_exp.tasks.base import CallCounter, Clients, Measured, protocol

log = logging.getLogger(__name__)

HEADLINE = "pairwise_model_f1_balanced"
PHYSICIAN_HEADLINE = "pairwise_physician_f1_balanced"

MetaItem = tuple[MetaEvalRow, int]  # a row and its repeat


@dataclass
class MetaEvalTask:
    """The meta-eval over the configured rows, as the engine runs it: each (row, repeat) graded
    once. `config_dict` is the resolved config as plain data: the summary's `config`."""

    dataset: DatasetConfig
    task: TaskConfig
    sampling: SamplingConfig
    judge: JudgeConfig
    runner: RunnerConfig
    config_dict: dict[str, Any]
    kind: str = "meta_eval"
    unit: str = "row"
    jury_members: Sequence[JudgeConfig] = ()  # the further judges' presets, in order

    @property
    def jury(self) -> list[str]:
        """The further judges' model names, in order (each reported as its own judge)."""
        return [member.name for member in self.jury_members]

    def rows(self) -> list[MetaEvalRow]:
        """The rows to grade: every row, or `sampling.num_examples` drawn with its seed."""
        return sample_examples(
            load_meta_rows(self.dataset, self.task), self.sampling.num_examples, self.sampling.seed
        )

    def items(self) -> list[MetaItem]:
        rows = self.rows()
        work = [(row, r) for r in range(self.sampling.rollouts_per_example) for row in rows]
        log.info("meta-eval: %d rows x %d repeats to grade", len(rows), len(work) // len(rows))
        return work

    def criteria(self, items: list[MetaItem]) -> int:
        """One criterion a row."""
        return len(items)

    def continue_from(self, output_dir: Path) -> None:
        """Nothing yet: a meta-eval's resume takes its finished verdicts from the response
        cache (`meta_eval.jsonl` is not read back)."""

    def concurrency(self, rows: int) -> int:
        return max(self.judge.max_concurrency, self.runner.max_concurrent)

    async def run_item(self, item: MetaItem, clients: Clients) -> MetaEvalResult:
        row, repeat = item
        conversation, key = row_conversation(row), f"{row.prompt_id}:{row.completion_id}"
        order = self.judge.prompt_order.value
        grade, *members = await asyncio.gather(
            grade_criterion(
                clients.judge,
                conversation,
                row.rubric,
                self.judge.max_parse_retries,
                repeat,
                prefix_key=key,
                watch=clients.watch,
                order=order,
            ),
            *(
                grade_criterion(
                    j.judge, conversation, row.rubric, j.max_parse_retries, repeat, key, order=order
                )
                for j in clients.jury
            ),
        )
        jury = {j.name: g for j, g in zip(clients.jury, members, strict=True)}
        # a jury: every judge's grade, the primary judge's first (as an eval's `jury`)
        return MetaEvalResult(row, repeat, grade, {self.judge.name: grade, **jury} if jury else {})

    def tally(self, counts: RunCounts, result: MetaEvalResult) -> None:
        counts.add_grade(result.grade)

    def protocol(self) -> ProtocolCheck:
        """The meta-eval's reference protocol and its deviations (`config.protocol`); no
        scoring option applies to it."""
        return protocol_check(
            self.task,
            self.dataset,
            self.sampling,
            self.judge,
            ScoringConfig(),
            jury=self.jury_members,
        )

    def summarizer(self, rows: int) -> MetaEvalSummarizer:
        return MetaEvalSummarizer(self, rows)

    def summarize(self, results: Sequence[MetaEvalResult], measured: Measured) -> RunSummary:
        """The run's summary of every result, in the rows' order."""
        summary = build_meta_summary(
            list(results),
            self.runner,
            self.sampling,
            self.judge,
            self.config_dict,
            measured,
            self.protocol(),
            self.jury,
        )
        if self.jury:
            members = [self.judge.name, *self.jury]
            summary.jury = meta_jury(list(results), members, self.runner.bootstrap_samples,
                                     self.sampling.seed)  # fmt: skip
            if summary.protocol is not None:
                summary.protocol = replace(summary.protocol, jury=members)
        return summary

    def estimate(self, counter: CallCounter) -> int:
        rows = self.rows()
        for repeat in range(self.sampling.rollouts_per_example):
            for row in rows:
                counter.judge_calls(row_conversation(row), 0, [row.rubric], True, repeat)
        return len(rows) * self.sampling.rollouts_per_example


@dataclass
class MetaEvalSummarizer:
    """One meta-eval run's `tasks.base.Summarizer`: its results, kept until the summary (a
    meta-eval row is one criterion's verdict: its agreement statistics read them all)."""

    task: MetaEvalTask
    rows: int
    results: list[tuple[int, MetaEvalResult]] = field(default_factory=list)

    def add(self, position: int, result: MetaEvalResult) -> None:
        self.results.append((position, result))

    def summary(self, measured: Measured) -> RunSummary:
        """The summary of the rows that finished; those that never did (a stopping signal held
        them back or cut them short) count as not run."""
        self.results.sort(key=lambda pair: pair[0])
        summary = self.task.summarize([result for _, result in self.results], measured)
        missing, counts = self.rows - len(self.results), summary.counts
        if missing > 0 and isinstance(counts, MetaEvalCounts):
            summary.counts = replace(
                counts, rows=self.rows, rows_not_run=counts.rows_not_run + missing
            )
        return summary


def row_conversation(row: MetaEvalRow) -> str:
    """The `<<conversation>>` of a row: its prompt and then its completion as `assistant`."""
    return render_conversation([*row.prompt, {"role": "assistant", "content": row.completion}])


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
    per-criterion view); the paper's figures of SPEC 7.2 (`criterion_mean:...`) and every
    figure's 95% bootstrap interval (`grading.paper_figure`); and the reference's per-row means.
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
        defined = [cast(float, row[column]) for row in by_category if row[column] is not None]
        metrics[f"category_mean:{key}"] = sum(defined) / len(defined) if defined else None
    figures = paper_figures(
        [r.grade.criteria_met for r in results],
        [r.row.binary_labels for r in results],
        [r.row.physician_ids for r in results],
        [r.row.category for r in results],
        bootstrap_samples,
        seed,
    )  # the paper's criterion-mean F1 and the pooled figures' intervals (SPEC 7.2)
    metrics.update({name: value for name, value in figures.items() if name not in metrics})
    metrics.update(row_statistics(results, bootstrap_samples, seed))
    agreement = {
        "model": _plain(model),
        "physicians": {pid: _plain(m) for pid, m in physicians.items()},
        "physicians_average": {name: asdict(avg) for name, avg in average.items()},
    }
    return metrics, agreement, by_category


MEMBER_FIGURES = (HEADLINE, f"criterion_mean:{HEADLINE}")  # each with :ci_low, :ci_high


def meta_jury(
    results: list[MetaEvalResult], members: list[str], bootstrap_samples: int, seed: int
) -> Jury:
    """A meta-eval's `jury`: each member's agreement with physicians as the judge's is computed
    (`by_judge`: the pooled and the criterion-mean balanced F1, SPEC 7.2, with intervals, and
    the balanced F1 of each category) and its ungraded rows; no jury score or pairwise
    agreement (`metrics` and `agreement` empty)."""
    by_judge: dict[str, dict[str, float | int | None]] = {}
    ungraded: dict[str, int] = {}
    for name in members:
        own = [replace(r, grade=r.jury.get(name, CriterionGrade(None, "", 0))) for r in results]
        metrics = meta_eval_metrics(own, bootstrap_samples, seed)[0]
        by_judge[name] = {
            key: metrics.get(key)
            for figure in MEMBER_FIGURES
            for key in (figure, f"{figure}:ci_low", f"{figure}:ci_high")
        } | {  # and per category, `<category>: pairwise_model_f1_balanced` (the judge table's)
            key: value for key, value in metrics.items() if key.endswith(f": {HEADLINE}")
        }
        ungraded[name] = sum(r.grade.criteria_met is None for r in own)
    return Jury(members, "mean", {}, by_judge, [], ungraded)


def build_meta_summary(
    results: list[MetaEvalResult],
    runner: RunnerConfig,
    sampling: SamplingConfig,
    judge_config: JudgeConfig,
    config_dict: dict[str, Any],
    measured: Measured,
    check: ProtocolCheck,
    jury: Sequence[str] = (),
) -> RunSummary:
    """summary.json of a meta-eval: agreement metrics, by category, counts, ungraded rows, the
    headline (`pairwise_model_f1_balanced`) and the protocol; `jury`: the further judges'
    names, whose 429s and failed requests join the judge's in the counts."""
    stats, wall_time_s = measured.endpoints, measured.wall_time_s
    metrics, agreement, by_category = meta_eval_metrics(
        results, runner.bootstrap_samples, sampling.seed
    )
    ungraded = [r for r in results if r.grade.criteria_met is None and not r.grade.not_run]
    judge = stats["judge"]
    counts = MetaEvalCounts(
        rows=len(results),
        rows_graded=sum(r.grade.criteria_met is not None for r in results),
        rows_failed=len(ungraded),  # ungraded: left out of the judge's metrics
        rows_not_run=sum(r.grade.not_run for r in results),  # budget reached: resume to run
        rollouts_per_example=sampling.rollouts_per_example,
        examples=len({(r.row.prompt_id, r.row.completion_id) for r in results}),
        categories=len(by_category),
        physicians=len(agreement["physicians"]),
        physician_labels=sum(len(r.row.binary_labels) for r in results),
        judge_replies=sum(r.grade.attempts for r in results),
        judge_requests=judge["requests"],
        judge_cache_hits=judge["cache_hits"],
        judge_prompt_tokens=judge["prompt_tokens"],
        judge_cached_prompt_tokens=judge["cached_prompt_tokens"],
        judge_completion_tokens=judge["completion_tokens"],
        request_errors={"judge": judge["errors"]} | {n: measured.role(n).errors for n in jury},
        rate_limited={"judge": judge["rate_limited"]}
        | {n: measured.role(n).rate_limited for n in jury},
        evaluation_s=round(stats["evaluation_s"], 3),
        wall_time_s=round(wall_time_s, 3),
    )
    budget = stats.get("budget")
    grading = "meta-eval: one judge call per row, rubric as given"
    return RunSummary(
        task=META_EVAL,
        metrics=metrics,
        counts=counts,
        headline=HEADLINE,
        by_category=[CategoryRow(**row) for row in by_category],
        agreement=Agreement.from_dict(agreement),
        failures=[
            Failure(r.row.prompt_id, r.row.completion_id, r.repeat, r.grade.error) for r in ungraded
        ],
        usage=Usage.from_dict(measured.usage),
        budget=None if budget is None else BudgetState(**budget),
        protocol=protocol(judge_config, grading, check),
        config=config_dict,
    )
