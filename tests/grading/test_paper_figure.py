"""The paper's criterion-mean balanced F1 beside simple-evals' pooled figure (SPEC 7.2), for the
judge and for physicians, each with a seeded bootstrap interval over rows within category."""

from __future__ import annotations

import numpy as np
import pytest

from healthbench_exp.grading.agreement import average_over_raters, leave_one_out, pairwise_metrics
from healthbench_exp.grading.paper_figure import (
    MODEL_CRITERION_MEAN,
    MODEL_POOLED,
    PHYSICIAN_CRITERION_MEAN,
    PHYSICIAN_POOLED,
    _nanmean,
    balanced_f1,
    paper_figures,
)
from tests.by_hand import percentile_by_hand

# Category a: pairs (judge, physician) (T,T) (T,T) (F,F) (F,T): tt=2 tf=0 ft=1 ff=1
#   pos: precision 2/2, recall 2/3 -> F1 0.8; neg: precision 1/2, recall 1/1 -> F1 2/3
#   balanced 0.7333
# Category b: (T,T) (F,T) (F,F): tt=1 ft=1 ff=1
#   pos: precision 1, recall 1/2 -> 2/3; neg: precision 1/2, recall 1 -> 2/3; balanced 2/3
# criterion mean: (0.7333 + 0.6667) / 2 = 0.7
# pooled: tt=3 tf=0 ft=2 ff=2: pos precision 1, recall 3/5 -> 0.75; neg precision 2/4,
#   recall 2/2 -> 2/3; balanced 0.708333
JUDGE = [True, False, True, False, False]
LABELS = [[True, True], [False, True], [True], [True], [False]]
IDS = [["p1", "p2"], ["p1", "p2"], ["p3"], ["p3"], ["p3"]]
CATS = ["a", "a", "b", "b", "b"]


def test_the_judges_two_figures_by_hand() -> None:
    figures = paper_figures(JUDGE, LABELS, IDS, CATS, samples=50, seed=0)
    assert figures[MODEL_CRITERION_MEAN] == pytest.approx(0.7)
    assert figures[MODEL_POOLED] == pytest.approx((0.75 + 2 / 3) / 2)
    reference = pairwise_metrics(JUDGE, LABELS, CATS, "model")
    assert figures[MODEL_POOLED] == pytest.approx(reference["pairwise_model_f1_balanced"].value)


def test_an_ungraded_row_is_left_out_of_the_judges_figures() -> None:
    with_ungraded = paper_figures([*JUDGE, None], [*LABELS, [True]], [*IDS, ["p3"]], [*CATS, "b"])
    assert with_ungraded[MODEL_CRITERION_MEAN] == pytest.approx(0.7)


# Physicians, leave one out, in category x (three physicians on every row):
#   row 1: p1 T, p2 T, p3 F;  row 2: p1 F, p2 F, p3 F;  row 3: p1 T, p2 F, p3 T
# p1 against the others: (T,T)(T,F)(F,F)(F,F)(T,F)(T,T): tt=2 tf=2 ft=0 ff=2
#   pos: precision 2/4, recall 2/2 -> 2/3; neg: precision 2/2, recall 2/4 -> 2/3; balanced 2/3
# p2: (T,T)(T,F)(F,F)(F,F)(F,T)(F,T): tt=1 tf=1 ft=2 ff=2
#   pos: precision 1/2, recall 1/3 -> 0.4; neg: precision 2/4, recall 2/3 -> 4/7; balanced 0.4857
# p3: (F,T)(F,T)(F,F)(F,F)(T,T)(T,F): tt=1 tf=1 ft=2 ff=2 -> 0.4857 as p2
# category x: mean over physicians (2/3 + 0.4857 + 0.4857) / 3 = 0.5460
# Category y: one row, p1 T, p2 F: each (T,F) or (F,T): F1 pos 0 and neg undefined -> none
# criterion mean over categories with a defined value: 0.5460
PHYS_LABELS = [[True, True, False], [False, False, False], [True, False, True], [True, False]]
PHYS_IDS = [["p1", "p2", "p3"]] * 3 + [["p1", "p2"]]
PHYS_CATS = ["x", "x", "x", "y"]


def test_the_physicians_criterion_mean_by_hand() -> None:
    figures = paper_figures([None] * 4, PHYS_LABELS, PHYS_IDS, PHYS_CATS, samples=20)
    by_hand = (2 / 3 + 2 * (0.4 + 4 / 7) / 2) / 3
    assert figures[PHYSICIAN_CRITERION_MEAN] == pytest.approx(by_hand)
    assert figures[MODEL_POOLED] is None and figures[f"{MODEL_POOLED}:ci_low"] is None
    # the pooled physician figure: simple-evals' per-physician metrics, averaged over physicians
    per_physician = leave_one_out(PHYS_LABELS, PHYS_IDS, PHYS_CATS)
    pooled = average_over_raters(per_physician)["pairwise_physician_f1_balanced"].mean
    assert figures[PHYSICIAN_POOLED] == pytest.approx(pooled)


