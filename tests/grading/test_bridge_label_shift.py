"""The `label_shift` bridge in process (`grading.bridge.label_shift`), against numbers worked out
by hand from SPEC 7.5 (revised) and an independent loop (tests/grading/bridge_shift_oracle.py).

The bridge, per stratum and sign (O's verdict: n pairs, of them N agreeing):

| stratum         | sign | O met: n1, a | O not: n0, b | pooled: why                          |
|-----------------|------|--------------|--------------|--------------------------------------|
| axis:accuracy   | +    | 60, 50       | 50, 40       |                                      |
| axis:complete   | +    | 20, 15       | 20, 15       | both: few_o_met, few_o_not (< 30)    |
| cluster:c1      | +    | 40, 20       | 40, 20       | both: near_chance (J = 0), run       |
| axis:accuracy   | -    | 32, 30       | 63, 58       |                                      |

Pooled positive: n1 120, a 85; n0 110, b 75.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from healthbench_exp.core.bridged import Bridged, BridgeStratum, SpreadCell
from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.bridge.calibration import Calibration
from healthbench_exp.grading.bridge.cells import BridgeData, Cells, Pair, RunRow
from healthbench_exp.grading.bridge.estimate import BridgeRefused, Counts, Layout, bridge_run
from healthbench_exp.grading.bridge.label_shift import LabelShift, Shift
from healthbench_exp.grading.bridge.methods import ESTIMATORS, bridge_refusal
from healthbench_exp.grading.bridge.rates import rogan_gladen
from tests.by_hand import interval_lists
from tests.grading.bridge_oracle import make_pairs, metrics_of
from tests.grading.bridge_shift_oracle import shift_bootstrap, shift_q, shift_table

SHIFT = LabelShift()


def cell(
    stratum: str, points: list[float], o_met: tuple[int, int], o_not: tuple[int, int]
) -> list[Pair]:
    """Pairs of one stratum: (n1, a) with O met, a of them N met; (n0, b) with O not met, b of
    them N not met."""
    (n1, a), (n0, b) = o_met, o_not
    return [
        *make_pairs(stratum, points, True, a, a),  # O met, N met
        *[p for p in make_pairs(stratum, points, False, n1 - a, n1 - a)],  # O met, N not
        *make_pairs(stratum, points, True, n0 - b, 0),  # O not, N met
        *make_pairs(stratum, points, False, b, 0),  # O not, N not
    ]


PAIRS = [
    *cell("axis:accuracy", [1, 3], (60, 50), (50, 40)),
    *cell("axis:complete", [2], (20, 15), (20, 15)),
    *cell("cluster:c1", [5], (40, 20), (40, 20)),
    *cell("axis:accuracy", [-2, -1], (32, 30), (63, 58)),
]
SE_POOL, SP_POOL = 85.5 / 121, 75.5 / 111


def crit(points: float, *tags: str) -> Criterion:
    return Criterion(f"c{points}{tags}", points, tags)


ACC = crit(4, "axis:accuracy", "level:example")
COMP = crit(3, "axis:complete", "level:example")
C1 = crit(5, "axis:accuracy", "cluster:c1", "level:cluster")
NEG = crit(-3, "axis:accuracy", "level:example")
# 40 rows: accuracy, complete, negative in each; cluster c1 in every fourth (10: under 30)
ROWS = [
    RunRow(
        [f"theme:t{i % 3}"],
        [ACC, COMP, NEG, *([C1] if i % 4 == 0 else [])],
        [i % 5 != 0, i % 2 == 0, i % 7 == 0, *([i % 8 == 0] if i % 4 == 0 else [])],
    )
    for i in range(40)
]


def pi_w(se: float, sp: float, m: float) -> tuple[float, float, float]:
    pi = min(1.0, max(0.0, (m - (1 - sp)) / (se + sp - 1)))
    return (
        pi,
        se * pi / (se * pi + (1 - sp) * (1 - pi)),
        (1 - se) * pi / ((1 - se) * pi + sp * (1 - pi)),
    )


def test_the_strata_table_is_the_hand_computation() -> None:
    result = bridge_run(ROWS, PAIRS, 0, 1, SHIFT)
    rows = {(s.stratum, s.sign): s for s in result.strata}
    # accuracy +: its own rates; the run: 40 graded, met where i % 5 != 0 (32); m weighted as
    # the score weighs them (revision 2): 4 points over 12 in the 10 rows with C1 (8 met), over
    # 7 in the other 30 (24 met)
    se, sp = 50.5 / 61, 40.5 / 51
    m_acc = (8 * 4 / 12 + 24 * 4 / 7) / (10 * 4 / 12 + 30 * 4 / 7)
    pi, w_met, w_not = pi_w(se, sp, m_acc)
    assert rows[("axis:accuracy", "positive")] == BridgeStratum(
        "axis:accuracy",
        "positive",
        pooled=[],
        n_o_met=60,
        n_o_not=50,
        se=pytest.approx(se, abs=1e-12),
        sp=pytest.approx(sp, abs=1e-12),
        run_n=40,
        run_met=32,
        pi=pytest.approx(pi, abs=1e-12),
        w_met=pytest.approx(w_met, abs=1e-12),
        w_not=pytest.approx(w_not, abs=1e-12),
    )
    # complete +: too few pairs: the pooled rates with its own m (met in even rows: all 10 with
    # C1, 3 of 12 points; 10 of the other 30, 3 of 7)
    complete = rows[("axis:complete", "positive")]
    assert complete.pooled == ["few_o_met", "few_o_not"] and complete.pooled_rates == "both"
    assert (complete.n_o_met, complete.n_o_not) == (20, 20)
    assert (complete.se, complete.sp) == pytest.approx((SE_POOL, SP_POOL), abs=1e-12)
    m_comp = (10 * 3 / 12 + 10 * 3 / 7) / (10 * 3 / 12 + 30 * 3 / 7)
    assert complete.pi == pytest.approx(pi_w(SE_POOL, SP_POOL, m_comp)[0], abs=1e-12)
    assert (complete.run_n, complete.run_met) == (40, 20)  # the table's counts stay counts
    # c1: near chance (J 0 < 0.1), and 10 graded in the run: the pooled m of every positive
    # criterion, weighted (a row's positive weights sum to 1: the denominator is 40 rows);
    # C1 met in rows 0, 8, 16, 24, 32, 5 of 12 points
    c1 = rows[("cluster:c1", "positive")]
    assert c1.pooled == ["near_chance", "run"] and c1.run_n == 10 and c1.run_met == 5
    assert c1.pooled_rates == "both"
    pooled_m = (8 * 4 / 12 + 24 * 4 / 7 + 10 * 3 / 12 + 10 * 3 / 7 + 5 * 5 / 12) / 40
    assert (c1.pi, c1.w_met, c1.w_not) == pytest.approx(pi_w(SE_POOL, SP_POOL, pooled_m), abs=1e-12)
    assert rows[("pooled", "positive")].run_n == 90 and rows[("pooled", "positive")].n_o_met == 120
    assert rows[("pooled", "positive")].pi == pytest.approx(c1.pi, abs=1e-12)
    # negative accuracy: its own rates; met where i % 7 == 0 (6 of 40: rows 0 and 28 with C1,
    # 3 points of 12; rows 7, 14, 21, 35, 3 of 7)
    neg = rows[("axis:accuracy", "negative")]
    assert (neg.se, neg.sp) == pytest.approx((30.5 / 33, 58.5 / 64), abs=1e-12)
    m_neg = (2 * 3 / 12 + 4 * 3 / 7) / (10 * 3 / 12 + 30 * 3 / 7)
    assert neg.pi == pytest.approx(pi_w(30.5 / 33, 58.5 / 64, m_neg)[0], abs=1e-12)
    # every field as the independent loop has it
    oracle = shift_table(PAIRS, ROWS)
    for (stratum, sign), row in rows.items():
        o = oracle[(stratum, sign == "positive")]
        assert (row.n_o_met, row.n_o_not, row.run_n, row.run_met) == (
            o.n1,
            o.n0,
            o.run_n,
            o.run_met,
        )
        assert [row.se, row.sp, row.pi, row.w_met, row.w_not] == pytest.approx(
            [o.se, o.sp, o.pi, o.w_met, o.w_not], abs=1e-12
        )
        assert (row.pooled, row.pooled_rates) == (o.pooled, o.rates)
        assert row.q_met is None and row.n_met is None  # calibration's fields: not written
    assert set(rows) == {(s, "positive" if p else "negative") for s, p in oracle}


def test_bridged_score_is_the_hand_computation_to_1e_9() -> None:
    result = bridge_run(ROWS, PAIRS, 0, 1, SHIFT)
    expected = metrics_of(ROWS, shift_q(PAIRS, ROWS), None)
    assert result.metrics == pytest.approx(expected, abs=1e-9)
    # row 0 alone (ACC not met; COMP, NEG, C1 met): every run stratum has under 30 graded, so
    # each takes its sign's pooled m (positive: 3 + 5 of 12 points met, negative 1 of 1), se
    # and sp
    one = bridge_run(ROWS[:1], PAIRS, 0, 1, SHIFT)
    pos = pi_w(SE_POOL, SP_POOL, (3 + 5) / 12)
    neg = pi_w(30.5 / 33, 58.5 / 64, 1.0)  # the only negative stratum: pooled = own
    alone = (4 * pos[2] + 3 * pos[1] + 5 * pos[1] - 3 * neg[1]) / 12
    assert one.metrics["bridged_score"] == pytest.approx(alone, abs=1e-12)
    assert result.metrics["bridged:theme:t0"] == pytest.approx(
        metrics_of([r for r in ROWS if r.example_tags == ["theme:t0"]], shift_q(PAIRS, ROWS), None)[
            "bridged_score"
        ],
        abs=1e-12,
    )


def test_the_interval_matches_an_independent_loop_with_the_same_seeds() -> None:
    """Revision 2: the bridge's examples resampled (their pairs together), the estimate +- 1.96
    bootstrap standard deviations."""
    result = bridge_run(ROWS, PAIRS, 40, 9, SHIFT)
    ci = shift_bootstrap(ROWS, PAIRS, 40, 9)
    held = interval_lists(result.ci)
    assert set(held) == set(ci)
    for name, interval in ci.items():
        assert held[name] == pytest.approx(interval, rel=1e-9), name
    low, high = held["bridged_score"]  # type: ignore[misc]
    # symmetric about the estimate where no end is clipped
    assert (low + high) / 2 == pytest.approx(result.metrics["bridged_score"], abs=1e-12)
    assert low < result.metrics["bridged_score"] < high  # type: ignore[operator]


def test_label_shift_follows_the_runs_met_share_where_calibration_does_not() -> None:
    """The same judge, a run of a stronger model: N says met more often; label shift's pi and
    score rise with it, O's share recovered; calibration's weights stay the bridge's."""
    weak = [RunRow([], [ACC] * 40, [i % 4 == 0 for i in range(40)])]
    strong = [RunRow([], [ACC] * 40, [i % 4 != 0 for i in range(40)])]
    se, sp = 50.5 / 61, 40.5 / 51
    for rows, m in ((weak, 0.25), (strong, 0.75)):
        pi, w_met, w_not = pi_w(se, sp, m)
        score = bridge_run(rows, PAIRS, 0, 1, SHIFT).metrics["bridged_score"]
        assert score == pytest.approx(m * w_met + (1 - m) * w_not, abs=1e-12)
        assert score == pytest.approx(pi, abs=1e-12)  # the weights average back to pi
    cal_weak = bridge_run(weak, PAIRS, 0, 1, Calibration()).q
    cal_strong = bridge_run(strong, PAIRS, 0, 1, Calibration()).q
    assert (cal_weak == cal_strong).all()
    assert not (
        bridge_run(weak, PAIRS, 0, 1, SHIFT).q == bridge_run(strong, PAIRS, 0, 1, SHIFT).q
    ).all()


