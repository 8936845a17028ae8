"""Strata whose rare verdict a run gives far more often than the bridge did
(`grading.bridge.rare`, SPEC 7.5 revision 3): from a bridged run's strata, and in the bridge
kit's check with each source left out as the run; the kit's lines and the run's warning name
them. Counts by hand: a verdict with fewer than 30 bridge pairs, a run share at least 3 times
the bridge's and 0.05 above it."""

from __future__ import annotations

import pytest

from healthbench_exp.core.bridged import BridgeCheck, BridgeStratum, RareVerdict
from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.bridge import rare_by_source, rare_verdicts
from healthbench_exp.grading.bridge.cells import Pair, RunRow
from healthbench_exp.output.bridge_kit_files import check_lines
from healthbench_exp.tasks.bridge_result import bridge_check, bridged, rare_note
from healthbench_exp.tasks.bridge_source import BridgeSource


def row(stratum: str, n1: int, n0: int, pi: float, sign: str = "negative") -> BridgeStratum:
    return BridgeStratum(stratum, sign, n_o_met=n1, n_o_not=n0, run_n=100, pi=pi)


def test_a_run_giving_a_verdict_rare_in_the_bridge_far_more_often_is_named() -> None:
    rows = [
        row("axis:edge", 12, 488, 0.17),  # met 0.024 in the bridge, 0.17 in the run: named
        row("axis:alike", 12, 488, 0.05),  # 0.05 < 3 x 0.024 + ...: as rare in the run
        row("axis:own", 30, 470, 0.5),  # 30 pairs with met: its own se, nothing pooled
        row("axis:close", 2, 98, 0.06),  # 3 x 0.02 = 0.06, but only 0.04 above it
        row("axis:mirror", 390, 10, 0.8, "positive"),  # not met 0.025 in the bridge, 0.2 here
        row("pooled", 12, 488, 0.9),  # a sign's pooled row: not a stratum
        BridgeStratum("axis:unrun", "negative", n_o_met=1, n_o_not=400, run_n=0, pi=0.9),
    ]
    found = rare_verdicts(rows)
    assert found == [
        RareVerdict("axis:edge", "negative", "met", 12, pytest.approx(12 / 500), 0.17),
        RareVerdict(
            "axis:mirror", "positive", "not", 10, pytest.approx(10 / 400), pytest.approx(0.2)
        ),
    ]
    # calibration's strata have no pi: nothing to compare
    assert rare_verdicts([BridgeStratum("axis:a", "negative", n_met=3, n_not=400)]) == []
    note = rare_note(found)
    assert "\n" not in note and "axis:edge negative met (12 pairs, 0.024 in the bridge" in note
    assert "0.170 in the run" in note and "axis:mirror positive not" in note


def pairs_of(source: int, stratum: str, n: int, met: int, points: float = -2) -> list[Pair]:
    return [Pair(source, f"e{i}", stratum, points, i < met, i < met) for i in range(n)]


def test_the_kits_check_leaves_each_source_out_as_the_run() -> None:
    pairs = [
        *pairs_of(0, "axis:n", 100, 20),  # o3's replies: met 0.20
        *pairs_of(1, "axis:n", 200, 4),  # the others': 4 + 3 of 400 (0.0175)
        *pairs_of(2, "axis:n", 200, 3),
        *pairs_of(2, "axis:few", 20, 10),  # under 30 pairs of its own: not a run's share
        *pairs_of(0, "axis:few", 20, 0),
    ]
    found = rare_by_source(pairs, ["o3", "gpt41", "gpt4o"])
    assert found == [
        RareVerdict("axis:n", "negative", "met", 7, pytest.approx(7 / 400), 0.2, "o3"),
    ]
    check = BridgeCheck(["a", "b", "c"], ["o3", "gpt41", "gpt4o"], "o", "n", 0, [], {}, {})
    check.rare_verdicts = found
    (line,) = [x for x in check_lines(check) if "rests on the pooled rate" in x]
    assert line.startswith("  o3: axis:n negative: the reference grader's 'met' in 0.200")
    assert "0.018 (7 pairs) in the others'" in line
    written = check.to_dict()
    assert BridgeCheck.from_dict(written).rare_verdicts == found
    # a check written before the field reads with none
    del written["rare_verdicts"]
    assert BridgeCheck.from_dict(written).rare_verdicts == []


