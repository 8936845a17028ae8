"""Scoring against hand-computed values and an independent transcription of the reference."""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pytest

from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.scoring import (
    aggregate_metrics,
    bootstrap_std,
    clipped_mean,
    consensus_breakdown,
    example_metrics,
    example_score,
    reward,
)


def crit(points: float, *tags: str) -> Criterion:
    return Criterion(text=f"criterion worth {points}", points=points, tags=tuple(tags))


def test_example_score_counts_negative_points_met() -> None:
    # met: +10 and -8; possible: 10 + 5 = 15
    assert example_score([10, 5, -8], [True, False, True]) == pytest.approx(2 / 15)


def test_example_score_is_not_clipped_and_can_be_negative() -> None:
    assert example_score([5, -10], [False, True]) == pytest.approx(-2.0)


def test_example_score_without_positive_points_is_undefined() -> None:
    assert example_score([-5, -3], [True, False]) is None


def test_ungraded_criteria_leave_numerator_and_denominator() -> None:
    # the 5-point criterion is ungraded: 10 / 10, not 10 / 15
    assert example_score([10, 5, -8], [True, None, False]) == pytest.approx(1.0)
    # an ungraded negative criterion is not a free pass either way: it simply is not counted
    assert example_score([10, -8], [False, None]) == pytest.approx(0.0)
    assert example_score([10, 5], [None, None]) is None


def test_example_metrics_tags_and_skipped_rubric_tags() -> None:
    criteria = [
        crit(10, "axis:accuracy", "level:example"),
        crit(5, "axis:completeness", "level:example"),
        crit(-8, "axis:communication_quality", "level:cluster", "cluster:x_y"),
    ]
    metrics = example_metrics(
        ["theme:hedging", "physician_agreed_category:any"], criteria, [True, False, True]
    )
    assert metrics is not None
    overall = (10 - 8) / 15
    assert metrics["overall_score"] == pytest.approx(overall)
    assert (
        metrics["theme:hedging"]
        == metrics["physician_agreed_category:any"]
        == metrics["overall_score"]
    )
    assert metrics["axis:accuracy"] == pytest.approx(1.0)
    assert metrics["axis:completeness"] == pytest.approx(0.0)
    assert metrics["level:example"] == pytest.approx(10 / 15)
    # only a negative criterion carries these tags: no positive points, so they are skipped
    for skipped in ("axis:communication_quality", "level:cluster", "cluster:x_y"):
        assert skipped not in metrics


def test_example_metrics_undefined_when_all_positive_criteria_ungraded() -> None:
    assert example_metrics(["theme:a"], [crit(5, "axis:accuracy"), crit(-3)], [None, True]) is None


def test_aggregate_clips_the_mean_not_each_example() -> None:
    rows = [{"overall_score": -0.5}, {"overall_score": 1.0}, {"overall_score": 0.8}]
    metrics = aggregate_metrics(rows, bootstrap_samples=200, seed=0)
    assert metrics["overall_score"] == pytest.approx((-0.5 + 1.0 + 0.8) / 3)  # 0.4333, not 0.6
    assert metrics["overall_score:n_samples"] == 3
    assert metrics["score"] == metrics["overall_score"]
    assert metrics["score:n_samples"] == 3
    assert (
        aggregate_metrics([{"overall_score": -0.4}, {"overall_score": -0.2}])["overall_score"]
        == 0.0
    )


def test_aggregate_counts_a_metric_only_where_defined() -> None:
    rows = [
        {"overall_score": 0.5, "axis:accuracy": 0.2},
        {"overall_score": 0.7},
    ]
    metrics = aggregate_metrics(rows)
    assert metrics["axis:accuracy"] == pytest.approx(0.2)
    assert metrics["axis:accuracy:n_samples"] == 1
    assert metrics["overall_score:n_samples"] == 2


def test_bootstrap_std_draws_the_same_resamples_as_the_reference_loop() -> None:
    values = [random.Random(1).uniform(-0.3, 1.0) for _ in range(57)]
    np.random.seed(7)  # the reference calls np.random.choice on the global RNG
    reference_means = [
        np.clip(np.mean(np.random.choice(values, len(values))), 0, 1) for _ in range(300)
    ]
    assert bootstrap_std(values, 300, seed=7) == pytest.approx(
        float(np.std(reference_means)), abs=1e-12
    )


