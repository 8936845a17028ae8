"""Leave one model out (`grading.bridge.leave_one_out`) and the spread of se and sp between sources
(`grading.bridge.checks.spread` with `by_old`), by hand on three sources: plain loops here and
the independent oracles (tests/grading/bridge_oracle.py, bridge_shift_oracle.py).

Sources 0 and 1: a judge with se 0.85 and sp 0.75 against O on two strata; source 2: the same
judge, stricter on that model's replies (se 0.55 on axis:a), so leaving it out shows the error.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.bridge.calibration import Calibration
from healthbench_exp.grading.bridge.cells import Pair, RunRow
from healthbench_exp.grading.bridge.checks import chi2_equal_rates, chi2_sf, spread
from healthbench_exp.grading.bridge.estimate import bridge_run
from healthbench_exp.grading.bridge.label_shift import LabelShift
from healthbench_exp.grading.bridge.leave_one_out import leave_one_out, own_score
from healthbench_exp.grading.bridge.methods import ESTIMATORS
from tests.grading.bridge_oracle import bootstrap, metrics_of, q_of
from tests.grading.bridge_shift_oracle import shift_bootstrap, shift_q


def source_pairs(source: int, prevalence: float, se: dict[str, float], sp: float) -> list[Pair]:
    """900 pairs on 91 examples: per stratum (axis:a +, axis:b +, axis:n -), O met on the first
    share of each block of 20, N agreeing on the first share of O's met (se) and not met (sp)."""
    out = []
    for i in range(900):
        stratum = ("axis:a", "axis:b", "axis:n")[i % 3]
        points = -2.0 if stratum == "axis:n" else float(1 + i % 4)
        j = i // 3 % 20
        share = 0.2 if stratum == "axis:n" else prevalence
        old = j < round(20 * share)
        rank = j if old else j - round(20 * share)
        block = round(20 * share) if old else 20 - round(20 * share)
        agree = rank < round(block * (se[stratum] if old else sp))
        out.append(Pair(source, f"s{source}e{i % 91:02d}", stratum, points, agree == old, old))
    return out


SE = {"axis:a": 0.85, "axis:b": 0.85, "axis:n": 0.85}
PAIRS = [
    *source_pairs(0, 0.3, SE, 0.75),
    *source_pairs(1, 0.5, SE, 0.75),
    *source_pairs(2, 0.7, {**SE, "axis:a": 0.5}, 0.75),
]


def rows_of(pairs: list[Pair], old: bool) -> list[RunRow]:
    by: dict[str, list[Pair]] = defaultdict(list)
    for p in pairs:
        by[p.example].append(p)
    return [
        RunRow([], [Criterion(str(i), p.points, (p.stratum,)) for i, p in enumerate(g)],
               [p.old if old else p.new for p in g])
        for _, g in sorted(by.items())
    ]  # fmt: skip


def own_by_hand(pairs: list[Pair]) -> float:
    by: dict[str, list[Pair]] = defaultdict(list)
    for p in pairs:
        by[p.example].append(p)
    scores = [
        sum(p.points for p in g if p.old) / sum(p.points for p in g if p.points > 0)
        for g in by.values()
    ]
    return min(1.0, max(0.0, sum(scores) / len(scores)))


def test_each_source_left_out_through_each_method_is_the_hand_computation() -> None:
    found = leave_one_out(PAIRS, 3, ESTIMATORS, 30, 4)
    assert [(t.source, t.method) for t in found] == [
        (s, m) for s in range(3) for m in ("label_shift", "calibration")
    ]
    for t in found:
        held = [p for p in PAIRS if p.source == t.source]
        others = [p for p in PAIRS if p.source != t.source]
        rows = rows_of(held, old=False)
        assert t.own == pytest.approx(own_by_hand(held), abs=1e-12)
        assert t.own == pytest.approx(own_score(held), abs=1e-12)
        if t.method == "label_shift":
            q = shift_q(others, rows)
            ci = shift_bootstrap(rows, others, 30, 4)
        else:
            q = q_of(others)
            ci, _ = bootstrap(rows, others, 30, 4)
        assert t.bridged == pytest.approx(metrics_of(rows, q, None)["bridged_score"], abs=1e-9)
        assert t.ci is not None
        assert t.ci.as_list() == pytest.approx(ci["bridged_score"], abs=1e-9)
        assert t.refused is None
    by = {(t.source, t.method): t for t in found}
    # the judge is stricter on source 2's model: its own error leaves label shift's interval
    strict = by[(2, "label_shift")]
    assert strict.ci is not None and strict.own is not None and not strict.ci.covers(strict.own)
    # source 1 (the same rates as the others): label shift holds it
    middle = by[(1, "label_shift")]
    assert middle.ci is not None and middle.own is not None and middle.ci.covers(middle.own)