def test_the_kits_bridge_check_carries_them() -> None:
    """`tasks.bridge_result.bridge_check` (what the kit writes to bridge_check.json) names the
    source whose replies get a verdict far more often than the other sources' did."""
    common = [
        pairs_of(s, "axis:a", 120, 60, points=3) + pairs_of(s, "axis:b", 120, 70, points=2)
        for s in range(3)
    ]
    pairs = [
        [*common[0], *pairs_of(0, "axis:n", 100, 20)],
        [*common[1], *pairs_of(1, "axis:n", 200, 4)],
        [*common[2], *pairs_of(2, "axis:n", 200, 3)],
    ]
    sources = [
        BridgeSource(f"run{s}", "jury", pairs[s], {}, model) for s, model in enumerate(MODELS)
    ]
    check = bridge_check(sources, "n", 20, 0)
    assert [(r.source, r.stratum, r.verdict) for r in check.rare_verdicts] == [
        ("o3", "axis:n", "met")
    ]


MODELS = ["o3", "gpt41", "gpt4o"]


def test_a_bridged_runs_warnings_name_them() -> None:
    """`tasks.bridge_result.bridged` (summary.json's `bridged.warnings`): a run meeting the
    negative criteria of axis:n in a fifth of its rows, through a bridge where O met them in
    7 of 400 pairs."""
    sources = [
        BridgeSource(
            f"run{s}",
            "jury",
            [
                *pairs_of(s, "axis:a", 120, 60, points=3),
                *pairs_of(s, "axis:b", 120, 70, points=2),
                *pairs_of(s, "axis:n", 200, 4 - s),
            ],
            {},
            MODELS[s],
        )
        for s in range(2)
    ]
    criteria = [
        Criterion("a", 3, ("axis:a",)),
        Criterion("b", 2, ("axis:b",)),
        Criterion("n", -2, ("axis:n",)),
    ]
    rows = [RunRow([], criteria, [i % 2 == 0, True, i % 5 == 0]) for i in range(100)]
    record = bridged(rows, sources, "n", 20, 0, "label_shift")
    (line,) = [w for w in record.warnings if "rare verdict" in w]
    assert "in 1 strata" in line and "axis:n negative met (7 pairs, 0.018 in the bridge" in line


def test_the_bounds_are_inclusive_and_a_stratum_without_bridge_pairs_is_named() -> None:
    """At exactly 3 times the bridge's share, or exactly 0.05 above it, a verdict is named; a
    verdict the bridge never gave (0 pairs) is named from a run share of 0.05; a stratum with
    no bridge pair at all has both its verdicts named; a sign's pooled row is skipped, wherever
    it stands."""
    rows = [
        row("pooled", 12, 488, 0.9),
        row("axis:times", 1, 3, 0.75),  # 0.25 in the bridge, 0.75 = 3 x 0.25 in the run
        row("axis:gap", 0, 100, 0.05),  # never met in the bridge, 0.05 in the run
        row("axis:gap_not", 100, 0, 0.95, "positive"),  # never 'not' in the bridge, 0.05 here
        row("axis:empty", 0, 0, 0.5),  # no bridge pair: both verdicts rest on pooled rates
    ]
    assert [(r.stratum, r.verdict, r.bridge_n, r.bridge_share) for r in rare_verdicts(rows)] == [
        ("axis:times", "met", 1, 0.25),
        ("axis:gap", "met", 0, 0.0),
        ("axis:gap_not", "not", 0, 0.0),
        ("axis:empty", "met", 0, 0.0),
        ("axis:empty", "not", 0, 0.0),
    ]


def test_the_kits_check_names_positive_strata_first_then_by_name() -> None:
    """A source with exactly 30 pairs of its own in a stratum is a run's share; a criterion of
    1 point is positive; positive strata come first, then negative ones, each by name."""
    negatives = ["axis:n3", "axis:n1", "axis:n5", "axis:n2", "axis:n4"]
    pairs = [
        *pairs_of(0, "axis:p", 30, 18, points=1),  # o3: 'not' in 12 of its 30 (0.4)
        *pairs_of(1, "axis:p", 200, 198, points=1),  # the others: 'not' in 4 of 400
        *pairs_of(2, "axis:p", 200, 198, points=1),
    ]
    for stratum in negatives:  # o3 meets 0.2 of each, the others 4 of 400
        pairs += [*pairs_of(0, stratum, 100, 20), *pairs_of(1, stratum, 200, 2)]
        pairs += pairs_of(2, stratum, 200, 2)
    found = rare_by_source(pairs, MODELS)
    assert [(r.source, r.stratum, r.sign, r.verdict, r.bridge_n) for r in found] == [
        ("o3", "axis:p", "positive", "not", 4),
        *[("o3", s, "negative", "met", 4) for s in sorted(negatives)],
    ]
    assert found[0].run_share == pytest.approx(0.4)
