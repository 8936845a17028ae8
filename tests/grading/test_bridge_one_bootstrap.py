"""One bootstrap for the bridge and its study (issue 51): the study's replicate
(`bench/bridge_simulation.py`), bridged by the package's own code from arrays, gives
`bridge_run`'s numbers to the last digit on the same pairs and seed; `Layout.overall` (the
study's run from arrays) is `Layout.of` on the same rows for the overall score. In process and
fast: mutmut runs it (it leaves out tests/grading/test_bridge_study.py, statistical)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bridge_simulation import World, WorldLayout, bridge_data, bridged, run_layout
from healthbench_exp.core.intervals import Interval
from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.bridge import ESTIMATORS, Pair, RunRow, bridge_run
from healthbench_exp.grading.bridge.cells import OVERALL
from healthbench_exp.grading.bridge.estimate import Layout

WORLD = World("w", bridge_examples=120, run_examples=150, shift=0.15, reply_correlation=0.3)


def drawn(seed: int) -> tuple[WorldLayout, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """A world's layout, a bridge and a run drawn from it (stratum, O, N, present)."""
    rng = np.random.default_rng(seed)
    layout = WorldLayout.of(WORLD, rng)
    bridge = layout.draw(rng, WORLD.bridge_examples, layout.base, layout.se, 0.3)
    run = layout.draw(rng, WORLD.run_examples, layout.base, layout.se)
    return layout, bridge, run


def as_records(
    layout: WorldLayout, bridge: tuple[np.ndarray, ...], run: tuple[np.ndarray, ...]
) -> tuple[list[Pair], list[RunRow]]:
    """The same draws as the records `bridge_run` reads."""
    name = [s for s, _ in layout.cells.strata]
    pairs = [
        Pair(0, f"{e:05d}", name[s], float(points), bool(n), bool(o))
        for e, (ss, oo, nn, pp) in enumerate(zip(*bridge, strict=True))
        for s, o, n, p, points in zip(ss, oo, nn, pp, layout.slot_points, strict=True)
        if p
    ]
    stratum, _, new, present = run
    rows = [
        RunRow(
            (),
            [
                Criterion(f"c{j}", float(layout.slot_points[j]), (name[s],))
                for j, s in enumerate(ss)
                if pp[j]
            ],
            [bool(n) for n, p in zip(nn, pp, strict=True) if p],
        )
        for ss, nn, pp in zip(stratum, new, present, strict=True)
    ]
    return pairs, rows


@pytest.mark.parametrize("method", sorted(ESTIMATORS))
def test_the_study_bridges_a_replicate_to_the_last_digit_as_bridge_run(method: str) -> None:
    """The study's path (arrays) and the CLI's (records), bootstrap included: == throughout."""
    layout, bridge, run = drawn(5)
    pairs, rows = as_records(layout, bridge, run)
    estimator = ESTIMATORS[method]
    stratum, _, new, present = run
    study_path = bridged(
        bridge_data(layout, *bridge),
        run_layout(layout, stratum, new, present),
        estimator,
        70,
        np.random.default_rng(11),
    )
    cli = bridge_run(rows, pairs, 70, 11, estimator)
    interval = cli.ci[OVERALL]
    assert isinstance(interval, Interval)  # the one interval type
    assert study_path == (cli.metrics[OVERALL], *interval.as_list())
    assert bridged(
        bridge_data(layout, *bridge),
        run_layout(layout, stratum, new, present),
        estimator,
        70,
        np.random.default_rng(12),
    ) != (cli.metrics[OVERALL], *interval.as_list())


def test_layout_overall_is_layout_of_for_the_overall_score() -> None:
    """The run's counts and weighted counts per cell, and the overall score's mean under any
    weights and row weights, alike to the last digit; a row without positive points left out
    as `of` leaves it."""
    layout, bridge, run = drawn(7)
    stratum, _, new, present = run
    present = present.copy()
    present[3] = False  # a row with no graded criterion
    present[4, layout.slot_points > 0] = False  # one with negative criteria only
    _, rows = as_records(layout, bridge, (stratum, stratum, new, present))
    by_rows = Layout.of(rows, layout.cells)
    by_arrays = run_layout(layout, stratum, new, present)
    assert by_arrays.rows == by_rows.rows == WORLD.run_examples - 2
    assert by_arrays.names == [OVERALL]
    for name in ("cell_counts", "cell_weights"):
        mine, theirs = getattr(by_arrays, name), getattr(by_rows, name)
        assert np.array_equal(mine, theirs) and mine.dtype == theirs.dtype, name
    rng = np.random.default_rng(0)
    for _ in range(3):
        q = rng.random(2 * len(layout.cells.strata))
        weight = rng.integers(0, 3, by_rows.rows).astype(float)
        assert by_arrays.means(q)[0] == by_rows.means(q)[0]
        assert by_arrays.means(q, weight)[0] == by_rows.means(q, weight)[0]