def test_the_interval_is_seeded_and_collapses_on_identical_rows() -> None:
    one = paper_figures(JUDGE, LABELS, IDS, CATS, samples=200, seed=3)
    assert one == paper_figures(JUDGE, LABELS, IDS, CATS, samples=200, seed=3)
    for name in (MODEL_POOLED, MODEL_CRITERION_MEAN):
        assert one[f"{name}:ci_low"] <= one[name] <= one[f"{name}:ci_high"]
    same = paper_figures([True, True, False, False], [[True]] * 2 + [[False]] * 2, [["p"]] * 4,
                         ["a", "a", "b", "b"], samples=100)  # fmt: skip
    # every resample of a category repeats its one kind of row: no spread
    assert same[f"{MODEL_POOLED}:ci_low"] == same[f"{MODEL_POOLED}:ci_high"] == same[MODEL_POOLED]


def pooled_f1_by_hand(pairs: list[tuple[bool, bool]]) -> float | None:
    """Balanced F1 of (judge, physician) pairs: the mean of the met and the unmet class's F1,
    each 2PR / (P + R) (0 when P = R = 0; undefined without pairs on a side)."""
    scores = []
    for cls in (True, False):
        agree = sum(1 for j, p in pairs if j == cls and p == cls)
        own = sum(1 for j, _ in pairs if j == cls)
        other = sum(1 for _, p in pairs if p == cls)
        if not own or not other:
            return None
        precision, recall = agree / own, agree / other
        scores.append(
            0.0 if precision == recall == 0 else 2 * precision * recall / (precision + recall)
        )
    return sum(scores) / 2


def pooled_interval_by_hand(
    judge: list[bool], labels: list[list[bool]], cats: list[str], samples: int, seed: int
) -> tuple[float, float]:
    """The judge's pooled figure's interval written out: per resample, each category's rows
    drawn with replacement (position j of the rows listed category by category draws row
    floor(u_j * size) of its category, u from numpy's default_rng), every drawn row's (judge,
    physician) pairs pooled; the 2.5th and 97.5th percentiles (linear interpolation)."""
    rows = sorted(range(len(cats)), key=lambda i: cats[i])  # category by category, stable
    by_cat = {c: [i for i in rows if cats[i] == c] for c in sorted(set(cats))}
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(samples):
        u = rng.random(len(rows))
        pairs = []
        for j, row in enumerate(rows):
            members = by_cat[cats[row]]
            drawn = members[int(np.floor(u[j] * len(members)))]
            pairs += [(judge[drawn], label) for label in labels[drawn]]
        value = pooled_f1_by_hand(pairs)
        if value is not None:
            values.append(value)
    values.sort()

    return percentile_by_hand(values, 2.5), percentile_by_hand(values, 97.5)


def test_the_judges_pooled_interval_equals_a_loop_over_resamples() -> None:
    # three categories, the rows of "c" listed first (the spans must follow the categories)
    judge = [False, True, *JUDGE, True]
    labels = [[False, True], [True], *LABELS, [False]]
    cats = ["c", "c", *CATS, "c"]
    ids = [["p1", "p2"], ["p1"], *IDS, ["p3"]]
    figures = paper_figures(judge, labels, ids, cats, samples=300, seed=5)
    low, high = pooled_interval_by_hand(judge, labels, cats, 300, 5)
    assert figures[f"{MODEL_POOLED}:ci_low"] == pytest.approx(low, abs=1e-12)
    assert figures[f"{MODEL_POOLED}:ci_high"] == pytest.approx(high, abs=1e-12)
    assert low < high


def test_balanced_f1_edges_and_the_mean_per_row() -> None:
    # (tt, tf, ft, ff): never agreeing on either class is 0, not undefined; no judge "met" at all
    # leaves the met class's precision undefined
    counts = np.array([[0, 2, 3, 0], [0, 0, 2, 1], [2, 0, 0, 2]], dtype=float)
    result = balanced_f1(counts)
    assert result[0] == 0.0 and np.isnan(result[1]) and result[2] == 1.0
    values = np.array([[1.0, np.nan], [3.0, 5.0], [np.nan, np.nan]])
    means = _nanmean(values, axis=1)
    assert means[0] == 1.0 and means[1] == 4.0 and np.isnan(means[2])
    assert _nanmean(values) == pytest.approx(3.0)
    with pytest.raises(ValueError):  # rows of labels, ids and categories must line up
        paper_figures(JUDGE, LABELS, IDS, CATS[:-1])


def test_the_physicians_criterion_mean_weighs_each_category_once() -> None:
    # PHYS_* plus category z: two rows on which p1 and p2 agree (T, T then F, F): each
    # physician's balanced F1 there is 1; x's mean is 0.5460 (above), y has none: the criterion
    # mean is (0.5460 + 1) / 2, not the mean over the five (category, physician) values
    labels = [*PHYS_LABELS, [True, True], [False, False]]
    ids = [*PHYS_IDS, ["p1", "p2"], ["p1", "p2"]]
    cats = [*PHYS_CATS, "z", "z"]
    figures = paper_figures([None] * 6, labels, ids, cats, samples=20)
    x = (2 / 3 + 2 * (0.4 + 4 / 7) / 2) / 3
    assert figures[PHYSICIAN_CRITERION_MEAN] == pytest.approx((x + 1.0) / 2)


def test_the_default_interval_is_1000_resamples_seeded_0() -> None:
    assert paper_figures(JUDGE, LABELS, IDS, CATS) == paper_figures(
        JUDGE, LABELS, IDS, CATS, samples=1000, seed=0
    )
