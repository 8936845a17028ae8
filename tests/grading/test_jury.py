"""The jury's figures (SPEC 7.1) against values computed by hand in each test."""

from __future__ import annotations

import json

import pytest

from healthbench_exp.core.summary import EVAL, Jury, RunSummary
from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.jury import (
    JuryRow,
    LengthSetting,
    jury_section,
    jury_weight,
    pair_stats,
)
from healthbench_exp.grading.scoring import aggregate_metrics, bootstrap_std, example_metrics

T, F, U = True, False, None  # met, not met, ungraded
MEMBERS = ["p", "j1", "j2"]  # the primary judge first


def crit(points: int, *tags: str) -> Criterion:
    return Criterion(text=f"criterion {points} {tags}", points=points, tags=tags)


def verdicts(p: bool | None, j1: bool | None, j2: bool | None) -> dict[str, bool | None]:
    return {"p": p, "j1": j1, "j2": j2}


ACC, COMP = "axis:accuracy", "axis:completeness"
ROWS = [
    JuryRow(  # weights 2/3, 1/2 (j1 ungraded), 1/3
        ["theme:hedging"],
        [crit(10, ACC), crit(5, COMP), crit(-4, ACC)],
        [verdicts(T, T, F), verdicts(F, U, T), verdicts(T, F, F)],
        reply_chars=2500,
    ),
    JuryRow(  # the 4-point criterion is graded by nobody: ungraded for the jury
        ["theme:context_seeking"],
        [crit(6, ACC), crit(4, COMP)],
        [verdicts(T, T, T), verdicts(U, U, U)],
        reply_chars=2500,
    ),
    JuryRow(  # j2 graded nothing here: the row has no score for j2
        ["theme:hedging"], [crit(5, COMP)], [verdicts(F, F, U)], reply_chars=2500
    ),
]
JURY_SCORES = [(10 * 2 / 3 + 5 * 1 / 2 - 4 * 1 / 3) / 15, 6 / 6, 0 / 5]


def test_jury_weight_is_the_share_of_graded_members_that_said_met() -> None:
    assert jury_weight([T, T, F]) == pytest.approx(2 / 3)
    assert jury_weight([T, U, F]) == pytest.approx(1 / 2)
    assert jury_weight([F, F]) == 0
    assert jury_weight([U, U, U]) is None


def test_jury_metrics_use_points_times_weight() -> None:
    jury = jury_section(MEMBERS, ROWS, bootstrap_samples=200, seed=3)
    m = jury.metrics
    assert m["overall_score"] == pytest.approx(sum(JURY_SCORES) / 3)
    assert m["score"] == m["overall_score"]
    assert m["overall_score:n_samples"] == 3
    assert m["overall_score:bootstrap_std"] == pytest.approx(bootstrap_std(JURY_SCORES, 200, 3))
    assert m["theme:hedging"] == pytest.approx((JURY_SCORES[0] + 0) / 2)
    assert m["theme:context_seeking"] == pytest.approx(1.0)
    # axis:accuracy: row 1 (10 * 2/3 - 4 * 1/3) / 10, row 2: 6 / 6
    assert m["axis:accuracy"] == pytest.approx(((20 / 3 - 4 / 3) / 10 + 1) / 2)
    # axis:completeness: row 1 5 * 1/2 / 5, row 2 ungraded (skipped), row 3 0
    assert m["axis:completeness"] == pytest.approx((0.5 + 0) / 2)
    assert m["axis:completeness:n_samples"] == 2


def test_jury_mean_is_clipped_to_0_1() -> None:
    rows = [
        JuryRow(["theme:hedging"], [crit(5), crit(-10)], [verdicts(F, F, F), verdicts(T, T, F)])
    ]
    jury = jury_section(MEMBERS, rows, bootstrap_samples=10)
    # example score (-10 * 2/3) / 5 = -4/3: not clipped per example, the mean is
    assert jury.metrics["overall_score"] == 0.0
    assert jury.by_judge["j2"]["overall_score"] == 0.0


def test_each_judge_is_scored_as_a_one_judge_run() -> None:
    jury = jury_section(MEMBERS, ROWS, bootstrap_samples=100, seed=1)
    assert jury.by_judge["p"]["overall_score"] == pytest.approx(((10 - 4) / 15 + 1 + 0) / 3)
    assert jury.by_judge["j1"]["overall_score"] == pytest.approx((10 / 10 + 1 + 0) / 3)
    assert jury.by_judge["j2"]["overall_score"] == pytest.approx((5 / 15 + 1) / 2)
    assert jury.by_judge["j2"]["overall_score:n_samples"] == 2
    for name in MEMBERS:  # the whole dict, as tasks.eval.build_summary aggregates a run's rows
        rows = [
            example_metrics(r.example_tags, r.criteria, [v[name] for v in r.verdicts]) for r in ROWS
        ]
        expected = aggregate_metrics([r for r in rows if r is not None], 100, 1)
        assert jury.by_judge[name] == expected


def test_a_member_agreeing_with_the_primary_has_its_metrics() -> None:
    rows = [
        JuryRow(r.example_tags, r.criteria, [{**v, "j1": v["p"]} for v in r.verdicts]) for r in ROWS
    ]
    jury = jury_section(MEMBERS, rows, bootstrap_samples=100)
    assert jury.by_judge["j1"] == jury.by_judge["p"]
    first = jury.agreement[0]
    assert (first.a, first.b, first.n, first.agreement) == ("p", "j1", 5, 1.0)
    assert first.kappa == pytest.approx(1.0)