def test_pi_is_clipped_at_both_ends() -> None:
    se, sp = 50.5 / 61, 40.5 / 51
    below = [RunRow([], [ACC] * 40, [False] * 40)]  # m = 0 < 1 - sp
    above = [RunRow([], [ACC] * 40, [True] * 40)]  # m = 1 > se
    assert bridge_run(below, PAIRS, 0, 1, SHIFT).metrics["bridged_score"] == 0.0
    top = bridge_run(above, PAIRS, 0, 1, SHIFT)
    assert top.metrics["bridged_score"] == pytest.approx(1.0, abs=1e-12)
    assert top.strata[0].pi == 1.0 and top.strata[0].w_not == pytest.approx(1.0)
    assert (se, sp) == pytest.approx((top.strata[0].se, top.strata[0].sp))


def test_exactly_30_is_own_and_29_pooled_on_either_side() -> None:
    base = cell("axis:b", [1], (60, 50), (60, 50))
    for n1, n0, own in ((30, 30, True), (29, 30, False), (30, 29, False)):
        pairs = [*base, *cell("axis:x", [1], (n1, n1 - 3), (n0, n0 - 3))]
        rows = [RunRow([], [crit(1, "axis:x")] * 30, [True] * 10 + [False] * 20)]
        x = next(s for s in bridge_run(rows, pairs, 0, 1, SHIFT).strata if s.stratum == "axis:x")
        # revision 3: each rate pooled on its own count only
        assert x.pooled == ([] if own else ["few_o_met"] if n1 == 29 else ["few_o_not"])
        se_pooled = n1 == 29
        se = (50 + n1 - 3 + 0.5) / (60 + n1 + 1) if se_pooled else (n1 - 3 + 0.5) / (n1 + 1)
        sp_pooled = n0 == 29
        sp = (50 + n0 - 3 + 0.5) / (60 + n0 + 1) if sp_pooled else (n0 - 3 + 0.5) / (n0 + 1)
        assert (x.se, x.sp) == pytest.approx((se, sp), abs=1e-12)
    for n, pooled in ((30, []), (29, ["run"])):
        rows = [RunRow([], [crit(1, "axis:b")] * n + [crit(1, "axis:x")] * 40, [True] * (n + 40))]
        pairs = [*base, *cell("axis:x", [1], (60, 30), (60, 30))]
        b = bridge_run(rows, pairs, 0, 1, SHIFT).strata[0]
        assert (b.stratum, b.pooled, b.run_n) == ("axis:b", pooled, n)


