"""Repeats statistics, length adjustment and the paired bootstrap, against brute force."""

from __future__ import annotations

import random
from itertools import combinations

import numpy as np
import pytest

from healthbench_exp.grading.comparison import (
    ScoredReply,
    expected_min_of_k,
    length_adjusted,
    length_adjusted_metrics,
    paired_bootstrap,
    run_to_run_std,
    worst_at_k,
)


def brute_expected_min(scores: list[float], k: int) -> float:
    subsets = list(combinations(scores, k))
    return sum(min(s) for s in subsets) / len(subsets)


def test_expected_min_equals_brute_force() -> None:
    rng = random.Random(5)
    for _ in range(50):
        scores = [rng.uniform(-0.5, 1.0) for _ in range(rng.randint(1, 8))]
        for k in range(1, len(scores) + 1):
            assert expected_min_of_k(scores, k) == pytest.approx(brute_expected_min(scores, k))
    with pytest.raises(ValueError):
        expected_min_of_k([0.1, 0.2], 3)


def test_worst_at_k_averages_then_clips() -> None:
    scores = [[0.2, 0.8, 0.5], [1.0, 0.4, 0.6], [-0.9, -0.2, 0.1]]
    result = worst_at_k(scores)
    assert set(result) == {1, 2, 3}
    for k in (1, 2, 3):
        raw = np.mean([brute_expected_min(s, k) for s in scores])
        assert result[k] == pytest.approx(min(1.0, max(0.0, raw)))
    assert result[1] >= result[2] >= result[3]
    assert result[3] == 0.0  # mean of minima (0.2, 0.4, -0.9) = -0.1, clipped
    assert worst_at_k([[0.5, 0.7], [0.1, 0.2, 0.3]]).keys() == {1, 2}  # the fewest repeats


def test_run_to_run_std() -> None:
    by_rollout = {0: [0.2, 0.4], 1: [0.6, 0.8], 2: [-1.0, 0.5]}
    overall = [0.3, 0.7, 0.0]  # the third is clipped from -0.25
    assert run_to_run_std(by_rollout) == pytest.approx(np.std(overall, ddof=1))
    assert run_to_run_std({0: [0.3]}) is None


def test_length_adjustment() -> None:
    assert length_adjusted(0.5, 3000, 0.02, 2000) == pytest.approx(0.46)
    assert length_adjusted(0.5, 1000, 0.02, 2000) == pytest.approx(0.54)


def test_paired_bootstrap_finds_a_known_difference() -> None:
    rng = random.Random(2)
    base = {f"p{i}": rng.uniform(0.0, 0.8) for i in range(400)}
    better = {p: s + 0.1 + rng.gauss(0, 0.05) for p, s in base.items()}
    result = paired_bootstrap(better, base, samples=1000, seed=0)
    assert result is not None and result.n == 400
    difference, (low, high) = result.bootstrap.estimate, result.bootstrap.interval.as_list()
    assert difference == pytest.approx(
        np.clip(np.mean(list(better.values())), 0, 1) - np.clip(np.mean(list(base.values())), 0, 1)
    )
    assert 0.09 < difference < 0.11
    assert low < difference < high
    assert high - low < 0.02  # pairing removes the between-prompt spread
    assert result.bootstrap.draws == 1000 and 0 < result.bootstrap.std < (high - low) / 2
    assert result.sign_flip_fraction == 0.0
    assert paired_bootstrap(better, base, seed=0) == result  # seeded


def test_paired_bootstrap_of_noise_flips_sign_and_uses_only_shared_ids() -> None:
    rng = random.Random(3)
    a = {f"p{i}": rng.uniform(0, 1) for i in range(200)}
    b = {f"p{i}": rng.uniform(0, 1) for i in range(100, 300)}
    result = paired_bootstrap(a, b, samples=500, seed=1)
    assert result is not None and result.n == 100
    assert result.bootstrap.interval.covers(0.0)
    assert 0.05 < result.sign_flip_fraction < 0.95
    assert paired_bootstrap({"x": 1.0}, {"y": 1.0}) is None


PENALTY, CENTER = 0.0147, 2000  # HealthBench Professional's


def test_length_adjustment_by_hand_raises_short_lowers_long_keeps_negatives() -> None:
    # 0.5 - 0.0147 * (1000 - 2000) / 500 = 0.5294: a short reply gains
    assert length_adjusted(0.5, 1000, PENALTY, CENTER) == pytest.approx(0.5294)
    # 0.5 - 0.0147 * (4500 - 2000) / 500 = 0.4265: a long one loses
    assert length_adjusted(0.5, 4500, PENALTY, CENTER) == pytest.approx(0.4265)
    # -0.2 - 0.0147 * 1000 / 500 = -0.2294: not clipped per example
    assert length_adjusted(-0.2, 3000, PENALTY, CENTER) == pytest.approx(-0.2294)
    # 1.0 + 0.0147 * 4 = 1.0588: not clipped per example either
    assert length_adjusted(1.0, 0, PENALTY, CENTER) == pytest.approx(1.0588)


def test_length_adjusted_metrics_by_tag_mean_then_clip() -> None:
    rows = [
        ScoredReply(0.5, 1000, ("theme:a", "use_case:x")),
        ScoredReply(0.5, 4500, ("theme:a",)),
        ScoredReply(-0.2, 3000, ("theme:b", "use_case:x")),
    ]
    metrics = length_adjusted_metrics(rows, PENALTY, CENTER, 200, 0)
    assert metrics["length_adjusted_score"] == pytest.approx((0.5294 + 0.4265 - 0.2294) / 3)
    assert metrics["length_adjusted_score:theme:a"] == pytest.approx((0.5294 + 0.4265) / 2)
    assert metrics["length_adjusted_score:theme:b"] == 0.0  # the mean -0.2294, clipped
    assert metrics["length_adjusted_score:use_case:x"] == pytest.approx((0.5294 - 0.2294) / 2)
    counts = {n: v for n, v in metrics.items() if n.endswith(":n_samples")}
    assert counts == {
        "length_adjusted_score:n_samples": 3,
        "length_adjusted_score:theme:a:n_samples": 2,
        "length_adjusted_score:theme:b:n_samples": 1,
        "length_adjusted_score:use_case:x:n_samples": 2,
    }
    assert metrics["length_adjusted_score:theme:b:bootstrap_std"] == 0.0  # one row: no spread
    assert metrics["length_adjusted_score:bootstrap_std"] > 0
    assert next(iter(metrics)) == "length_adjusted_score"  # the overall first


def test_length_adjusted_mean_is_clipped_to_one() -> None:
    metrics = length_adjusted_metrics([ScoredReply(1.0, 0, ("theme:a",))], PENALTY, CENTER, 10, 0)
    assert metrics["length_adjusted_score"] == 1.0  # 1.0588 per example, clipped as a mean
