"""The bridge's checks in process (`grading.bridge.checks`): the k-fold held-out error on a
bridge small enough to work out by hand and against an independent loop with the same seed
scheme, and the spread between sources with its chi-square test in closed form."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from healthbench_exp.core.bridged import HoldoutError, SourceCell
from healthbench_exp.grading.bridge.calibration import Calibration
from healthbench_exp.grading.bridge.cells import Cells, Pair, RunRow
from healthbench_exp.grading.bridge.checks import (
    chi2_equal_rates,
    chi2_sf,
    holdout_error,
    spread,
)
from healthbench_exp.grading.bridge.estimate import Bridging, bridge_run
from tests.grading.bridge_oracle import make_pairs, q_of

CAL = Calibration()


def run_q(rows: Sequence[RunRow], pairs: Sequence[Pair], samples: int, seed: int) -> Bridging:
    """`bridge_run` with the calibration estimator (q)."""
    return bridge_run(rows, pairs, samples, seed, CAL)


# three bridge examples; with 3 folds each is a fold of its own, whatever the shuffle
X = [Pair(0, "x", "axis:a", 3, True, True), Pair(0, "x", "axis:a", -2, False, False)]
Y = [
    Pair(0, "y", "axis:a", 4, True, False),
    Pair(0, "y", "axis:a", 1, False, True),
    Pair(0, "y", "axis:a", -1, True, True),
]
Z = [Pair(1, "x", "axis:b", -3, True, True)]  # no positive points: not scored
SMALL = [*X, *Y, *Z]
CELLS = Cells([("axis:a", True), ("axis:a", False), ("axis:b", False)])


def test_each_held_out_example_is_scored_with_q_from_the_other_folds() -> None:
    # x held out, q from y and z (all pooled: n < 30): positive met 0.5 / 2 (y's 4 points),
    # negative not 0.5 (no pair): bridged 3 * 0.25 - 2 * 0.5 = -0.25, own 3, error -3.25 / 3.
    # y held out, q from x and z: positive met 1.5 / 2, positive not 0.5, negative met 1.5 / 2
    # (z): bridged 4 * 0.75 + 0.5 - 0.75 = 2.75, own 1 - 1 = 0, error 2.75 / 5.
    x_error, y_error = -3.25 / 3, 2.75 / 5
    result = holdout_error(SMALL, CELLS, CAL, 400, 7, folds=3)
    assert (result.mean, result.folds, result.examples) == (
        pytest.approx((x_error + y_error) / 2, rel=1e-12),
        3,
        2,
    )
    # the resampled means of two errors: a quarter of them each error alone
    assert result.ci == pytest.approx([x_error, y_error], rel=1e-12)


def test_the_default_is_five_folds() -> None:
    assert holdout_error(SMALL, CELLS, CAL, 10, 7).folds == 5


def test_no_example_with_positive_points_has_no_error() -> None:
    assert holdout_error(Z, CELLS, CAL, 10, 7) == HoldoutError(None, None, 5, 0)
    assert holdout_error([], CELLS, CAL, 10, 7) == HoldoutError(None, None, 5, 0)


def holdout_by_hand(
    pairs: list[Pair], samples: int, seed: int, folds: int
) -> tuple[float, list[float], int]:
    """The k-fold check by plain loops: the examples sorted, shuffled with the seed, the i-th
    into fold i mod k; errors fold by fold; the interval's resamples seeded afresh."""
    examples = sorted({(p.source, p.example) for p in pairs})
    order = np.random.default_rng(seed).permutation(len(examples))
    fold = {examples[j]: i % folds for i, j in enumerate(order)}
    errors = []
    for f in range(folds):
        q = q_of([p for p in pairs if fold[(p.source, p.example)] != f])
        for key in examples:
            held = [p for p in pairs if (p.source, p.example) == key]
            den = sum(p.points for p in held if p.points > 0)
            if fold[key] != f or den <= 0:
                continue
            bridged = sum(p.points * q(p.stratum, p.points > 0, p.new) for p in held)
            errors.append((bridged - sum(p.points for p in held if p.old)) / den)
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(samples):
        drawn = rng.integers(0, len(errors), len(errors))
        means.append(sum(errors[i] for i in drawn) / len(errors))
    low, high = np.percentile(means, [2.5, 97.5])
    return sum(errors) / len(errors), [float(low), float(high)], len(errors)