def test_near_chance_is_j_below_0_1() -> None:
    """Revision 2: a stratum keeps its own rates down to J_s 0.1 (was 0.2)."""
    base = cell("axis:b", [1], (60, 50), (60, 50))
    rows = [RunRow([], [crit(1, "axis:x")] * 40, [True] * 20 + [False] * 20)]
    # J = (a + b + 1) / 61 - 1: 0.1148 with a + b = 67, 0.0984 with 66 (no count gives 0.1);
    # 0.1967 with 72: its own rates now (pooled in revision 1)
    cases = ((40, 27, False), (40, 26, True), (27, 40, False), (26, 40, True), (40, 32, False))
    for a, b, near in cases:
        pairs = [*base, *cell("axis:x", [1], (60, a), (60, b))]
        x = next(s for s in bridge_run(rows, pairs, 0, 1, SHIFT).strata if s.stratum == "axis:x")
        assert x.pooled == (["near_chance"] if near else [])
        assert x.pooled_rates == ("both" if near else None)
        own = ((a + 0.5) / 61, (b + 0.5) / 61)
        pooled = ((50 + a + 0.5) / 121, (50 + b + 0.5) / 121)
        assert (x.se, x.sp) == pytest.approx(pooled if near else own, abs=1e-12)


def test_a_pooled_j_below_0_2_is_refused_in_one_line() -> None:
    chance = cell("axis:x", [1], (60, 33), (60, 33))  # se = sp = 33.5 / 61: J = 0.098
    rows = [RunRow([], [crit(1, "axis:x")], [True])]
    with pytest.raises(BridgeRefused) as raised:
        bridge_run(rows, chance, 10, 1, SHIFT)
    message = str(raised.value)
    assert "\n" not in message and "positive" in message and "0.098" in message
    assert message.endswith("bridge.method=label_shift refuses this bridge")
    assert bridge_refusal(chance, "label_shift") == message
    assert bridge_refusal(chance, "calibration") is None
    assert bridge_run(rows, chance, 0, 1, Calibration()).metrics["bridged_score"] is not None
    # the negative sign alone near chance is refused too; both fine: not refused
    negative = cell("axis:y", [-1], (60, 33), (60, 33))
    assert "negative" in str(bridge_refusal([*PAIRS[:220], *negative], "label_shift"))
    assert bridge_refusal(PAIRS, "label_shift") is None
    # a sign the run has and the bridge never saw: se = sp = 0.5, refused when the run ends
    with pytest.raises(BridgeRefused, match="negative"):
        bridge_run([RunRow([], [ACC, crit(-1, "axis:z")], [True, True])], PAIRS[:220], 0, 1, SHIFT)
    # 0.2 exactly is not refused
    edge = cell("axis:x", [1], (60, 36), (60, 37))  # J = 74 / 61 - 1 = 0.2131
    assert bridge_refusal(edge, "label_shift") is None


