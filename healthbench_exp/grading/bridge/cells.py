"""The bridge's data (SPEC 7.5): its pairs (`Pair`), the run's rows (`RunRow`), the strata and
their cells (`Cells`), and the pairs as arrays with their resampling (`BridgeData`).

- Stratum of a criterion (`stratum_of`): its `cluster:` tag, else its `axis:` tag, else `none`;
  the sign of its points splits each stratum in two. Each stratum and sign has two cells, one
  per N verdict: cell `2 * stratum + verdict`.
- Resampling (`draw_within`): units sorted by group, one uniform per unit, a unit of its own
  group drawn with it: the pairs within stratum and sign (`BridgeData.draw`), or the examples
  within source (`BridgeData.draw` `by_example`: all the pairs of a drawn example travel
  together; `BridgeData.resample_counts`).
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
        keys = sorted({(p.source, p.example) for p in pairs})
        index = {key: i for i, key in enumerate(keys)}
        return cls.of_arrays(
            cells,
            np.array([cells.index[(p.stratum, p.points > 0)] for p in pairs], dtype=int),
            np.array([index[(p.source, p.example)] for p in pairs], dtype=int),
            np.array([p.points for p in pairs], dtype=float),
            np.array([p.new for p in pairs], dtype=bool),
            np.array([p.old for p in pairs], dtype=bool),
            np.array([s for s, _ in keys], dtype=int),
        )

    @classmethod
    def of_arrays(
        cls,
        cells: Cells,
        group: np.ndarray,
        example: np.ndarray,
        points: np.ndarray,
        new: np.ndarray,
        old: np.ndarray,
        example_source: np.ndarray,
    ) -> BridgeData:
        """The bridge from arrays, one entry per pair: its stratum and sign (`group`, an index
        into `cells.strata`), its example's index (examples numbered in order of source, then
        example), points, N's and O's verdicts; `example_source`: each example's source."""
        # a canonical order (not the records' finishing order): the resamples are reproducible
        order = np.lexsort((old, new, points, example, group))
        group, example, new, old = group[order], example[order], new[order], old[order]
        counts = np.bincount(group, minlength=len(cells.strata))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)
        per_source = np.bincount(example_source)
        source_start = np.concatenate([[0], np.cumsum(per_source)[:-1]]).astype(int)
        return cls(
            cells,
            2 * group + new,
            old,
            starts[group],
            counts[group],
            example,
            source_start[example_source],
            per_source[example_source],
        )

    def counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(n, k) per cell over the pairs."""
        size = 2 * len(self.cells.strata)
        n = np.bincount(self.cell, minlength=size).astype(float)
        k = np.bincount(self.cell, weights=self.old.astype(float), minlength=size)
        return n, k

    def draw(self, rng: np.random.Generator, by_example: bool) -> np.ndarray:
        """One resample: example indices drawn with replacement within each source
        (`by_example`), else pair indices within each stratum and sign."""
        if by_example:
            return draw_within(rng, self.example_start, self.example_size)
        return draw_within(rng, self.start, self.size)

    def resample_counts(self, drawn: np.ndarray, by_example: bool) -> tuple[np.ndarray, np.ndarray]:
        """(n, k) per cell of each resample (resamples, cells) from its drawn units
        (resamples, units; `draw`): with `by_example`, each drawn example's pairs all counted.
        The counts are whole numbers, so their sums are exact in any order."""
        size = 2 * len(self.cells.strata)
        resamples = len(drawn)
        if not by_example:
            at = (self.cell[drawn] + size * np.arange(resamples)[:, None]).ravel()
            n = np.bincount(at, minlength=resamples * size).astype(float)
            k = np.bincount(at, weights=self.old[drawn].ravel(), minlength=resamples * size)
            return n.reshape(resamples, size), k.reshape(resamples, size)
        examples = len(self.example_start)
        at = (drawn + examples * np.arange(resamples)[:, None]).ravel()
        times = np.bincount(at, minlength=resamples * examples).reshape(resamples, examples)
        # each example's pairs per cell (n) and of them with O met (k)
        of_example = self.example * size + self.cell
        n_example = np.bincount(of_example, minlength=examples * size).reshape(examples, size)
        k_example = np.bincount(of_example, weights=self.old, minlength=examples * size)
        # whole numbers summed without BLAS (whose threads only contend on matrices this small)
        n = np.einsum("re,ec->rc", times, n_example).astype(float)
        k = np.einsum("re,ec->rc", times.astype(float), k_example.reshape(examples, size))
        return n, k
