"""The bridge's simulation study (`bench/bridge_simulation.py`), reduced (runs of at most 300
examples, 200 replicates of 60 resamples, every world SPEC 7.5 revision 3 lists, the
rare-verdict worlds included), on a fixed
seed: `label_shift` meets SPEC 7.5's bar (|bias| <= 0.01, coverage of O's own score >= 0.93) in
every world where the judge's error rates are the same for both models, and the study can tell
an estimator that does not (calibration on a shifted model; label shift where the rates
change). Each world is its own test (seeded by its name), so the workers share them.

The study bridges each replicate with the package's own code (`BridgeData`, `Layout`,
`grading.bridge.estimate.bootstrap`, the estimator's weights and interval): on the same pairs
and seed it gives `bridge_run`'s numbers to the last digit (the last test)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bench.bridge_simulation import (
    BY_PAIR,
    RARE_VERDICT,
    REVISION_2,
    SCENARIOS,
    Result,
    World,
    WorldLayout,
    study,
)
from healthbench_exp.core.bridged import LABEL_SHIFT
from healthbench_exp.grading.bridge import ESTIMATORS

# worlds where label_shift falls short of the bar (docs/bridge.md says so), each checked by a
# strict xfail below, so the day it meets the bar the test says to move it back (the negative
# criteria met 0.01-0.03 with their own sp fell short under revision 2, bias -0.015, and meet
# it since revision 3 pools se and sp each on its own count)
SHORT_OF_THE_BAR = {
    # the run's model at the ceiling: positives met 0.99, negatives 0.01, O's score 0.987. The
    # clip of pi at 1 (and at 0 on the negatives) is the bias: the same draws with pi unclipped
    # -0.0046 (runs of 300) and -0.0005 (1,000), not the pooling; the interval's width is right
    # but centred low, and the percentiles at a bound lie lower still (docs/bridge.md, "At the
    # ceiling"; revision 2: -0.061, coverage 0.035)
    "rare: mirror and rare negatives together, +0.15": (
        "bias -0.015, coverage 0.85 (seed 0): the clip of pi at the ceiling"
    ),
}
UNCHANGED = [
    replace(w, run_examples=min(w.run_examples, 300)) for w in SCENARIOS if not w.rates_change
]


def label_shift_in(world: World) -> Result:
    """label_shift in one world of the reduced study (seeded by the world's name)."""
    found = study([world], replicates=200, resamples=60, seed=0, methods=(LABEL_SHIFT,))
    (result,) = [r for r in found if r.method == LABEL_SHIFT]
    return result


def test_every_world_spec_7_5_lists_is_in_the_study() -> None:
    assert len(UNCHANGED) >= 22
    assert {w.j for w in UNCHANGED} == {0.25, 0.4, 0.6, 0.9}
    assert {w.bridge_examples for w in UNCHANGED} == {150, 250, 500, 1000}
    assert {w.points_spread for w in UNCHANGED} == {0.0, 0.1, 0.2}
    assert {w.run_examples for w in SCENARIOS} == {100, 250, 1000}
    assert any(w.strata_se for w in UNCHANGED) and any(w.reply_correlation for w in UNCHANGED)
    assert any(w.spread for w in UNCHANGED) and any(w.sparse for w in UNCHANGED)
    assert any(w.negative_prevalence == (0.01, 0.03) and w.prevalence[0] < 0.5 for w in UNCHANGED)
    assert {round(w.shift, 2) for w in UNCHANGED} == {-0.15, 0.0, 0.15}
    assert set(SHORT_OF_THE_BAR) <= {w.name for w in UNCHANGED}


def test_the_rare_verdict_worlds_are_each_shifted_both_ways() -> None:
    """SPEC 7.5 revision 3: negative criteria met 0.01-0.03 as one stratum, two, three, a third
    of the criteria, near n1 = 30; the mirror (positive met 0.97-0.98); both together; the edge
    case; each with the run's model shifted both ways, all with unchanged error rates."""
    names = {w.name.rsplit(", ", 1)[0] for w in RARE_VERDICT}
    assert len(names) == 8 and len(RARE_VERDICT) == 16
    assert all(w in UNCHANGED or replace(w, run_examples=300) in UNCHANGED for w in RARE_VERDICT)
    for name in names:
        assert {w.shift for w in RARE_VERDICT if w.name.startswith(name + ",")} == {0.15, -0.15}
    rng = np.random.default_rng(0)
    layouts = {w.name: (w, WorldLayout.of(w, rng)) for w in RARE_VERDICT if w.shift > 0}
    strata = {w.negative_strata for w, _ in layouts.values()}
    assert strata == {1, 2, 3}
    third = [w for w, _ in layouts.values() if w.negative_slots * 2 == 8]  # 4 of 12 criteria
    assert third and all(w.negative_prevalence == (0.01, 0.03) for w in third[:1])
    mirror = [(w, lay) for w, lay in layouts.values() if w.prevalence == (0.97, 0.98)]
    assert len(mirror) == 2  # alone and with rare negatives
    for _, lay in mirror:
        positive = lay.cells.positive
        assert lay.se[positive].min() >= 0.7 and lay.se[positive].max() <= 0.92
    (edge,) = [(w, lay) for w, lay in layouts.values() if w.rare_run_share]
    world, lay = edge
    first = lay.cells.index[("axis:n0", False)]
    at = lay.slot_stratum == first
    assert lay.base[at].tolist() == [0.025] and lay.prevalence(world)[at].tolist() == [0.17]
    assert lay.se[first] == 0.6 and lay.se[-2:].tolist() == [0.93, 0.93]
    # near n1 = 30: two slots of each negative stratum at 0.03 in a 500-example bridge
    (near,) = [w for w, _ in layouts.values() if "near 30" in w.name]
    assert near.negative_slots / near.negative_strata * near.bridge_examples * 0.03 == 30


def test_revision_2_falls_short_where_revision_3_meets_the_bar() -> None:
    """The rare negatives in two strata whose sp differ from the sign's (0.84, 0.72): revision
    2 pools their sp with their se (n1 < 30) and misses O's score; revision 3 does not."""
    (world,) = [w for w in RARE_VERDICT if w.name.endswith("two strata, +0.15")]
    reduced = replace(world, run_examples=300)
    found = {r.method: r for r in study([reduced], 200, 60, seed=0, methods=(REVISION_2,))}
    old = found[REVISION_2]
    assert old.bias < -0.01 or old.coverage < 0.93, old


# one test per world (they spread over the workers); a world short of the bar fails its own
@pytest.mark.parametrize("world", UNCHANGED, ids=[w.name for w in UNCHANGED])
def test_label_shift_holds_bias_and_coverage_in_every_world_with_unchanged_rates(
    world: World,
) -> None:
    r = label_shift_in(world)
    assert r.replicates == 200 and 0 <= r.coverage_expected <= 1
    assert abs(r.expected - r.truth) < 0.01  # the expected score: the mean of O's own
    if "true score near" in world.name:
        assert (r.truth < 0.1) if "0.05" in world.name else (r.truth > 0.9)
    short = abs(r.bias) > 0.01 or r.coverage < 0.93
    if world.name in SHORT_OF_THE_BAR:
        # strict: the day it meets the bar the test says to move it back
        if short:
            pytest.xfail(SHORT_OF_THE_BAR[world.name])
        pytest.fail(f"{world.name} now meets the bar: move it out of SHORT_OF_THE_BAR ({r})")
    assert not short, (world.name, round(r.bias, 4), r.coverage)


def test_a_judge_lenient_on_whole_replies_needs_the_bridge_resampled_by_example() -> None:
    """The 150-example bridge whose judge is lenient or strict on a reply as a whole (runs of
    1,000, as in the table): its pairs resampled one by one miss O's score (SPEC 7.5: 0.88), by
    example they cover, with a wider interval."""
    (world,) = [w for w in SCENARIOS if w.bridge_examples == 150 and w.reply_correlation]
    found = {r.method: r for r in study([world], 200, 60, seed=0, methods=(LABEL_SHIFT,))}
    by_example, by_pair = found[LABEL_SHIFT], found[BY_PAIR]
    assert by_pair.coverage < 0.9 and by_example.coverage >= 0.93
    assert by_pair.width < 0.8 * by_example.width
    assert by_pair.bias == by_example.bias  # the same estimate, another interval


def test_the_study_tells_a_biased_estimator_apart() -> None:
    """Calibration carries q over: right for the same model, about 0.1 off for another; label
    shift where the judge's rates change between the models."""
    worlds = [replace(w, run_examples=300) for w in SCENARIOS[:2]]
    found = {(r.world, r.method): r for r in study(worlds, replicates=40, resamples=40, seed=0)}
    assert abs(found[("same model", "calibration")].bias) <= 0.02
    shifted = found[("+0.15 met", "calibration")]
    assert shifted.bias < -0.05 and shifted.coverage < 0.5
    broken = World("rates change", shift=0.15, rates_change=-0.1, run_examples=300)
    (shift,) = study([broken], replicates=40, resamples=50, seed=0, methods=("label_shift",))
    assert shift.bias < -0.05 and shift.coverage < 0.5


def test_the_study_is_seeded() -> None:
    world = [World("w", run_examples=100, bridge_examples=100)]
    first = study(world, replicates=5, resamples=20, seed=3)
    assert first == study(world, replicates=5, resamples=20, seed=3)
    assert first != study(world, replicates=5, resamples=20, seed=4)
    # seeded by the world's name: the same numbers whichever worlds run beside it
    beside = study([World("v", run_examples=100, bridge_examples=100), *world], 5, 20, seed=3)
    assert beside[len(ESTIMATORS) :] == first


def test_the_table_says_where_an_interval_is_wider_than_needed() -> None:
    """SPEC 7.5: coverage >= 0.99 is reported as wider than needed (`bench/bridge_study.py`; with
    2 replicates each coverage is 0, 0.5 or 1)."""
    script = Path(__file__).parents[2] / "bench" / "bridge_study.py"
    table = subprocess.run(
        [sys.executable, str(script), "--replicates", "2", "--resamples", "10"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ")][2:]
    assert len(rows) > 40
    for row in rows:
        assert row[6].endswith("(wider than needed)") == (float(row[6].split()[0]) >= 0.99), row
    assert {r[1] for r in rows if "correlated" in r[0]} == {"label_shift", "calibration", BY_PAIR}


def test_the_rare_verdict_table_puts_revision_2_beside_revision_3() -> None:
    """`bench/bridge_study.py --rare-verdict`: one row per rare-verdict world, revision 2's bias
    and coverage beside revision 3's (docs/bridge.md's second table)."""
    script = Path(__file__).parents[2] / "bench" / "bridge_study.py"
    table = subprocess.run(
        [sys.executable, str(script), "--rare-verdict", "--replicates", "2", "--resamples", "5",
         "--run-examples", "100"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout  # fmt: skip
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ")]
    assert rows[0][2:6] == ["revision 2: bias", "coverage", "revision 3: bias", "coverage"]
    assert [r[0].removeprefix("| ") for r in rows[1:]] == [
        w.name.removeprefix("rare: ") for w in RARE_VERDICT
    ]
    assert "runs of at most 100 examples" in table