def test_both_methods_are_registered_by_their_names() -> None:
    assert set(ESTIMATORS) == {"label_shift", "calibration"}
    assert all(ESTIMATORS[name].name == name for name in ESTIMATORS)


def test_rates_are_each_strata_own_se_and_sp() -> None:
    result = bridge_run([], PAIRS, 0, 1, SHIFT)
    cells = result.cells
    n, k = BridgeData.of(PAIRS, cells).counts()
    rates = SHIFT.rates(cells, Counts(n, k, np.zeros(len(n)), np.zeros(len(n))))
    expected = {
        ("axis:accuracy", True): (50.5 / 61, 40.5 / 51),
        ("axis:complete", True): (15.5 / 21, 15.5 / 21),
        ("cluster:c1", True): (20.5 / 41, 20.5 / 41),
        ("axis:accuracy", False): (30.5 / 33, 58.5 / 64),
    }
    for (stratum, positive), (se, sp) in expected.items():
        assert rates[cells.cell(stratum, positive, True)] == pytest.approx(se, abs=1e-12)
        assert rates[cells.cell(stratum, positive, False)] == pytest.approx(sp, abs=1e-12)


def test_the_estimators_take_a_stack_of_resamples_row_by_row() -> None:
    """The study passes many resamples at once (a leading axis): each row as alone."""
    result = bridge_run(ROWS, PAIRS, 0, 1, SHIFT)
    cells = result.cells
    n, k = BridgeData.of(PAIRS, cells).counts()
    rng = np.random.default_rng(0)
    layout = Layout.of(ROWS, cells)
    run, run_weight = layout.run_counts(), layout.run_weights()
    stack = [
        Counts(n * f, np.round(k * f), np.round(run * g), run_weight * g)
        for f, g in zip(rng.uniform(0.5, 1.5, 4), rng.uniform(0.2, 1.5, 4), strict=True)
    ]
    fields = ("n", "k", "run", "run_weight")
    both = Counts(*(np.stack([getattr(c, x) for c in stack]) for x in fields))
    for estimator in (SHIFT, Calibration()):
        weights = estimator.weights(cells, both)
        rates = estimator.rates(cells, both)
        for i, one in enumerate(stack):
            assert weights[i] == pytest.approx(estimator.weights(cells, one), abs=1e-12)
            assert rates[i] == pytest.approx(estimator.rates(cells, one), abs=1e-12)


