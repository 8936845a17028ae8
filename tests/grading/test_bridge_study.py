"""The bridge's simulation study (`bench/bridge_simulation.py`), reduced (runs of at most 300
examples, 200 replicates of 60 resamples, every world SPEC 7.5 revision 2 lists), on a fixed
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

import pytest

from bench.bridge_simulation import BY_PAIR, SCENARIOS, Result, World, study
from healthbench_exp.core.bridged import LABEL_SHIFT
from healthbench_exp.grading.bridge import ESTIMATORS

# worlds where label_shift falls short of the bar (docs/bridge.md would say so), each checked by
# a strict xfail below, so the day it meets the bar the test says to move it back: none since
# revision 3 pools se and sp each on its own count (the negative criteria met 0.01-0.03 fell
# short under revision 2: bias -0.015)
SHORT_OF_THE_BAR: dict[str, str] = {}
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