def test_pairwise_agreement_and_kappa_by_hand() -> None:
    jury = jury_section(MEMBERS, ROWS, bootstrap_samples=10)
    pairs = {(p.a, p.b): p for p in jury.agreement}
    assert list(pairs) == [("p", "j1"), ("p", "j2"), ("j1", "j2")]
    # p/j1 both graded (T,T) (T,F) (T,T) (F,F): p_o 3/4; p_e = 3/4*2/4 + 1/4*2/4 = 1/2
    p_j1 = pairs["p", "j1"]
    assert (p_j1.n, p_j1.agreement) == (4, 0.75)
    assert p_j1.kappa == pytest.approx((0.75 - 0.5) / (1 - 0.5))
    # p/j2: (T,F) (F,T) (T,F) (T,T): p_o 1/4; p_e = 3/4*2/4 + 1/4*2/4 = 1/2 -> -1/2
    assert pairs["p", "j2"].n == 4
    assert pairs["p", "j2"].agreement == 0.25
    assert pairs["p", "j2"].kappa == pytest.approx(-0.5)
    # j1/j2: (T,F) (F,F) (T,T): p_o 2/3; p_e = 2/3*1/3 + 1/3*2/3 = 4/9 -> (2/3-4/9)/(5/9) = 0.4
    assert pairs["j1", "j2"].kappa == pytest.approx(0.4)
    by = p_j1.by
    assert list(by) == [
        "axis:accuracy",
        "axis:completeness",
        "theme:context_seeking",
        "theme:hedging",
    ]
    # accuracy: (T,T) (T,F) (T,T): p_o 2/3, p_e = 1 * 2/3 + 0 = 2/3 -> kappa 0
    assert (by[ACC].n, by[ACC].agreement) == (3, pytest.approx(2 / 3))
    assert by[ACC].kappa == pytest.approx(0.0)
    # completeness: only (F,F): both said one thing only, kappa undefined
    assert (by[COMP].n, by[COMP].agreement, by[COMP].kappa) == (1, 1.0, None)
    # hedging: (T,T) (T,F) (F,F): p_o 2/3, p_e = 2/3*1/3 + 1/3*2/3 = 4/9 -> 0.4
    assert by["theme:hedging"].n == 3
    assert by["theme:hedging"].kappa == pytest.approx(0.4)


def test_kappa_of_a_two_by_two_table() -> None:
    # yes/yes 20, yes/no 5, no/yes 10, no/no 15: p_o .7, p_e .5*.6 + .5*.4 = .5, kappa .4
    pairs = [(T, T)] * 20 + [(T, F)] * 5 + [(F, T)] * 10 + [(F, F)] * 15
    stats = pair_stats(pairs)
    assert (stats.n, stats.agreement) == (50, 0.7)
    assert stats.kappa == pytest.approx(0.4)
    assert pair_stats([]).agreement is None and pair_stats([]).kappa is None


def test_a_pair_that_never_graded_the_same_criterion() -> None:
    rows = [JuryRow(["theme:hedging"], [crit(5), crit(3)], [verdicts(T, U, U), verdicts(U, F, U)])]
    jury = jury_section(MEMBERS, rows, bootstrap_samples=10)
    assert [(p.n, p.agreement, p.kappa, p.by) for p in jury.agreement] == [(0, None, None, {})] * 3
    assert jury.metrics["overall_score"] == pytest.approx(5 / 8)  # weights 1 and 0
    assert jury.by_judge["j2"] == {}  # graded nothing: no metric, as a one-judge run


def test_length_adjusted_score_for_the_jury_and_each_judge() -> None:
    length = LengthSetting(per_500_chars=0.1, center_chars=2000)
    jury = jury_section(MEMBERS, ROWS, bootstrap_samples=10, length=length)
    # every reply is 2500 chars: each example score loses 0.1 before the mean
    adjusted = sum(s - 0.1 for s in JURY_SCORES) / 3
    assert jury.metrics["length_adjusted_score"] == pytest.approx(adjusted)
    assert jury.metrics["length_adjusted_score:theme:context_seeking"] == pytest.approx(0.9)
    assert jury.by_judge["j2"]["length_adjusted_score"] == pytest.approx((5 / 15 + 1) / 2 - 0.1)


def test_bad_input_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="two or more distinct members"):
        jury_section(["p"], ROWS)
    with pytest.raises(ValueError, match=r"verdicts by \['x'\], not jury members"):
        jury_section(MEMBERS, [JuryRow([], [crit(5)], [{"p": T, "x": F}])])
    with pytest.raises(ValueError, match="1 criteria but 0 verdicts"):
        JuryRow([], [crit(5)], [])


def test_summary_json_jury_shape_and_round_trip() -> None:
    jury = jury_section(MEMBERS, ROWS, bootstrap_samples=10)
    summary = RunSummary(task=EVAL, metrics={}, counts=None, jury=jury)
    data = json.loads(json.dumps(summary.to_dict()))
    assert list(data["jury"]) == [
        *("members", "rule", "metrics", "by_judge", "agreement"),  # SPEC 7.1
        "ungraded",  # beside it: each member's criteria with no verdict, counted by hand
    ]
    assert data["jury"]["ungraded"] == {"p": 1, "j1": 2, "j2": 2}
    assert data["jury"]["members"] == MEMBERS and data["jury"]["rule"] == "mean"
    pair = data["jury"]["agreement"][0]
    assert list(pair) == ["a", "b", "n", "agreement", "kappa", "by"]
    assert pair["by"]["axis:accuracy"] == {"n": 3, "agreement": pytest.approx(2 / 3), "kappa": 0.0}
    back = RunSummary.from_dict(data)
    assert isinstance(back.jury, Jury)
    assert back.jury == jury
    assert back.to_dict() == data
    assert "jury" not in RunSummary(task=EVAL, metrics={}, counts=None).to_dict()
