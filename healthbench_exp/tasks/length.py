"""The length adjustment an eval applies (SPEC 7.4): the penalty of the run's set or option,
and `length_adjusted_score` with its tag slices over the scored rows."""

from __future__ import annotations

from collections.abc import Sequence

from healthbench_exp.config.schema import (
    DatasetConfig,
    RunnerConfig,
    SamplingConfig,
    ScoringConfig,
)
from healthbench_exp.grading.comparison import ScoredReply, length_adjusted_metrics
from healthbench_exp.grading.length import LengthPenalty, length_penalty


def run_length_penalty(scoring: ScoringConfig, dataset: DatasetConfig) -> LengthPenalty | None:
    """The penalty the run's `length_adjusted_score` uses (`grading.length`)."""
    return length_penalty(
        scoring.length_penalty_per_500_chars, scoring.length_center_chars, dataset.difficulty
    )


def effective_scoring(scoring: ScoringConfig, dataset: DatasetConfig) -> ScoringConfig:
    """`scoring` with the penalty the run applies filled in (the option, else the published)."""
    penalty = run_length_penalty(scoring, dataset)
    value = None if penalty is None else penalty.per_500_chars
    return ScoringConfig(value, scoring.length_center_chars)


def length_adjusted(
    rows: Sequence[ScoredReply],
    scoring: ScoringConfig,
    runner: RunnerConfig,
    sampling: SamplingConfig,
) -> dict[str, float | int]:
    """`length_adjusted_score` and `length_adjusted_score:<example tag>` with their stats
    (`grading.comparison.length_adjusted_metrics`) over the scored rows (`rows`, in the run's
    order), when `scoring.length_penalty_per_500_chars` is set; the length is the graded
    reply's."""
    penalty = scoring.length_penalty_per_500_chars
    if penalty is None or not rows:
        return {}
    return length_adjusted_metrics(
        rows, penalty, scoring.length_center_chars, runner.bootstrap_samples, sampling.seed
    )