def test_a_bridged_record_says_its_revision_and_an_old_one_reads_as_revision_1() -> None:
    """summary.json's `bridged.revision`: label_shift follows SPEC 7.5 revision 3, calibration
    the first bridge; a record written before the field existed reads as revision 1; a
    revision 2 record's strata (`pooled: ["bridge"]`, no `pooled_rates`) still read, as both
    rates pooled, and a revision 3 record's `pooled_rates` round-trips."""
    assert (ESTIMATORS["label_shift"].revision, ESTIMATORS["calibration"].revision) == (3, 1)
    assert bridge_run(ROWS, PAIRS, 0, 1, SHIFT).strata  # (the package's own record below)
    holdout = {"mean": None, "ci": None, "folds": 5}
    old = {"method": "label_shift", "bridge": ["r"], "old_judge": "o", "new_judge": "n"}
    old |= {"pairs": 0, "strata": [], "metrics": {}, "ci": {}, "holdout_error": holdout}
    record = Bridged.from_dict(old)
    assert record.revision == 1 and "revision" not in old
    rates = {"n_o_met": 20, "n_o_not": 90, "se": 0.7, "sp": 0.8, "run_n": 40, "run_met": 9}
    rates |= {"pi": 0.1, "w_met": 0.3, "w_not": 0.02}
    stratum_2 = {"stratum": "axis:a", "sign": "positive", "pooled": ["bridge"], **rates}
    own_2 = stratum_2 | {"stratum": "axis:b", "pooled": []}
    second = Bridged.from_dict(old | {"revision": 2, "strata": [stratum_2, own_2]})
    assert second.revision == 2 and [s.pooled_rates for s in second.strata] == [None, None]
    assert [s.rates_pooled for s in second.strata] == ["both", None]
    third = bridge_run(
        [RunRow([], [ACC] * 30 + [COMP] * 30, [True] * 60)],
        [*PAIRS, *cell("axis:complete", [2], (0, 0), (40, 30))],
        0,
        1,
        SHIFT,
    )
    complete = next(s for s in third.strata if s.stratum == "axis:complete")
    assert (complete.pooled, complete.pooled_rates) == (["few_o_met"], "se")
    written = complete.to_dict()
    assert written["pooled_rates"] == "se" and BridgeStratum.from_dict(written) == complete
    calibration = Calibration().strata(third.cells, _counts(third.cells))
    assert "pooled_rates" not in calibration[0].to_dict()


