"""An eval's summary, built as its rows finish (`EvalTally`), never from a list of every result.

The engine hands each finished row to the run's `EvalTally` with its position in the run's rows.
It keeps only what summary.json needs, in compact running form: the row counts, each metric's
values as an array of floats with the rows' positions (the bootstrap resamples them in the
run's order), the failures, and, only when the run asks for them, each scored row's reply
length (a length penalty), its (prompt_id, rollout, score) (repeats), its jury verdicts (a jury)
and per-example verdict counts of each `cluster:` tag (calibration). `build_summary` then
computes exactly what it computed from the whole list of results before: the same metrics in
the same order, the same bootstrap stds.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from healthbench_exp.config.protocol import ProtocolCheck, headline_metric
from healthbench_exp.config.schema import JudgeConfig, RunnerConfig, SamplingConfig, ScoringConfig
from healthbench_exp.core.counts import RunCounts
from healthbench_exp.core.summary import (
    EVAL,
    ConsensusRow,
    EvalCounts,
    Failure,
    Repeats,
    RunSummary,
    Usage,
)
from healthbench_exp.core.types import ExampleResult
from healthbench_exp.grading.bridge import RunRow
from healthbench_exp.grading.comparison import ScoredReply, run_to_run_std, worst_at_k
from healthbench_exp.grading.jury import JuryRow
from healthbench_exp.grading.scoring import consensus_breakdown, series_statistics
from healthbench_exp.tasks.base import Measured, protocol
from healthbench_exp.tasks.jury import jury_row
from healthbench_exp.tasks.length import length_adjusted

SCORE = "score"  # the reference reports `score` beside `overall_score`: the same values


@dataclass
class MetricSeries:
    """One metric's values over the rows that define it, with those rows' positions."""

    first: tuple[int, int]  # (position, index in that row's metrics) where it first appears
    positions: array[int] = field(default_factory=lambda: array("q"))
    values: array[float] = field(default_factory=lambda: array("d"))

    def add(self, position: int, index: int, value: float) -> None:
        self.first = min(self.first, (position, index))
        self.positions.append(position)
        self.values.append(value)

    def in_order(self) -> list[float]:
        """The values in the rows' order."""
        order = sorted(range(len(self.positions)), key=self.positions.__getitem__)
        return [self.values[i] for i in order]


ClusterCounts = dict[str, dict[str, list[int]]]  # tag -> prompt_id -> [met, graded, position]


