"""The chi-square test of equal rates between bridge sources (`grading.bridge.checks`): the
statistic by hand and the p-value against closed forms (df 1: erfc; even df: a finite sum)."""

from __future__ import annotations

import math

import pytest

from healthbench_exp.grading.bridge.checks import chi2_equal_rates, chi2_sf


def closed_form(x: float, df: int) -> float:
    """P(X >= x) for chi-square with df 1 (erfc) or an even df (Poisson sum)."""
    if df == 1:
        return math.erfc(math.sqrt(x / 2))
    half = x / 2
    return math.exp(-half) * sum(half**i / math.factorial(i) for i in range(df // 2))


@pytest.mark.parametrize("df", [1, 2, 4, 6, 10])
@pytest.mark.parametrize("x", [0.01, 0.5, 1.0, 3.0, 7.5, 20.0, 60.0])
def test_the_p_value_is_the_chi_square_tail(x: float, df: int) -> None:
    assert chi2_sf(x, df) == pytest.approx(closed_form(x, df), rel=1e-9, abs=1e-15)


def test_the_statistic_is_pearsons_over_the_sources_with_pairs() -> None:
    counts = [(40, 30), (60, 30), (0, 0), (20, 5)]  # (n, k); the empty source is left out
    rate = 65 / 120
    by_hand = sum(
        (o - e) ** 2 / e
        for n, k in counts
        if n
        for o, e in ((k, n * rate), (n - k, n * (1 - rate)))
    )
    assert chi2_equal_rates(counts) == (pytest.approx(by_hand), 2)
    assert chi2_equal_rates([(10, 10), (5, 5)]) == (0.0, 1)  # all met: nothing to test
    assert chi2_sf(0.0, 1) == 1.0