def test_one_source_has_no_transport_and_a_refused_bridge_says_so() -> None:
    assert leave_one_out(PAIRS[:900], 1, ESTIMATORS, 10, 1) == []
    # two sources, the other one's judge at chance: label shift refuses it, calibration does not
    chance = source_pairs(1, 0.5, {"axis:a": 0.5, "axis:b": 0.5, "axis:n": 0.5}, 0.5)
    found = leave_one_out([*PAIRS[:900], *chance], 2, ESTIMATORS, 10, 1)
    assert [(t.source, t.method) for t in found] == [
        (s, m) for s in range(2) for m in ("label_shift", "calibration")
    ]  # a refusal goes on to the next method
    refused = [t for t in found if t.source == 0 and t.method == "label_shift"]
    assert refused[0].bridged is None and "J" in str(refused[0].refused)
    assert refused[0].own == pytest.approx(own_by_hand(PAIRS[:900]), abs=1e-12)
    assert all(t.refused is None for t in found if t.method == "calibration")


def test_the_spread_of_se_and_sp_between_sources_by_hand() -> None:
    shift = LabelShift()
    result = bridge_run([], PAIRS, 40, 2, shift)
    cells = spread(PAIRS, result.cells, result.rate_draws, ["s0", "s1", "s2"], by_old=True)
    rows = {(c.stratum, c.sign, c.verdict): c for c in cells}
    se_a = rows[("axis:a", "positive", "met")]
    counts = []
    for s in range(3):
        met = [p for p in PAIRS if p.source == s and p.stratum == "axis:a" and p.old]
        agree = sum(p.new for p in met)
        counts.append((len(met), agree))
        assert se_a.by_source[f"s{s}"].n == len(met) and se_a.by_source[f"s{s}"].k == agree
        assert se_a.by_source[f"s{s}"].q == pytest.approx((agree + 0.5) / (len(met) + 1))
    statistic, df = chi2_equal_rates(counts)
    assert (se_a.chi2, se_a.df) == (pytest.approx(statistic), df) and df == 2
    assert se_a.p_value == pytest.approx(chi2_sf(statistic, df)) and se_a.p_value < 0.05
    n_all, k_all = sum(n for n, _ in counts), sum(k for _, k in counts)
    assert se_a.q == pytest.approx((k_all + 0.5) / (n_all + 1))
    qs = [(k + 0.5) / (n + 1) for n, k in counts]
    assert se_a.spread == pytest.approx(max(qs) - min(qs))
    # the interval: the resampled own se of the stratum (`rates`), as the estimator has it
    draws = result.rate_draws[:, result.cells.cell("axis:a", True, True)]
    assert se_a.ci == pytest.approx(list(np.percentile(draws, [2.5, 97.5])))
    assert se_a.beyond_interval
    # sp of axis:b: the same judge everywhere: within the interval
    sp_b = rows[("axis:b", "positive", "not")]
    not_met = [p for p in PAIRS if p.stratum == "axis:b" and not p.old]
    assert sp_b.q == pytest.approx((sum(not p.new for p in not_met) + 0.5) / (len(not_met) + 1))
    assert not sp_b.beyond_interval
    # calibration still compares q, cells by the new judge's verdict
    q_cells = spread(PAIRS, result.cells, result.q_draws, ["s0", "s1", "s2"])
    q_a = next(c for c in q_cells if (c.stratum, c.verdict) == ("axis:a", "met"))
    met_by_n = [p for p in PAIRS if p.stratum == "axis:a" and p.new]
    assert q_a.q == pytest.approx((sum(p.old for p in met_by_n) + 0.5) / (len(met_by_n) + 1))
    assert Calibration().by_old is False and shift.by_old is True


def test_own_score_skips_examples_without_positive_points_and_counts_one_point() -> None:
    pairs = [
        Pair(0, "a", "axis:x", 1.0, True, True),  # one positive point, met: 1
        Pair(0, "b", "axis:x", -2.0, True, True),  # negative points only: not scored
        Pair(0, "c", "axis:x", 4.0, True, False),  # 0 of 4
        Pair(0, "c", "axis:y", -1.0, False, True),  # met: -1 of 4
    ]
    assert own_score(pairs) == pytest.approx((1.0 + -1 / 4) / 2, abs=1e-12)
    assert own_score(pairs[1:2]) is None and own_score([]) is None
    assert own_score(pairs[2:]) == 0.0  # clipped at 0
