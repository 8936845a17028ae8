"""The bridge's data (SPEC 7.5): its pairs (`Pair`), the run's rows (`RunRow`), the strata and
their cells (`Cells`), and the pairs as arrays with their resampling (`BridgeData`).

- Stratum of a criterion (`stratum_of`): its `cluster:` tag, else its `axis:` tag, else `none`;
  the sign of its points splits each stratum in two. Each stratum and sign has two cells, one
  per N verdict: cell `2 * stratum + verdict`.
- Resampling (`draw_within`): units sorted by group, one uniform per unit, a unit of its own
  group drawn with it: the pairs within stratum and sign (`BridgeData.draw`), or the examples
  within source (`BridgeData.draw_examples`: all the pairs of a drawn example travel together).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.bridge.rates import jeffreys

MIN_PAIRS = 30  # a cell with fewer pairs takes its sign's pooled q
POOLED = "pooled"
NONE = "none"
OVERALL = "bridged_score"
PREFIX = "bridged:"


def stratum_of(tags: Sequence[str]) -> str:
    """The criterion's `cluster:` tag, else its `axis:` tag, else `none`."""
    for kind in ("cluster:", "axis:"):
        for tag in tags:
            if tag.startswith(kind):
                return tag
    return NONE


@dataclass(frozen=True)
class Pair:
    """One criterion graded by both judges on one reply of a bridge source."""

    source: int  # which bridge source (its index)
    example: str  # the row it belongs to within its source (prompt_id and rollout)
    stratum: str  # `stratum_of` its tags
    points: float
    new: bool  # N's verdict
    old: bool  # O's verdict


@dataclass(frozen=True)
class RunRow:
    """One scored row of the run graded by N: its example tags, criteria and N's verdicts
    (index-aligned; None: ungraded)."""

    example_tags: Sequence[str]
    criteria: Sequence[Criterion]
    verdicts: Sequence[bool | None]


class Cells:
    """Every stratum-and-sign of the bridge and the run, and their q cells (`2 * s + v`)."""

    def __init__(self, strata: Sequence[tuple[str, bool]]) -> None:
        self.strata = sorted(set(strata), key=lambda s: (not s[1], s[0] == NONE, s[0]))
        self.index = {s: i for i, s in enumerate(self.strata)}
        # mutmut: `dtype=bool` mutated away is the dtype numpy infers from bools anyway
        self.positive = np.array([p for _, p in self.strata], dtype=bool)  # pragma: no mutate

    def cell(self, stratum: str, positive: bool, verdict: bool) -> int:
        return 2 * self.index[(stratum, positive)] + int(verdict)

    def q(self, n: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(q of every cell, which cells are pooled) from the pairs' n and k per cell (the last
        axis; any leading axes are resamples)."""
        sign = np.repeat(self.positive, 2)
        verdict = np.tile([False, True], len(self.strata))
        pooled_q = np.zeros(np.shape(n))
        for positive in (True, False):
            for met in (False, True):
                # mutmut: `!=` for either `==` visits the same four (sign, verdict) masks in
                # another order, each still assigned its own pooled q
                mask = (sign == positive) & (verdict == met)  # pragma: no mutate
                pooled_n = (n * mask).sum(axis=-1, keepdims=True)
                pooled_q += mask * jeffreys((k * mask).sum(axis=-1, keepdims=True), pooled_n)
        pooled = n < MIN_PAIRS
        return np.where(pooled, pooled_q, jeffreys(k, n)), pooled


def draw_within(rng: np.random.Generator, start: np.ndarray, size: np.ndarray) -> np.ndarray:
    """One resample with replacement within groups: per unit (units sorted by group; `start`,
    `size`: its group's first unit and size), a unit of its group drawn uniformly (one uniform
    per unit, in order). The bridge's pairs within stratum and sign, or its examples within
    source."""
    offsets: np.ndarray = (rng.random(len(start)) * size).astype(int)
    drawn: np.ndarray = start + offsets
    return drawn


@dataclass
class BridgeData:
    """The bridge's pairs as arrays over `cells`, grouped by stratum and sign for resampling."""

    cells: Cells
    cell: np.ndarray  # per pair
    old: np.ndarray  # per pair: O said met
    start: np.ndarray  # per pair: where its stratum-and-sign group starts (pairs sorted by it)
    size: np.ndarray  # per pair: its group's size
    example: np.ndarray  # per pair: its example's index (examples sorted by source, example)
    example_start: np.ndarray  # per example: where its source's examples start
    example_size: np.ndarray  # per example: how many examples its source has

    @classmethod
    def of(cls, pairs: Sequence[Pair], cells: Cells) -> BridgeData:
        # a canonical order (not the records' finishing order): the resamples are reproducible
        ordered = sorted(
            pairs,
            key=lambda p: (
                cells.index[(p.stratum, p.points > 0)],
                p.source,
                p.example,
                p.points,
                p.new,
                p.old,
            ),
        )
        group = np.array([cells.index[(p.stratum, p.points > 0)] for p in ordered], dtype=int)
        cell = np.array(
            [cells.cell(p.stratum, p.points > 0, p.new) for p in ordered], dtype=int
        ).reshape(-1)
        counts = np.bincount(group, minlength=len(cells.strata)) if len(group) else np.zeros(0)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)
        keys = sorted({(p.source, p.example) for p in ordered})
        index = {key: i for i, key in enumerate(keys)}
        source = np.array([s for s, _ in keys], dtype=int)  # int even without pairs
        per_source = np.bincount(source)
        source_start = np.concatenate([[0], np.cumsum(per_source)[:-1]]).astype(int)
        # mutmut: numpy infers int from ints; without pairs no example is ever drawn
        at = [index[(p.source, p.example)] for p in ordered]
        example = np.array(at, dtype=int)  # pragma: no mutate
        return cls(
            cells,
            cell,
            # mutmut: `dtype=bool` is what numpy infers from bools; without pairs, `starts`
            # indexed by the empty `group` is the same empty int array as the `else` branch's
            np.array([p.old for p in ordered], dtype=bool),  # pragma: no mutate
            starts[group] if len(group) else np.zeros(0, dtype=int),  # pragma: no mutate
            counts[group].astype(int) if len(group) else np.zeros(0, dtype=int),
            example,
            source_start[source],
            per_source[source],
        )

    def counts(self, drawn: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(n, k) per cell over the pairs (or the `drawn` pair indices)."""
        cell = self.cell if drawn is None else self.cell[drawn]
        old = self.old if drawn is None else self.old[drawn]
        size = 2 * len(self.cells.strata)
        n = np.bincount(cell, minlength=size).astype(float)
        k = np.bincount(cell, weights=old.astype(float), minlength=size)
        return n, k

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """Pair indices resampled with replacement within each stratum and sign."""
        return draw_within(rng, self.start, self.size)

    def draw_examples(self, rng: np.random.Generator) -> np.ndarray:
        """How often each example is drawn when the examples are resampled with replacement
        within each source."""
        drawn = draw_within(rng, self.example_start, self.example_size)
        # mutmut: `astype(None)` is float64 too
        times: np.ndarray = np.bincount(drawn, minlength=len(self.example_start)).astype(
            float  # pragma: no mutate
        )
        return times

    def example_counts(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, k) per cell with each example's pairs counted `times[example]` times."""
        size = 2 * len(self.cells.strata)
        weight = times[self.example]
        n = np.bincount(self.cell, weights=weight, minlength=size)
        k = np.bincount(self.cell, weights=weight * self.old, minlength=size)
        return n, k
