"""The `calibration` estimator of the bridge (`grading.bridge` holds what it shares).

- Per stratum s (with its sign) and N's verdict v: q_s(v) = (k + 0.5) / (n + 1), n pairs of s
  with N = v, k of them with O = met (Jeffreys). A cell with n < MIN_PAIRS takes its sign's
  pooled cell's q (the pairs of every stratum of that sign, with N = v), and says so; a stratum
  of the run that the bridge never saw has n = 0 there, so it is pooled too.
- Each criterion's weight: q_s(v) of its stratum and N's verdict.

Right only where the run's model meets criteria as often as the bridge's replies did (q moves
with that base rate); `grading.bridge.label_shift` holds for any model.
"""

from __future__ import annotations

import numpy as np

from healthbench_exp.core.bridged import (
    CALIBRATION,
    MET,
    NEGATIVE,
    NOT_MET,
    POSITIVE,
    BridgeStratum,
    SpreadCell,
)
from healthbench_exp.core.intervals import Interval, percentile_interval
from healthbench_exp.grading.bridge.cells import MIN_PAIRS, POOLED, Cells
from healthbench_exp.grading.bridge.estimate import Counts
from healthbench_exp.grading.bridge.rates import jeffreys


def strata_rows(cells: Cells, n: np.ndarray, k: np.ndarray) -> list[BridgeStratum]:
    """The strata table: each stratum and sign's cells, then each sign's pooled cells."""
    q, pooled = cells.q(n, k)
    out = []
    for i, (stratum, positive) in enumerate(cells.strata):
        sign = POSITIVE if positive else NEGATIVE
        flags = [name for name, v in ((NOT_MET, 0), (MET, 1)) if pooled[2 * i + v]]
        out.append(
            BridgeStratum(
                stratum,
                sign,
                int(n[2 * i + 1]),
                int(n[2 * i]),
                float(q[2 * i + 1]),
                float(q[2 * i]),
                sorted(flags),
            )
        )
    for positive in (True, False):
        mask = np.repeat(cells.positive == positive, 2)
        if not mask.any():
            continue
        met = mask & np.tile([False, True], len(cells.strata))
        nope = mask & ~met
        out.append(
            BridgeStratum(
                POOLED,
                POSITIVE if positive else NEGATIVE,
                int(n[met].sum()),
                int(n[nope].sum()),
                jeffreys(k[met].sum(), n[met].sum()),
                jeffreys(k[nope].sum(), n[nope].sum()),
            )
        )
    return out


class Calibration:
    """`calibration`: q_s(v) = P(O met | N = v) from the bridge, carried over to the run (see the
    module docstring); right only for replies like the bridge's."""

    name = CALIBRATION
    by_old = False  # q: O's met share among the pairs where N gave a verdict
    revision = 1  # the first bridge, kept as it was
    by_example = False  # its pairs resampled one by one within stratum and sign, as it was

    def interval(self, point: float, draws: np.ndarray, cells: Cells, counts: Counts) -> Interval:
        """The 2.5th and 97.5th percentiles of the draws, as it was."""
        return percentile_interval(draws)

    def pooling_note(self, strata: int) -> str:
        return (
            f"{strata} strata take their sign's pooled q for one verdict or both "
            f"(fewer than {MIN_PAIRS} bridge pairs there)"
        )

    def varies_note(self, first: SpreadCell, cells: int) -> str:
        return (
            f"q varies between the bridge sources beyond its interval in {cells} cells "
            f"(e.g. {first.stratum} {first.sign}, new judge {first.verdict}): the "
            "judges' disagreement depends on the replies' model there, and the interval does "
            "not cover that"
        )

    def weights(self, cells: Cells, counts: Counts) -> np.ndarray:
        return cells.q(counts.n, counts.k)[0]

    def rates(self, cells: Cells, counts: Counts) -> np.ndarray:
        return self.weights(cells, counts)

    def strata(self, cells: Cells, counts: Counts) -> list[BridgeStratum]:
        return strata_rows(cells, counts.n, counts.k)

    def refusal(self, cells: Cells, counts: Counts) -> str | None:
        return None