@dataclass
class EvalTally:
    """What an eval's summary needs of its rows, taken in as they finish (`add`).

    `length`: keep each scored row's reply length (a length penalty is set); `repeats`: keep
    (prompt_id, rollout, score) of each scored row (several rollouts); `jury`: the judges of a
    jury, the primary first (empty: none); `clusters`: count each `cluster:` tag's verdicts per
    example (calibration); `bridge`: keep each scored row's criteria and verdicts (a bridge).
    """

    rows: int
    length: bool = False
    repeats: bool = False
    jury: tuple[str, ...] = ()
    clusters: bool = False
    bridge: bool = False
    counts: RunCounts = field(init=False)
    examples: set[str] = field(default_factory=set)
    criteria: int = 0
    judge_replies: int = 0
    metrics: dict[str, MetricSeries] = field(default_factory=dict)
    failures: list[tuple[int, Failure]] = field(default_factory=list)
    replies: list[tuple[int, ScoredReply]] = field(default_factory=list)
    scores: list[tuple[int, str, int, float]] = field(default_factory=list)
    jury_rows: list[tuple[int, JuryRow]] = field(default_factory=list)
    cluster_counts: ClusterCounts = field(default_factory=lambda: defaultdict(dict))
    bridge_rows: list[tuple[int, RunRow]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.counts = RunCounts(rows=self.rows)

    def add(self, position: int, result: ExampleResult) -> None:
        example = result.example
        self.counts.add(result)
        self.examples.add(example.prompt_id)
        self.criteria += len(example.rubrics)
        self.judge_replies += sum(g.attempts for g in result.grades)
        if result.error is not None and not result.not_run:
            self.failures.append(
                (position, Failure(example.prompt_id, rollout=result.rollout, error=result.error))
            )
        if result.metrics is not None:
            self._add_metrics(position, result.metrics)
            score = result.metrics["overall_score"]
            if self.length:
                reply = ScoredReply(score, len(result.completion or ""), example.example_tags)
                self.replies.append((position, reply))
            if self.repeats:
                self.scores.append((position, example.prompt_id, result.rollout, score))
            if self.bridge:
                verdicts = [g.criteria_met for g in result.grades]
                self.bridge_rows.append(
                    (position, RunRow(example.example_tags, example.rubrics, verdicts))
                )
        if len(self.jury) > 1 and (row := jury_row(result, self.jury)) is not None:
            self.jury_rows.append((position, row))
        if self.clusters:
            self._add_clusters(position, result)

    def _add_metrics(self, position: int, metrics: dict[str, float]) -> None:
        # the names in the order aggregating the rows in order would meet them: a row's own
        # order, `score` right after the first row's names
        for index, (name, value) in enumerate(
            [*metrics.items(), (SCORE, metrics["overall_score"])]
        ):
            series = self.metrics.get(name)
            if series is None:
                series = self.metrics[name] = MetricSeries((position, index))
            series.add(position, index, value)

    def _add_clusters(self, position: int, result: ExampleResult) -> None:
        prompt_id = result.example.prompt_id
        for criterion, grade in zip(result.example.rubrics, result.grades, strict=False):
            if criterion.cluster is None:
                continue
            by_example = self.cluster_counts[f"cluster:{criterion.cluster}"]
            tally = by_example.setdefault(prompt_id, [0, 0, position])
            tally[2] = min(tally[2], position)
            if grade.criteria_met is not None:
                tally[0] += bool(grade.criteria_met)
                tally[1] += 1

    def aggregate(self, bootstrap_samples: int, seed: int) -> dict[str, float | int]:
        """Mean (clipped), `:n_samples` and `:bootstrap_std` of every metric over the rows in
        their order: `grading.scoring.aggregate_metrics` of every scored row's metrics."""
        ordered = sorted(self.metrics.items(), key=lambda item: item[1].first)
        values = ((name, series.in_order()) for name, series in ordered)  # one at a time
        return series_statistics(values, bootstrap_samples, seed)

    def scored_replies(self) -> list[ScoredReply]:
        return [reply for _, reply in sorted(self.replies, key=lambda pair: pair[0])]

    def bridge_in_order(self) -> list[RunRow]:
        return [row for _, row in sorted(self.bridge_rows, key=lambda pair: pair[0])]

    def jury_in_order(self) -> list[JuryRow]:
        return [row for _, row in sorted(self.jury_rows, key=lambda pair: pair[0])]

    def clusters_in_order(self) -> dict[str, dict[str, list[int]]]:
        """Per `cluster:` tag, per prompt_id in the run's order: [met, graded]."""
        return {
            tag: {
                prompt_id: counts[:2]
                for prompt_id, counts in sorted(by_example.items(), key=lambda kv: kv[1][2])
            }
            for tag, by_example in self.cluster_counts.items()
        }

    def repeats_statistics(self) -> Repeats:
        """Run-to-run std of the overall score and worst-at-k, over the scored rows."""
        by_example: dict[str, list[float]] = defaultdict(list)
        by_rollout: dict[int, list[float]] = defaultdict(list)
        for _, prompt_id, rollout, score in sorted(self.scores):
            by_example[prompt_id].append(score)
            by_rollout[rollout].append(score)
        return Repeats(
            rollouts=len(by_rollout),
            run_to_run_std=run_to_run_std(by_rollout),
            worst_at_k={str(k): v for k, v in worst_at_k(list(by_example.values())).items()},
        )


def build_summary(
    tally: EvalTally,
    runner: RunnerConfig,
    sampling: SamplingConfig,
    scoring: ScoringConfig,
    judge: JudgeConfig,
    config_dict: dict[str, object],
    measured: Measured,
    check: ProtocolCheck,
    jury: Sequence[str] = (),
) -> RunSummary:
    """summary.json: reference metrics (and the length-adjusted ones with a length penalty),
    the headline metric's name, counts, failures, labelled consensus scores, the protocol.
    `jury`: the further judges' names, whose endpoints' counters join the per-role counts."""
    metrics = tally.aggregate(runner.bootstrap_samples, sampling.seed)
    model, judged = measured.role("model"), measured.role("judge")
    per_role = {"model": model, "judge": judged, **{name: measured.role(name) for name in jury}}
    counts = EvalCounts(
        examples=len(tally.examples),
        rollouts_per_example=sampling.rollouts_per_example,
        **tally.counts.summary_fields(),
        criteria=tally.criteria,
        judge_replies=tally.judge_replies,
        model_requests=model.requests,
        judge_requests=judged.requests,
        model_cache_hits=model.cache_hits,
        judge_cache_hits=judged.cache_hits,
        model_prompt_tokens=model.prompt_tokens,
        model_completion_tokens=model.completion_tokens,
        judge_prompt_tokens=judged.prompt_tokens,
        judge_cached_prompt_tokens=judged.cached_prompt_tokens,
        judge_completion_tokens=judged.completion_tokens,
        peak_requests_in_flight={role: s.peak_in_flight for role, s in per_role.items()},
        request_errors={role: s.errors for role, s in per_role.items()},
        rate_limited={role: s.rate_limited for role, s in per_role.items()},
        lowest_in_flight_limit={role: s.lowest_limit for role, s in per_role.items()},
        evaluation_s=round(measured.evaluation_s, 3),  # sampling and grading only
        wall_time_s=round(measured.wall_time_s, 3),
    )
    metrics.update(length_adjusted(tally.scored_replies(), scoring, runner, sampling))
    repeats = tally.repeats_statistics() if sampling.rollouts_per_example > 1 else None
    return RunSummary(
        task=EVAL,
        metrics=metrics,
        counts=counts,
        headline=headline_metric(check.name, scoring),
        repeats=repeats,
        # consensus_breakdown's rows hold exactly ConsensusRow's fields
        consensus=[ConsensusRow.from_dict(row) for row in consensus_breakdown(metrics)],
        failures=[failure for _, failure in sorted(tally.failures, key=lambda pair: pair[0])],
        usage=Usage.from_dict(measured.usage),
        budget=measured.budget,
        protocol=protocol(judge, "one judge call per criterion, simple-evals template", check),
        config=config_dict,
    )