def _counts(cells: Cells) -> Counts:
    n, k = BridgeData.of(PAIRS, cells).counts()
    return Counts(n, k, np.zeros(len(n)), np.zeros(len(n)))


# revision 3's hand table: positive strata whose two counts fall on either side of 30
# | stratum     | O met: n1, a | O not: n0, b | own J | revision 3              | revision 2     |
# | axis:a      | 60, 50       | 50, 40       | 0.62  | own                     | own            |
# | axis:rare   | 20, 12       | 200, 190     | 0.54  | se pooled (few_o_met)   | both (bridge)  |
# | axis:mirror | 200, 180     | 10, 5        | 0.40  | sp pooled (few_o_not)   | both (bridge)  |
# | axis:lucky  | 10, 1        | 100, 90      | 0.03  | se pooled: J 0.71, kept | both (+ J 0.03)|
# | axis:odd    | 10, 1        | 100, 20      | -0.66 | se pooled: J 0.01: both | both (+ J<0)   |
# pooled: n1 300, a 244; n0 460, b 345
SPLIT = [
    *cell("axis:a", [1], (60, 50), (50, 40)),
    *cell("axis:rare", [1], (20, 12), (200, 190)),
    *cell("axis:mirror", [1], (200, 180), (10, 5)),
    *cell("axis:lucky", [1], (10, 1), (100, 90)),
    *cell("axis:odd", [1], (10, 1), (100, 20)),
]
SPLIT_ROWS = [
    RunRow(
        [],
        [crit(2, f"axis:{s}") for s in ("a", "rare", "mirror", "lucky", "odd")],
        [i % 2 == 0, i % 10 == 0, i % 10 != 0, i % 3 == 0, i % 4 == 0],
    )
    for i in range(40)
]


