"""`tasks.length`: the run's penalty (its option, else the published value of its set, else
none) and `length_adjusted_score` over the scored rows, by hand on two replies."""

from __future__ import annotations

import pytest

from healthbench_exp.config.schema import (
    DatasetConfig,
    RunnerConfig,
    SamplingConfig,
    ScoringConfig,
)
from healthbench_exp.grading.comparison import ScoredReply, length_adjusted_metrics
from healthbench_exp.grading.length import OPTION_SOURCE, PUBLISHED_SOURCE
from healthbench_exp.tasks.length import effective_scoring, length_adjusted, run_length_penalty


def test_the_option_then_the_published_penalty_of_the_set() -> None:
    given = run_length_penalty(ScoringConfig(0.05, 1500), DatasetConfig(difficulty="hard"))
    assert given is not None
    assert (given.per_500_chars, given.center_chars, given.set) == (0.05, 1500, "hard")
    assert given.source == OPTION_SOURCE
    published = run_length_penalty(ScoringConfig(None, 2000), DatasetConfig(difficulty="hard"))
    assert published is not None and published.per_500_chars == 0.0392
    assert published.source == PUBLISHED_SOURCE
    assert run_length_penalty(ScoringConfig(), DatasetConfig(difficulty="sample")) is None
    assert effective_scoring(ScoringConfig(None, 1800), DatasetConfig(difficulty="all")) == (
        ScoringConfig(0.0299, 1800)
    )
    assert effective_scoring(ScoringConfig(None, 1800), DatasetConfig(difficulty="sample")) == (
        ScoringConfig(None, 1800)
    )


def test_length_adjusted_score_by_hand() -> None:
    rows = [ScoredReply(0.8, 2500, ("theme:a",)), ScoredReply(0.4, 1000, ("theme:b",))]
    runner, sampling = RunnerConfig(bootstrap_samples=10), SamplingConfig(seed=3)
    metrics = length_adjusted(rows, ScoringConfig(0.1, 2000), runner, sampling)
    # 0.8 - 0.1 * 500 / 500 = 0.7; 0.4 - 0.1 * (-1000) / 500 = 0.6; mean 0.65
    assert metrics["length_adjusted_score"] == pytest.approx(0.65)
    assert metrics["length_adjusted_score:theme:a"] == pytest.approx(0.7)
    assert metrics["length_adjusted_score:n_samples"] == 2
    # the run's bootstrap: its runner.bootstrap_samples and sampling.seed
    assert metrics == length_adjusted_metrics(rows, 0.1, 2000, 10, 3)
    assert metrics != length_adjusted_metrics(rows, 0.1, 2000, 10, 4)
    assert length_adjusted(rows, ScoringConfig(None), runner, sampling) == {}
    assert length_adjusted([], ScoringConfig(0.1), runner, sampling) == {}
