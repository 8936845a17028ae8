"""`label_shift`'s held-out check (`grading.bridge.checks.holdout_error`, SPEC 7.5) against a
hand loop over the folds (tests/grading/bridge_shift_oracle.py's table), on the bridge of
tests/grading/test_bridge_label_shift.py with its pairs spread over 20 examples."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pytest

from healthbench_exp.grading.bridge.cells import Pair
from healthbench_exp.grading.bridge.checks import holdout_error
from healthbench_exp.grading.bridge.estimate import bridge_run
from tests.grading.bridge_shift_oracle import table_of
from tests.grading.test_bridge_label_shift import PAIRS, SHIFT

FOLDS = 4
SEED = 3
SPREAD = [Pair(0, f"e{i % 20}", p.stratum, p.points, p.new, p.old) for i, p in enumerate(PAIRS)]


def held_out_errors(pairs: Sequence[Pair]) -> list[float]:
    """Each held-out example's bridged minus own score, by hand: the examples shuffled with SEED,
    the i-th in fold i mod FOLDS; se and sp from the other folds, m from the held-out fold's N
    verdicts (each pair once, weighted by its points over its example's positive points); an
    example without positive points left out."""
    examples = sorted({(0, p.example) for p in pairs})
    order = np.random.default_rng(SEED).permutation(len(examples))
    fold = {examples[j][1]: i % FOLDS for i, j in enumerate(order)}
    errors = []
    for f in range(FOLDS):
        train = [p for p in pairs if fold[p.example] != f]
        held = [p for p in pairs if fold[p.example] == f]
        den: dict[str, float] = defaultdict(float)
        for p in held:
            den[p.example] += max(p.points, 0.0)
        observed = [
            (
                p.stratum,
                p.points > 0,
                p.new,
                1,
                abs(p.points) / den[p.example] if den[p.example] else 0.0,
            )
            for p in held
        ]
        table = table_of(train, observed, set())
        for example in sorted({p.example for p in held if den[p.example] > 0}):
            rows = [(p, table[(p.stratum, p.points > 0)]) for p in held if p.example == example]
            bridged = sum(p.points * (r.w_met if p.new else r.w_not) for p, r in rows)
            own = sum(p.points for p, _ in rows if p.old)
            errors.append((bridged - own) / den[example])
    return errors


def test_holdout_uses_the_held_out_folds_own_met_share() -> None:
    """Each fold's weights: se, sp from the other folds, m from the held-out fold's N verdicts."""
    cells = bridge_run([], SPREAD, 0, 1, SHIFT).cells
    result = holdout_error(SPREAD, cells, SHIFT, 50, SEED, folds=FOLDS)
    errors = held_out_errors(SPREAD)
    assert result.examples == len(errors) == 20
    assert result.mean == pytest.approx(sum(errors) / len(errors), abs=1e-12)


def test_the_held_out_met_share_weighs_each_pair_by_its_examples_positive_points() -> None:
    """A held-out example of one 1-point criterion (its share 1) and one of negative criteria
    only (share 0: it is not scored) move m as the score would."""
    one = [Pair(0, f"one{i}", "axis:accuracy", 1.0, i % 3 == 0, i % 2 == 0) for i in range(40)]
    negative = [Pair(0, f"neg{i}", "axis:accuracy", -2.0, True, False) for i in range(40)]
    pairs = [*SPREAD, *one, *negative]
    cells = bridge_run([], pairs, 0, 1, SHIFT).cells
    result = holdout_error(pairs, cells, SHIFT, 10, SEED, folds=FOLDS)
    errors = held_out_errors(pairs)
    assert result.examples == len(errors) == 60
    assert result.mean == pytest.approx(sum(errors) / len(errors), abs=1e-12)