def test_each_rate_is_pooled_on_its_own_count_and_j_on_the_rates_chosen() -> None:
    """SPEC 7.5 revision 3 by hand: n1 < 30 pools se alone, n0 < 30 sp alone, J_s of the rates
    so chosen below 0.1 pools both; revision 2 (the study's comparison) pools both for either
    count and checks J on the stratum's own rates."""
    se_pool, sp_pool = 244.5 / 301, 345.5 / 461
    expected = {  # stratum: (se, sp, pooled, rates) in revision 3
        "axis:a": (50.5 / 61, 40.5 / 51, [], None),
        "axis:rare": (se_pool, 190.5 / 201, ["few_o_met"], "se"),
        "axis:mirror": (180.5 / 201, sp_pool, ["few_o_not"], "sp"),
        "axis:lucky": (se_pool, 90.5 / 101, ["few_o_met"], "se"),
        "axis:odd": (se_pool, sp_pool, ["few_o_met", "near_chance"], "both"),
    }
    # the J_s check on the rates chosen: lucky's own J is below 0.1, odd's chosen J is
    assert 1.5 / 11 + 90.5 / 101 - 1 < 0.1 < se_pool + 90.5 / 101 - 1
    assert se_pool + 20.5 / 101 - 1 < 0.1
    result = bridge_run(SPLIT_ROWS, SPLIT, 0, 1, SHIFT)
    got = {s.stratum: s for s in result.strata if s.stratum != "pooled"}
    for stratum, (se, sp, pooled, rates) in expected.items():
        row = got[stratum]
        assert (row.se, row.sp) == pytest.approx((se, sp), abs=1e-12), stratum
        assert (row.pooled, row.pooled_rates, row.rates_pooled) == (pooled, rates, rates)
    oracle = shift_table(SPLIT, SPLIT_ROWS)
    for row in result.strata:
        o = oracle[(row.stratum, True)]
        assert [row.se, row.sp, row.pi, row.w_met, row.w_not] == pytest.approx(
            [o.se, o.sp, o.pi, o.w_met, o.w_not], abs=1e-12
        )
        assert (row.pooled, row.pooled_rates) == (o.pooled, o.rates)
    old = {s.stratum: s for s in bridge_run(SPLIT_ROWS, SPLIT, 0, 1, LabelShift(2)).strata}
    assert (old["axis:a"].se, old["axis:a"].pooled) == (pytest.approx(50.5 / 61), [])
    for stratum in ("axis:rare", "axis:mirror"):
        assert (old[stratum].se, old[stratum].sp) == pytest.approx((se_pool, sp_pool))
        assert (old[stratum].pooled, old[stratum].pooled_rates) == (["bridge"], None)
    for stratum in ("axis:lucky", "axis:odd"):
        assert old[stratum].pooled == ["bridge", "near_chance"]
    oracle_2 = shift_table(SPLIT, SPLIT_ROWS, revision=2)
    for row in old.values():
        o = oracle_2[(row.stratum, True)]
        assert [row.se, row.sp, row.pi] == pytest.approx([o.se, o.sp, o.pi], abs=1e-12)
        assert row.pooled == o.pooled
    with pytest.raises(ValueError, match="revisions"):
        LabelShift(1)


def test_the_pooling_is_decided_again_in_every_resample() -> None:
    """A stratum at n1 = 30 (own se) pools its se in the resamples that draw fewer pairs with
    O met, and keeps its own in those that draw 30 or more (revision 3, stacked resamples)."""
    cells = bridge_run([], SPLIT, 0, 1, SHIFT).cells
    n, k = BridgeData.of(SPLIT, cells).counts()
    at = cells.cell("axis:rare", True, True), cells.cell("axis:rare", True, False)
    stack_n, stack_k = np.stack([n, n]), np.stack([k, k])
    # resample 0: axis:rare with 30 pairs with O met (N met 18 of them); resample 1: 29 (17)
    for r, (o_met_n_met, o_met_n_not) in enumerate(((18, 12), (17, 12))):
        stack_n[r, at[0]], stack_k[r, at[0]] = 10 + o_met_n_met, o_met_n_met
        stack_n[r, at[1]], stack_k[r, at[1]] = 190 + o_met_n_not, o_met_n_not
    zeros = np.zeros_like(stack_n)
    shift = Shift.of(cells, Counts(stack_n, stack_k, zeros + 40, zeros + 1))
    i = cells.index[("axis:rare", True)]
    assert shift.few_o_met[:, i].tolist() == [False, True]
    assert shift.se[0, i] == pytest.approx(18.5 / 31, abs=1e-12)
    assert shift.se[1, i] == pytest.approx(shift.pooled["se"][1, i], abs=1e-12)
    assert shift.sp[:, i] == pytest.approx([190.5 / 201] * 2, abs=1e-12)


