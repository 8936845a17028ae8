"""`label_shift`'s interval where the estimate has a stratum at a bound (SPEC 7.5: the form the
study chose): the estimate +- 1.96 bootstrap sd, widened to hold the draws' 2.5th and 97.5th
percentiles where some stratum with criteria in the run has pi clipped to 0 or 1; against the
independent loop of tests/grading/bridge_shift_oracle.py, on the bridge of
tests/grading/test_bridge_label_shift.py."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from healthbench_exp.grading.bridge.cells import BridgeData, Cells, RunRow
from healthbench_exp.grading.bridge.estimate import Counts, Layout, bridge_run
from tests.grading.bridge_shift_oracle import shift_bootstrap
from tests.grading.test_bridge_label_shift import PAIRS, ROWS, SHIFT


def test_at_a_bound_the_interval_also_holds_the_percentiles() -> None:
    """A run that never meets the negative criterion: its stratum's pi is clipped to 0, the
    resamples cannot fall below it, and the interval stretches to the draws' 2.5th and 97.5th
    percentiles where they lie beyond the estimate +- 1.96 sd (the study's choice, SPEC 7.5)."""
    rows = [replace(r, verdicts=[*r.verdicts[:2], False, *r.verdicts[3:]]) for r in ROWS]
    result = bridge_run(rows, PAIRS, 40, 0, SHIFT)
    table = {(s.stratum, s.sign): s for s in result.strata}
    assert table[("axis:accuracy", "negative")].pi == 0.0
    ci = shift_bootstrap(rows, PAIRS, 40, 0)
    for name, interval in ci.items():
        held = result.ci[name]
        assert held is not None and held.as_list() == pytest.approx(interval, rel=1e-9), name
    # no longer symmetric about the estimate: the upper end is the 97.5th percentile (without
    # the widening: 0.2062 on both sides)
    point = result.metrics["bridged_score"]
    low, high = result.ci["bridged_score"].as_list()  # type: ignore[union-attr]
    assert high - point > point - low + 0.005  # type: ignore[operator]
    assert SHIFT.at_bound(result.cells, counts_of(rows)) and not SHIFT.at_bound(
        result.cells, counts_of(ROWS)
    )


def counts_of(rows: list[RunRow]) -> Counts:
    """The counts `bridge_run` estimates from (the bridge `PAIRS`, the run `rows`)."""
    cells = bridge_run(rows, PAIRS, 0, 1, SHIFT).cells
    layout = Layout.of(rows, cells)
    return Counts(*BridgeData.of(PAIRS, cells).counts(), layout.run_counts(), layout.run_weights())


def at_bound(positive_met: int, negative_run: int) -> bool:
    """`at_bound` on a bridge of one positive and one negative stratum (each: se and sp 90.5 /
    101, J 0.79), a run of 40 positive criteria of which `positive_met` N said met and
    `negative_run` negative ones N said not met (0 to 29: the negative stratum takes its sign's
    pooled m, 0 where none is met)."""
    cells = Cells([("axis:a", True), ("axis:n", False)])
    n = np.array([100.0, 100.0, 100.0, 100.0])  # per cell (stratum, N not met / met)
    k = np.array([10.0, 90.0, 10.0, 90.0])  # of them O met
    run = np.array([40.0 - positive_met, positive_met, negative_run, 0.0])
    return SHIFT.at_bound(cells, Counts(n, k, run, run / 40))


def test_a_bound_counts_only_in_a_stratum_the_run_grades() -> None:
    """pi at 1 (every positive criterion met, m above se) or at 0 counts; a stratum with no
    criterion in the run (its pi from the pooled m of nothing, 0) does not; one criterion does."""
    assert not at_bound(20, 0)  # m 0.5: pi 0.51; the negative stratum's 0 is not the run's
    assert at_bound(40, 0)  # m 1 > se: pi clipped to exactly 1
    assert at_bound(2, 0)  # m 0.05 < 1 - sp: pi 0
    assert at_bound(20, 1)  # one negative criterion in the run, not met: its pi 0