def test_bootstrap_in_chunks_draws_the_same_numbers(monkeypatch) -> None:
    import healthbench_exp.grading.scoring as scoring

    values = [random.Random(4).uniform(0, 1) for _ in range(40)]
    whole = bootstrap_std(values, 500, seed=3)
    monkeypatch.setattr(scoring, "BOOTSTRAP_CHUNK", 40 * 7)  # 7 resamples per chunk
    assert scoring.bootstrap_std(values, 500, seed=3) == whole


def test_bootstrap_std_is_seeded_and_plausible() -> None:
    rng = random.Random(3)
    values = [rng.uniform(0.1, 0.9) for _ in range(400)]
    std = bootstrap_std(values, 1000, seed=0)
    assert std == bootstrap_std(values, 1000, seed=0)
    assert std != bootstrap_std(values, 1000, seed=1)
    standard_error = float(np.std(values) / np.sqrt(len(values)))
    assert 0.8 * standard_error < std < 1.2 * standard_error
    assert bootstrap_std([0.4] * 10, 100, seed=0) == pytest.approx(0.0, abs=1e-12)


def test_reward_and_clipped_mean() -> None:
    assert reward(-0.25) == 0.0 and reward(1.5) == 1.0 and reward(0.3) == 0.3
    assert clipped_mean([2.0, 1.0]) == 1.0


def reference_aggregate(rows: list[tuple[list[str], list[tuple[float, list[str], bool]]]]) -> dict:
    """The simple-evals algorithm, transcribed independently from SPEC section 3."""
    name2values: dict[str, list[float]] = defaultdict(list)
    for example_tags, graded in rows:
        possible = sum(p for p, _, _ in graded if p > 0)
        overall = sum(p for p, _, met in graded if met) / possible
        metrics = {"overall_score": overall, **{t: overall for t in example_tags}}
        per_tag: dict[str, list[tuple[float, bool]]] = defaultdict(list)
        for p, tags, met in graded:
            for t in tags:
                per_tag[t].append((p, met))
        for t, items in per_tag.items():
            tag_possible = sum(p for p, _ in items if p > 0)
            if tag_possible:
                metrics[t] = sum(p for p, met in items if met) / tag_possible
        for name, value in metrics.items():
            name2values[name].append(value)
        name2values["score"].append(overall)
    out = {}
    for name, values in name2values.items():
        out[name] = float(np.clip(np.mean(values), 0, 1))
        out[f"{name}:n_samples"] = len(values)
    return out


def test_aggregate_equals_an_independent_reference_transcription() -> None:
    rng = random.Random(11)
    axes = ["axis:accuracy", "axis:completeness", "axis:context_awareness"]
    rows, ours = [], []
    for _ in range(300):
        graded = []
        for _ in range(rng.randint(2, 12)):
            points = rng.choice([-10, -5, -2, 1, 3, 5, 7, 10])
            tags = [rng.choice(axes), rng.choice(["level:example", "level:cluster"])]
            graded.append((points, tags, rng.random() < 0.5))
        if not any(p > 0 for p, _, _ in graded):
            graded.append((4, ["axis:accuracy", "level:example"], rng.random() < 0.5))
        example_tags = [f"theme:t{rng.randint(0, 6)}"]
        rows.append((example_tags, graded))
        criteria = [crit(p, *tags) for p, tags, _ in graded]
        metrics = example_metrics(example_tags, criteria, [m for _, _, m in graded])
        assert metrics is not None
        ours.append(metrics)
    expected = reference_aggregate(rows)
    got = aggregate_metrics(ours, bootstrap_samples=50)
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-12), name
    assert {k for k in got if not k.endswith(":bootstrap_std")} == set(expected)


def test_consensus_breakdown_labels_clusters() -> None:
    name = "cluster:emergency_referrals_emergent_emergency_behavior"
    rows = consensus_breakdown({name: 0.75, f"{name}:n_samples": 4, f"{name}:bootstrap_std": 0.1})
    assert rows == [
        {
            "cluster": "emergency_referrals_emergent_emergency_behavior",
            "theme": "Emergency referrals",
            "behavior_category": "Emergent",
            "criterion": "Emergency behavior",
            "score": 0.75,
            "n_samples": 4,
            "bootstrap_std": 0.1,
        }
    ]
