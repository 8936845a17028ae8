"""The bridged score in process (`grading.bridge`), against values worked out by hand from the
documented semantics (docs/bridge.md) and, for the interval, against an independent loop with
the same seed scheme (tests/grading/bridge_oracle.py).

The bridge below, per stratum and sign (N's verdict: n pairs, k with O = met):

| stratum            | sign | met: n, k | not: n, k |
|--------------------|------|-----------|-----------|
| cluster:c1         | +    | 30, 21    | 29, 4     |
| axis:accuracy      | +    | 31, 25    | 40, 6     |
| none               | +    | 2, 1      | 1, 0      |
| axis:accuracy      | -    | 10, 7     | 12, 1     |
| axis:completeness  | -    | 35, 30    | 3, 0      |

Pooled (n < 30): positive met 63, 47; positive not 70, 10; negative met 45, 37; negative not 15, 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pytest

from healthbench_exp.core.bridged import BridgeStratum
from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.bridge.calibration import Calibration
from healthbench_exp.grading.bridge.cells import Pair, RunRow, stratum_of
from healthbench_exp.grading.bridge.estimate import Bridging, bridge_run
from healthbench_exp.grading.bridge.rates import jeffreys
from tests.by_hand import interval_lists
from tests.grading.bridge_oracle import bootstrap, make_pairs, metrics_of, q_of

CAL = Calibration()


def run_q(rows: Sequence[RunRow], pairs: Sequence[Pair], samples: int, seed: int) -> Bridging:
    """`bridge_run` with the calibration estimator (q)."""
    return bridge_run(rows, pairs, samples, seed, CAL)


PAIRS = [
    *make_pairs("cluster:c1", [1, 5], True, 30, 21),
    *make_pairs("cluster:c1", [5, 1], False, 29, 4),
    *make_pairs("axis:accuracy", [1, 3, 7], True, 31, 25),
    *make_pairs("axis:accuracy", [3, 1], False, 40, 6),
    *make_pairs("none", [2], True, 2, 1),
    *make_pairs("none", [1], False, 1, 0),
    *make_pairs("axis:accuracy", [-2, -1], True, 10, 7),
    *make_pairs("axis:accuracy", [-1], False, 12, 1),
    *make_pairs("axis:completeness", [-1, -3], True, 35, 30),
    *make_pairs("axis:completeness", [-4], False, 3, 0),
]
POS_MET, POS_NOT = 47.5 / 64, 10.5 / 71  # pooled
NEG_MET, NEG_NOT = 37.5 / 46, 1.5 / 16


def crit(points: float, *tags: str) -> Criterion:
    return Criterion(f"c{points}{tags}", points, tags)


A = crit(5, "axis:accuracy", "cluster:c1", "level:cluster")  # met: q 21.5 / 31 (n = 30 exactly)
B = crit(3, "axis:accuracy", "level:example")  # not met: 6.5 / 41
C = crit(-2, "axis:accuracy", "level:example")  # not met: pooled negative not
D = crit(4, "axis:completeness", "level:example")  # ungraded
E = crit(1, "level:example")  # met: stratum none, pooled positive met
F = crit(10, "axis:completeness", "level:example")  # met: a stratum the bridge never saw: pooled
G = crit(-5, "axis:completeness", "level:example")  # met: 30.5 / 36
H = crit(-4, "axis:accuracy", "level:example")  # not met: pooled negative not
J = crit(-1, "axis:accuracy", "level:example")  # met: pooled negative met
ROW1 = RunRow(["theme:t1"], [A, B, C, D, E], [True, False, False, None, True])
# H first: its tag (negative points only here) is skipped and the tags after it still count
ROW2 = RunRow(["theme:t2"], [H, F, G, J], [False, True, True, True])
ROW3 = RunRow(["theme:t3"], [D, H], [None, True])  # no graded positive points: not scored
S1 = (5 * 21.5 / 31 + 3 * 6.5 / 41 - 2 * NEG_NOT + 1 * POS_MET) / 9
S2 = (10 * POS_MET - 5 * 30.5 / 36 - 4 * NEG_NOT - NEG_MET) / 10


def test_the_stratum_is_the_cluster_tag_then_the_axis_tag_then_none() -> None:
    assert stratum_of(["level:cluster", "axis:accuracy", "cluster:c9"]) == "cluster:c9"
    assert stratum_of(["axis:accuracy", "cluster:c9"]) == "cluster:c9"
    assert stratum_of(["level:example", "axis:completeness"]) == "axis:completeness"
    assert stratum_of(["level:cluster", "theme:axis:x"]) == "none"
    assert stratum_of([]) == "none"
    assert jeffreys(3, 10) == 3.5 / 11
    assert jeffreys(0, 0) == 0.5


def test_the_strata_table_pools_cells_below_30_pairs_by_sign() -> None:
    result = run_q([ROW1, ROW2], PAIRS, 0, 1)
    assert result.strata == [
        BridgeStratum("axis:accuracy", "positive", 31, 40, 25.5 / 32, 6.5 / 41, []),
        BridgeStratum("axis:completeness", "positive", 0, 0, POS_MET, POS_NOT, ["met", "not"]),
        BridgeStratum("cluster:c1", "positive", 30, 29, 21.5 / 31, POS_NOT, ["not"]),
        BridgeStratum("none", "positive", 2, 1, POS_MET, POS_NOT, ["met", "not"]),
        BridgeStratum("axis:accuracy", "negative", 10, 12, NEG_MET, NEG_NOT, ["met", "not"]),
        BridgeStratum("axis:completeness", "negative", 35, 3, 30.5 / 36, NEG_NOT, ["not"]),
        BridgeStratum("pooled", "positive", 63, 70, POS_MET, POS_NOT),
        BridgeStratum("pooled", "negative", 45, 15, NEG_MET, NEG_NOT),
    ]
    # q per cell: 2 * stratum + verdict, strata in the table's order
    expected = [6.5 / 41, 25.5 / 32, POS_NOT, POS_MET, POS_NOT, 21.5 / 31, POS_NOT, POS_MET]
    expected += [NEG_NOT, NEG_MET, NEG_NOT, 30.5 / 36]
    assert result.q == pytest.approx(expected, rel=1e-12)
    assert [result.cells.cell(s, p, v) for s, p, v in [("none", True, True)]] == [7]
    assert result.cells.cell("axis:completeness", False, False) == 10


def test_exactly_30_pairs_is_not_pooled_and_29_is() -> None:
    base = make_pairs("axis:accuracy", [4], True, 40, 10)
    for n, own in ((30, True), (29, False)):
        pairs = [*base, *make_pairs("axis:context_awareness", [4], True, n, n)]
        row = run_q([], pairs, 0, 1).strata[1]
        assert row.stratum == "axis:context_awareness"
        pooled = (10 + n + 0.5) / (40 + n + 1)
        expected = ((n + 0.5) / (n + 1), ["not"]) if own else (pooled, ["met", "not"])
        assert (row.q_met, row.pooled) == (pytest.approx(expected[0], rel=1e-12), expected[1])


def test_the_bridged_example_score_weights_each_graded_criterion_by_its_q() -> None:
    result = run_q([ROW1, ROW2, ROW3], PAIRS, 0, 1)
    expected = {
        "bridged_score": (S1 + S2) / 2,
        "bridged:axis:accuracy": (5 * 21.5 / 31 + 3 * 6.5 / 41 - 2 * NEG_NOT) / 8,  # row 1
        "bridged:axis:completeness": (10 * POS_MET - 5 * 30.5 / 36) / 10,  # row 2
        "bridged:cluster:c1": 21.5 / 31,
        "bridged:level:cluster": 21.5 / 31,
        "bridged:level:example": ((3 * 6.5 / 41 - 2 * NEG_NOT + POS_MET) / 4 + S2) / 2,
        "bridged:theme:t1": S1,
        "bridged:theme:t2": S2,
    }
    # bridged_score first, then by name
    assert list(result.metrics) == ["bridged_score", *sorted(set(expected) - {"bridged_score"})]
    assert result.metrics == pytest.approx(expected, rel=1e-12)
    assert result.metrics == pytest.approx(metrics_of([ROW1, ROW2, ROW3], q_of(PAIRS), None))
    assert result.ci == dict.fromkeys(expected)  # no resamples: no interval


def test_the_mean_is_clipped_after_averaging_not_per_row() -> None:
    pairs = [
        *make_pairs("axis:accuracy", [1], True, 40, 39),
        *make_pairs("axis:x", [-1], True, 40, 39),
    ]
    q = 39.5 / 41  # both cells
    high = RunRow(["theme:a"], [crit(2, "axis:accuracy")], [True])  # q
    low = RunRow(["theme:a"], [crit(2, "axis:accuracy"), crit(-3, "axis:x")], [True, True])
    result = run_q([high, low], pairs, 0, 1).metrics  # low: (2q - 3q) / 2 = -q / 2
    assert result["bridged_score"] == pytest.approx((q - q / 2) / 2, rel=1e-12)  # not q / 2
    assert "bridged:axis:x" not in result  # negative points only: skipped
    assert run_q([low], pairs, 0, 1).metrics["bridged_score"] == 0.0


def test_the_interval_matches_an_independent_loop_with_the_same_seeds() -> None:
    k = crit(-1, "level:example")  # the last cell (negative, none): in no pair
    row4 = RunRow(["theme:t1"], [B, E, k], [True, False, True])
    rows = [ROW1, ROW2, ROW3, row4]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an undrawn metric is NaN quietly, not with a warning
        result = run_q(rows, PAIRS, 60, 11)
    ci, draws = bootstrap(rows, PAIRS, 60, 11)
    held = interval_lists(result.ci)
    assert set(held) == set(ci)
    for name, interval in ci.items():
        assert held[name] == pytest.approx(interval, rel=1e-12), name
    assert result.q_draws.shape == (60, 14)
    for i, (stratum, positive) in enumerate(result.cells.strata):  # the order tested above
        for verdict in (False, True):
            expected = [q(stratum, positive, verdict) for _, q in draws]
            assert result.q_draws[:, 2 * i + verdict] == pytest.approx(expected, rel=1e-12)
    # some resample left theme:t2's one row out, and the interval is over the others
    assert any(np.isnan(metrics["bridged:theme:t2"]) for metrics, _ in draws)


def test_a_run_with_no_scored_row_has_no_bridged_score() -> None:
    result = run_q([ROW3], PAIRS, 20, 3)
    assert result.metrics == {"bridged_score": None}
    assert result.ci == {"bridged_score": None}


def test_a_single_row_interval_comes_from_the_bridge_alone() -> None:
    rows = [RunRow([], [A], [True])]
    result = run_q(rows, PAIRS, 40, 5)
    ci, _ = bootstrap(rows, PAIRS, 40, 5)
    held = interval_lists(result.ci)["bridged_score"]
    assert held == pytest.approx(ci["bridged_score"], rel=1e-12)
    low, high = held  # type: ignore[misc]
    assert low < 21.5 / 31 < high


def test_a_row_or_tag_with_one_positive_point_is_scored() -> None:
    one = RunRow(["theme:one"], [crit(1, "axis:accuracy", "level:cluster")], [True])
    metrics = run_q([ROW1, one], PAIRS, 0, 1).metrics
    assert metrics["bridged:theme:one"] == pytest.approx(25.5 / 32, rel=1e-12)
    assert metrics["bridged:level:cluster"] == pytest.approx((21.5 / 31 + 25.5 / 32) / 2)
    assert metrics["bridged_score"] == pytest.approx((S1 + 25.5 / 32) / 2, rel=1e-12)


def test_verdicts_must_align_with_the_criteria() -> None:
    with pytest.raises(ValueError):
        run_q([RunRow([], [A, B], [True])], PAIRS, 0, 1)


def test_an_empty_bridge_gives_every_cell_one_half() -> None:
    result = run_q([ROW1], [], 20, 3)
    score = (5 + 3 - 2 + 1) * 0.5 / 9  # every graded criterion weighted 0.5
    assert result.metrics["bridged_score"] == pytest.approx(score, rel=1e-12)
    assert interval_lists(result.ci)["bridged_score"] == pytest.approx([score, score], rel=1e-12)
    # three rows, few resamples: the interval comes from the rows' draws alone, seed for seed
    rows = [ROW1, ROW2, RunRow([], [B], [True])]
    ci, _ = bootstrap(rows, [], 9, 4)
    drawn = interval_lists(run_q(rows, [], 9, 4).ci)
    assert drawn["bridged_score"] == pytest.approx(ci["bridged_score"])
    assert (result.q_draws == 0.5).all()
    assert [(s.n_met, s.n_not, s.pooled) for s in result.strata[:-2]] == [
        (0, 0, ["met", "not"])
    ] * 5  # cluster:c1, axis:accuracy, axis:completeness, none (+); axis:accuracy (-)


def test_a_bridge_of_negative_criteria_only_has_one_pooled_row() -> None:
    pairs = make_pairs("axis:a", [-1], True, 5, 2)
    assert run_q([], pairs, 0, 1).strata == [
        BridgeStratum("axis:a", "negative", 5, 0, 2.5 / 6, 0.5, ["met", "not"]),
        BridgeStratum("pooled", "negative", 5, 0, 2.5 / 6, 0.5),
    ]


def test_a_criterion_with_zero_points_changes_no_score_and_breaks_nothing() -> None:
    """The data loader accepts 0 points; such a criterion adds nothing to any sum."""
    zero = crit(0, "axis:instruction_following", "level:example")
    with_zero = RunRow(ROW1.example_tags, [*ROW1.criteria, zero], [*ROW1.verdicts, True])
    assert run_q([with_zero, ROW2], PAIRS, 0, 1).metrics == pytest.approx(
        run_q([ROW1, ROW2], PAIRS, 0, 1).metrics, rel=1e-12
    )
    pairs = [*PAIRS, Pair(0, "z", "axis:instruction_following", 0, True, True)]
    strata = run_q([ROW1], pairs, 5, 1).strata  # its stratum: in no run criterion
    assert sum(s.n_met + s.n_not for s in strata if s.stratum != "pooled") == len(pairs)