def test_the_k_fold_error_matches_an_independent_loop() -> None:
    pairs = [
        *make_pairs("axis:a", [1, 5, 2], True, 70, 50),
        *make_pairs("axis:a", [3], False, 45, 8),
        *make_pairs("axis:b", [2, 1], True, 40, 11),
        *make_pairs("axis:b", [-3, -1], True, 33, 20),
        *make_pairs("axis:b", [-2], False, 12, 2),
        *make_pairs("axis:a", [4], True, 20, 5, source=1),
        *make_pairs("cluster:k", [-5], False, 9, 1, source=1),
    ]
    pairs += [  # first in order: an example without positive points, then one with a single point
        Pair(0, "0-negative", "axis:a", -1, True, False),
        Pair(0, "0-one-point", "axis:b", 1, True, True),
        Pair(0, "0-one-point", "axis:b", -2, False, False),
    ]
    cells = Cells({(p.stratum, p.points > 0) for p in pairs})
    for folds, seed in ((5, 3), (4, 8)):
        mean, ci, examples = holdout_by_hand(pairs, 50, seed, folds)
        result = holdout_error(pairs, cells, CAL, 50, seed, folds)
        assert result.mean == pytest.approx(mean, rel=1e-12)
        assert result.ci == pytest.approx(ci, rel=1e-12)
        assert (result.folds, result.examples) == (folds, examples)


# spread: three sources; cells (stratum, sign, N's verdict) with pairs from two or more of them
SOURCES = ["a", "b", "c"]
SPREAD_CELLS = Cells([("axis:x", True), ("axis:y", False)])
SPREAD_PAIRS = [
    *make_pairs("axis:x", [2], True, 20, 18, source=0),
    *make_pairs("axis:x", [1], True, 10, 2, source=1),
    *make_pairs("axis:x", [2], False, 5, 1, source=0),  # one source only: no spread cell
    *make_pairs("axis:y", [-1], True, 4, 2, source=0),
    *make_pairs("axis:y", [-2], True, 1, 1, source=1),
    *make_pairs("axis:y", [-1], True, 3, 0, source=2),
    *make_pairs("axis:y", [-1], False, 6, 0, source=1),
    *make_pairs("axis:y", [-1], False, 2, 0, source=2),
]


def draws(intervals: dict[int, tuple[float, float]]) -> np.ndarray:
    """q draws whose 2.5th and 97.5th percentiles per cell are the given (low, high)."""
    out = np.full((41, 4), 0.5)
    for cell, (low, high) in intervals.items():
        width = (high - low) / 0.95
        out[:, cell] = low - 0.025 * width + width * np.linspace(0, 1, 41)
    return out


def test_the_spread_between_sources_per_cell() -> None:
    narrow = draws({1: (0.31, 0.69), 3: (0.2125, 0.6875), 2: (0.0025, 0.0975)})
    x_met, y_met, y_not = spread(SPREAD_PAIRS, SPREAD_CELLS, narrow, SOURCES)
    # axis:x positive met: 2 x 2 table (18, 2 | 2, 8): N (ad - bc)^2 / (row and column sums)
    chi2 = 30 * (18 * 8 - 2 * 2) ** 2 / (20 * 10 * 20 * 10)
    assert (x_met.stratum, x_met.sign, x_met.verdict) == ("axis:x", "positive", "met")
    assert x_met.q == pytest.approx(20.5 / 31, rel=1e-12)
    assert x_met.ci == pytest.approx([0.31, 0.69], rel=1e-12)
    assert x_met.by_source == {
        "a": SourceCell(20, 18, pytest.approx(18.5 / 21, rel=1e-12)),  # type: ignore[arg-type]
        "b": SourceCell(10, 2, pytest.approx(2.5 / 11, rel=1e-12)),  # type: ignore[arg-type]
        "c": SourceCell(0, 0, None),
    }
    assert x_met.spread == pytest.approx(18.5 / 21 - 2.5 / 11, rel=1e-12)
    assert (x_met.chi2, x_met.df) == (pytest.approx(chi2, rel=1e-12), 1)
    assert x_met.p_value == pytest.approx(math.erfc(math.sqrt(chi2 / 2)), rel=1e-9)
    assert x_met.beyond_interval  # both sources outside, p < 0.05
    # axis:y negative met: rate 3 / 8; expected met 1.5, 0.375, 1.125 and not 2.5, 0.625, 1.875
    chi2 = 0.5**2 / 1.5 + 0.5**2 / 2.5 + 0.625**2 / 0.375 + 0.625**2 / 0.625 + 1.125 + 0.675
    assert (y_met.stratum, y_met.sign, y_met.verdict) == ("axis:y", "negative", "met")
    assert y_met.q == pytest.approx(3.5 / 9, rel=1e-12)
    assert y_met.spread == pytest.approx(1.5 / 2 - 0.5 / 4, rel=1e-12)
    assert (y_met.chi2, y_met.df) == (pytest.approx(chi2, rel=1e-12), 2)
    assert y_met.p_value == pytest.approx(math.exp(-chi2 / 2), rel=1e-9)  # df 2
    assert not y_met.beyond_interval  # sources outside, but p = 0.15
    # axis:y negative not: O never said met, so nothing to test
    assert (y_not.verdict, y_not.q, y_not.chi2, y_not.df, y_not.p_value) == (
        "not",
        pytest.approx(0.5 / 9, rel=1e-12),
        0.0,
        1,
        1.0,
    )
    assert y_not.by_source["a"] == SourceCell(0, 0, None)
    assert not y_not.beyond_interval


