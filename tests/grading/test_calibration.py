"""Calibrated consensus rates (SPEC 7.3): the math, on small lists computed by hand."""

from __future__ import annotations

import pytest

from healthbench_exp.grading.calibration import (
    calibrate,
    checked_rogan_gladen,
    majority,
    not_corrected_reason,
    observed_error_rates,
    usable_pairs,
)


def pairs(pos_met: int, pos_unmet: int, neg_met: int, neg_unmet: int) -> list[tuple[bool, bool]]:
    """(verdict, majority) pairs: majority-positive rows the judge said met / not met, then
    majority-negative ones."""
    return (
        [(True, True)] * pos_met
        + [(False, True)] * pos_unmet
        + [(True, False)] * neg_met
        + [(False, False)] * neg_unmet
    )


def test_majority_leaves_ties_out() -> None:
    assert majority([True, True, False]) is True
    assert majority([False, True, False]) is False
    assert majority([True, False]) is None
    assert majority([True, True, False, False]) is None
    assert majority([True]) is True


def test_usable_pairs_drop_ungraded_rows_and_ties() -> None:
    verdicts = [True, None, False, True, False]
    labels = [[True, True], [True, True], [True, False], [False, False, True], [True]]
    assert usable_pairs(verdicts, labels) == [(True, True), (True, False), (False, True)]


def test_sensitivity_and_specificity_by_hand() -> None:
    rates = observed_error_rates(pairs(20, 5, 4, 16))  # Se = 20/25, Sp = 16/20
    assert rates.sensitivity == pytest.approx(0.8)
    assert rates.specificity == pytest.approx(0.8)
    assert (rates.n_pos, rates.n_neg) == (25, 20)
    only_positive = observed_error_rates(pairs(3, 1, 0, 0))
    assert only_positive.sensitivity == 0.75 and only_positive.specificity is None


def test_rogan_gladen_by_hand_and_clipped() -> None:
    # Se = Sp = 0.8: corrected = (p + 0.8 - 1) / 0.6
    assert checked_rogan_gladen(0.5, 0.8, 0.8) == pytest.approx(0.5)
    assert checked_rogan_gladen(0.35, 0.8, 0.8) == pytest.approx(0.25)
    assert checked_rogan_gladen(0.1, 0.8, 0.8) == 0.0  # -0.1 / 0.6, clipped
    assert checked_rogan_gladen(0.95, 0.8, 0.8) == 1.0  # 0.75 / 0.6, clipped
    # Se 0.9, Sp 0.7: (0.4 + 0.7 - 1) / 0.6 = 1/6
    assert checked_rogan_gladen(0.4, 0.9, 0.7) == pytest.approx(1 / 6)
    with pytest.raises(ValueError, match="no correction"):
        checked_rogan_gladen(0.4, 0.5, 0.5)


def test_reasons_for_not_correcting() -> None:
    assert not_corrected_reason(observed_error_rates(pairs(20, 5, 4, 16))) is None
    assert not_corrected_reason(observed_error_rates(pairs(15, 4, 4, 16))) == "n_pos 19 < 20"
    rates = observed_error_rates(pairs(0, 0, 0, 3))
    assert not_corrected_reason(rates) == "n_pos 0 < 20; n_neg 3 < 20"
    # Se 12/20 + Sp 10/20 - 1 = 0.1 exactly: at the threshold, not corrected
    rates = observed_error_rates(pairs(12, 8, 10, 10))
    assert not_corrected_reason(rates) == "Se + Sp - 1 = 0.100 <= 0.1"
    assert not_corrected_reason(observed_error_rates(pairs(13, 7, 10, 10))) is None  # 0.15


def test_calibrate_one_category_by_hand() -> None:
    # eval: 10 examples, (met, graded) = 6 x (1, 2), 2 x (2, 2), 2 x (0, 2): p = 10/20
    examples = [(1, 2)] * 6 + [(2, 2)] * 2 + [(0, 2)] * 2
    rate = calibrate("cluster:x", examples, pairs(20, 5, 4, 16), 200, 0)
    assert rate.category == "cluster:x" and rate.n_eval == 20
    assert rate.observed == pytest.approx(0.5)
    assert (rate.sensitivity, rate.specificity) == (pytest.approx(0.8), pytest.approx(0.8))
    assert rate.corrected == pytest.approx(0.5)  # (0.5 + 0.8 - 1) / 0.6
    assert rate.reason is None
    assert rate.bootstrap is not None and rate.corrected is not None
    low, high = rate.bootstrap.interval.as_list()
    assert 0 <= low <= rate.corrected <= high <= 1 and low < high
    assert rate.bootstrap.estimate == rate.corrected and rate.bootstrap.std > 0
    assert rate.bootstrap.draws <= 200  # resamples without a corrected value are left out
    assert calibrate("cluster:x", examples, pairs(20, 5, 4, 16), 200, 0) == rate  # seeded
    other_seed = calibrate("cluster:x", examples, pairs(20, 5, 4, 16), 200, 1)
    assert other_seed.bootstrap != rate.bootstrap
    # summary.json's row writes the interval flat, as `ci_low` / `ci_high`
    row = rate.record().to_dict()
    assert (row["corrected"], row["ci_low"], row["ci_high"]) == (rate.corrected, low, high)
    assert "bootstrap" not in row


def test_interval_collapses_when_nothing_varies() -> None:
    # a perfect judge (Se = Sp = 1 in every resample) and every example at p = 1/2
    rate = calibrate("cluster:x", [(1, 2)] * 5, pairs(20, 0, 0, 20), 100, 0)
    assert rate.corrected == pytest.approx(0.5) and rate.bootstrap is not None
    assert rate.bootstrap.interval.as_list() == pytest.approx([0.5, 0.5])
    assert rate.bootstrap.std == pytest.approx(0.0)


def test_not_corrected_categories_keep_their_rates_and_say_why() -> None:
    rate = calibrate("cluster:y", [(1, 1), (0, 1)], pairs(5, 5, 5, 5), 100, 0)
    assert rate.observed == 0.5 and rate.sensitivity == 0.5 and rate.specificity == 0.5
    assert rate.corrected is None and rate.bootstrap is None
    assert (rate.record().ci_low, rate.record().ci_high) == (None, None)
    assert rate.reason == "n_pos 10 < 20; n_neg 10 < 20; Se + Sp - 1 = 0.000 <= 0.1"
    nothing_graded = calibrate("cluster:z", [], pairs(20, 5, 4, 16), 100, 0)
    assert nothing_graded.observed is None and nothing_graded.n_eval == 0
    assert nothing_graded.reason == "no graded eval criterion"