def test_the_warnings_carry_the_thresholds_the_estimators_use() -> None:
    """The one-line notes of summary.json's `bridged.warnings`, per estimator, with its own
    thresholds (30 pairs, J 0.1, 30 graded criteria), never literals that could drift."""
    assert SHIFT.pooling_note(3) == (
        "3 strata take their sign's pooled se (fewer than 30 bridge pairs where the reference "
        "grader said met), pooled sp (fewer than 30 where it said not met), or both (J below "
        "0.1, or fewer than 30 graded criteria in the run: then the run's pooled met share too)"
    )
    assert LabelShift(2).pooling_note(3) == (
        "3 strata take their sign's pooled error rates (fewer than 30 bridge pairs with either "
        "verdict of the reference grader, or J below 0.1) or the run's pooled met share (fewer "
        "than 30 graded criteria)"
    )
    assert Calibration().pooling_note(2) == (
        "2 strata take their sign's pooled q for one verdict or both (fewer than 30 bridge "
        "pairs there)"
    )
    cell = SpreadCell("axis:a", "positive", "met", 0.8, [0.7, 0.9], {}, 0.2, 9.0, 2, 0.01, True)
    assert SHIFT.varies_note(cell, 4) == (
        "the new judge's error rates vary between the bridge sources beyond the bridge's "
        "interval in 4 cells (e.g. axis:a positive, se): they depend on the replies' model "
        "there, which label_shift assumes they do not, and the interval does not cover that"
    )
    assert "(e.g. axis:a positive, sp)" in SHIFT.varies_note(replace(cell, verdict="not"), 1)
    assert Calibration().varies_note(cell, 1) == (
        "q varies between the bridge sources beyond its interval in 1 cells (e.g. axis:a "
        "positive, new judge met): the judges' disagreement depends on the replies' model "
        "there, and the interval does not cover that"
    )
    assert (SHIFT.by_example, Calibration().by_example) == (True, False)


def test_a_run_stratum_the_bridge_never_saw_is_pooled_through_the_bootstrap() -> None:
    """The last cells (a negative stratum only the run has) still counted in every resample."""
    rows = [RunRow([], [ACC, NEG, crit(-1, "axis:zzz")], [True, False, True])] * 40
    result = bridge_run(rows, PAIRS, 20, 2, SHIFT)
    zzz = next(s for s in result.strata if s.stratum == "axis:zzz")
    assert zzz.pooled == ["few_o_met", "few_o_not"] and (zzz.n_o_met, zzz.n_o_not) == (0, 0)
    assert zzz.pooled_rates == "both"
    assert result.ci["bridged_score"] is not None and result.q_draws.shape == (20, 10)


def test_rogan_gladen_is_written_once_for_scalars_and_arrays() -> None:
    """The bridge's and the calibrated consensus rates' correction (`grading.bridge.rates`):
    a float for floats, an array for arrays, clipped at both ends."""
    one = rogan_gladen(0.5, 0.8, 0.9)
    assert type(one) is float and one == pytest.approx((0.5 - 0.1) / 0.7, abs=1e-15)
    many = rogan_gladen(np.array([0.05, 0.5, 0.95]), np.full(3, 0.8), np.full(3, 0.9))
    assert isinstance(many, np.ndarray)
    assert many.tolist() == pytest.approx([0.0, 0.4 / 0.7, 1.0], abs=1e-15)