@pytest.mark.parametrize(
    ("interval", "beyond"),
    [
        ((0.2, 0.8), True),  # a (0.88) above, b (0.23) inside
        ((0.25, 0.9), True),  # b below, a inside
        ((0.1, 0.95), False),  # both inside: the test alone does not flag the cell
    ],
)
def test_a_cell_is_beyond_the_interval_where_a_source_q_is_outside_it(
    interval: tuple[float, float], beyond: bool
) -> None:
    (x_met, *_) = spread(SPREAD_PAIRS, SPREAD_CELLS, draws({1: interval}), SOURCES)
    assert x_met.ci == pytest.approx(list(interval), rel=1e-12)
    assert x_met.beyond_interval is beyond


def test_the_chi_square_statistic_edge_cases() -> None:
    # two sources, 2 x 2: N (ad - bc)^2 / (row and column sums)
    by_hand = 20 * 50**2 / (10 * 10 * 9 * 11)
    assert chi2_equal_rates([(10, 7), (10, 2)]) == (pytest.approx(by_hand), 1)
    # a source with one pair counts; one met pair in all
    assert chi2_equal_rates([(1, 1), (3, 0)]) == (pytest.approx(4 * 3**2 / (1 * 3 * 1 * 3)), 1)
    assert chi2_equal_rates([(6, 0), (4, 0)]) == (0.0, 1)  # no pair met: nothing to test
    assert chi2_equal_rates([(5, 2), (0, 0)]) == (0.0, 0)  # one source with pairs
    assert chi2_equal_rates([]) == (0.0, 0)
    assert chi2_sf(5.0, 0) == 1.0


def test_a_cell_with_pairs_from_one_source_is_left_out_and_the_next_kept() -> None:
    pairs = [
        *make_pairs("axis:z", [1], True, 4, 2, source=0),  # met: one source
        *make_pairs("axis:z", [1], False, 3, 1, source=0),
        *make_pairs("axis:z", [1], False, 2, 0, source=1),
    ]
    (cell,) = spread(pairs, Cells([("axis:z", True)]), np.full((5, 2), 0.5), ["a", "b"])
    assert (cell.stratum, cell.verdict, cell.q) == ("axis:z", "not", pytest.approx(1.5 / 6))


def test_a_source_q_on_the_interval_edge_is_inside_it() -> None:
    # 41 sorted draws: the 2.5th and 97.5th percentiles are the 2nd and the 40th, here b's and
    # a's q exactly
    q_draws = np.full((41, 4), 0.5)
    q_draws[:, 1] = [0.0, 2.5 / 11, *np.linspace(0.3, 0.8, 37), 18.5 / 21, 1.0]
    (x_met, *_) = spread(SPREAD_PAIRS, SPREAD_CELLS, q_draws, SOURCES)
    assert x_met.ci == [2.5 / 11, 18.5 / 21]
    assert x_met.p_value < 0.05
    assert not x_met.beyond_interval


def test_a_zero_point_pair_breaks_no_check() -> None:
    """The data loader accepts 0 points; such a pair has a cell like any other."""
    pairs = [*SMALL, Pair(0, "w", "axis:a", 0, True, True), Pair(1, "w", "axis:a", 0, True, False)]
    cells = Cells({(p.stratum, p.points > 0) for p in pairs})
    assert holdout_error(pairs, cells, CAL, 10, 7, folds=3).examples == 2
    # the spread counts each pair in the same cell as the bridge does
    bridged = run_q([], pairs, 5, 1)
    n = {}
    for row in bridged.strata:
        n[(row.stratum, row.sign, "met")], n[(row.stratum, row.sign, "not")] = row.n_met, row.n_not
    cells_ = spread(pairs, bridged.cells, bridged.q_draws, ["a", "b"])
    assert cells_
    for cell in cells_:
        total = sum(source.n for source in cell.by_source.values())
        assert total == n[(cell.stratum, cell.sign, cell.verdict)]
