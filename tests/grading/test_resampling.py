"""`grading.resampling`: the bootstrap's one resampling loop, and its named result
(`core.intervals.BootstrapResult`), against numpy computed independently."""

from __future__ import annotations

import numpy as np
import pytest

from healthbench_exp.core.intervals import BootstrapResult, Interval
from healthbench_exp.grading.resampling import bootstrap, bootstrap_draws


def test_each_population_is_drawn_anew_in_order_from_one_generator() -> None:
    x = np.arange(7, dtype=float)
    y = np.arange(4, dtype=float) * 10

    def total(i: np.ndarray, j: np.ndarray) -> float:
        return float(x[i].sum() + y[j].sum())

    rng = np.random.default_rng(11)  # what the helper must draw: 7 of x, then 4 of y, per draw
    expected = []
    for _ in range(25):
        i = rng.integers(0, 7, 7)
        j = rng.integers(0, 4, 4)
        expected.append(float(x[i].sum() + y[j].sum()))
    assert bootstrap_draws(total, (7, 4), 25, 11) == expected


def test_a_resample_where_the_statistic_is_undefined_is_left_out() -> None:
    rng = np.random.default_rng(2)
    kept = [m for m in (float(rng.integers(0, 3, 3).mean()) for _ in range(40)) if m != 0.0]

    def mean_unless_zero(i: np.ndarray) -> float | None:
        mean = float(i.mean())
        return None if mean == 0.0 else mean

    assert bootstrap_draws(mean_unless_zero, (3,), 40, 2) == kept
    assert bootstrap(lambda i: None, (3,), 10, 0, estimate=0.5) is None


def test_the_result_is_named_and_numpys() -> None:
    values = np.random.default_rng(0).normal(size=200)
    result = bootstrap(lambda i: float(values[i].mean()), (200,), 300, 4, estimate=values.mean())
    assert result is not None
    draws = bootstrap_draws(lambda i: float(values[i].mean()), (200,), 300, 4)
    low, high = np.percentile(draws, [2.5, 97.5])
    assert result == BootstrapResult(
        float(values.mean()), Interval(float(low), float(high)), result.std, 300
    )
    assert result.std == pytest.approx(float(np.std(draws)), rel=1e-12)
    assert BootstrapResult.of_draws(1.0, [1.0, 3.0]).std == 1.0  # ddof 0, by hand
