"""The bridged score: a run graded by a new judge N, on the reference grader O's scale.

Bridge data: pairs, one per criterion both judges graded on the same reply (`Pair`).

What every estimator shares (here):

- Stratum of a criterion (`stratum_of`): its `cluster:` tag (consensus criteria), else its
  `axis:` tag, else `none`; the sign of its points splits each stratum in two. Each stratum and
  sign has two cells (`Cells`), one per N verdict: cell `2 * stratum + verdict`.
- An estimator (`Estimator`) is a function from counts per cell (the bridge's pairs n, and k
  of them with O met; the run's graded criteria) to a weight per cell: the probability that O
  said met on a criterion of that cell. `calibration` (`grading.bridge.calibration`): q_s(v) =
  P(O met | N = v) from the bridge; `label_shift` (`grading.bridge.label_shift`): N's error
  rates from the bridge and the run's own met share, by Bayes.
- Bridged example score: section 3 with each graded criterion counted as met with its cell's
  weight w: sum(points * w) / sum(positive points), over the graded criteria (ungraded ones
  left out of both). Example tags take the example's score; rubric tags the same formula over
  their criteria (skipped without positive points); per name the mean over the rows where it
  is defined, clipped to [0, 1]: `bridged_score`, `bridged:<tag>` (`Layout`). The run's counts
  per cell are over the scored rows' graded criteria.
- 95% interval: `samples` seeded resamples, each drawing the run's rows with replacement and,
  independently, the bridge's pairs with replacement within each stratum and sign (the weights
  recomputed from both, pooling included); the 2.5th and 97.5th percentiles of each metric.

Pure: arrays in, `core.bridged` records out; no config, no files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from healthbench_exp.core.bridged import BridgeStratum, SpreadCell
from healthbench_exp.core.intervals import percentile_interval
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


@dataclass
class BridgeData:
    """The bridge's pairs as arrays over `cells`, grouped by stratum and sign for resampling."""

    cells: Cells
    cell: np.ndarray  # per pair
    old: np.ndarray  # per pair: O said met
    start: np.ndarray  # per pair: where its stratum-and-sign group starts (pairs sorted by it)
    size: np.ndarray  # per pair: its group's size

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
        return cls(
            cells,
            cell,
            # mutmut: `dtype=bool` is what numpy infers from bools; without pairs, `starts`
            # indexed by the empty `group` is the same empty int array as the `else` branch's
            np.array([p.old for p in ordered], dtype=bool),  # pragma: no mutate
            starts[group] if len(group) else np.zeros(0, dtype=int),  # pragma: no mutate
            counts[group].astype(int) if len(group) else np.zeros(0, dtype=int),
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
        offsets: np.ndarray = (rng.random(len(self.start)) * self.size).astype(int)
        drawn: np.ndarray = self.start + offsets
        return drawn


@dataclass
class Layout:
    """The run's bridged metrics as linear terms in q: each (row, metric) group's numerator is
    sum(points * q[cell]) over its terms, its denominator the positive points graded."""

    names: list[str]
    term_group: np.ndarray
    term_cell: np.ndarray
    term_points: np.ndarray
    group_den: np.ndarray
    group_row: np.ndarray
    group_metric: np.ndarray
    rows: int
    cell_counts: np.ndarray  # (rows, cells): each scored row's graded criteria per cell

    @classmethod
    def of(cls, rows: Sequence[RunRow], cells: Cells) -> Layout:
        names: dict[str, int] = {OVERALL: 0}
        terms: list[tuple[int, int, float]] = []
        groups: list[tuple[float, int, int]] = []  # (den, row, metric)
        scored = 0
        counted: list[np.ndarray] = []
        for row in rows:
            graded = [
                (c, v) for c, v in zip(row.criteria, row.verdicts, strict=True) if v is not None
            ]
            if sum(c.points for c, _ in graded if c.points > 0) <= 0:
                continue
            by_name: dict[str, list[tuple[Criterion, bool]]] = {OVERALL: graded}
            for tag in row.example_tags:
                by_name[PREFIX + tag] = graded
            for c, v in graded:
                for tag in c.tags:
                    by_name.setdefault(PREFIX + tag, []).append((c, v))
            for name, chosen in by_name.items():
                den = sum(c.points for c, _ in chosen if c.points > 0)
                if den <= 0:
                    continue
                group = len(groups)
                groups.append((den, scored, names.setdefault(name, len(names))))
                for c, v in chosen:
                    terms.append((group, cells.cell(stratum_of(c.tags), c.points > 0, v), c.points))
            per_cell = [cells.cell(stratum_of(c.tags), c.points > 0, v) for c, v in graded]
            counted.append(np.bincount(per_cell, minlength=2 * len(cells.strata)))
            scored += 1
        # mutmut: without `dtype=float` the int columns stay int and the points' sums the same;
        # numpy reads any negative size in `reshape` as "the rest"
        t = np.array(terms, dtype=float).reshape(-1, 3)  # pragma: no mutate
        counted_cells = np.array(counted, dtype=float)  # pragma: no mutate (int sums the same)
        g = np.array(groups, dtype=float).reshape(-1, 3)  # pragma: no mutate
        return cls(
            list(names),
            t[:, 0].astype(int),
            t[:, 1].astype(int),
            t[:, 2],
            g[:, 0],
            g[:, 1].astype(int),
            g[:, 2].astype(int),
            scored,
            counted_cells.reshape(scored, 2 * len(cells.strata)),
        )

    def run_counts(self, weight: np.ndarray | None = None) -> np.ndarray:
        """The run's graded criteria per cell (rows weighted by a resample's counts)."""
        counts: np.ndarray = (
            self.cell_counts.sum(axis=0) if weight is None else weight @ self.cell_counts
        )
        return counts

    def means(self, q: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
        """Each metric's clipped mean over its rows with each criterion weighted by its cell's
        `q` (row `weight`s: a resample's counts); NaN where no row of it is drawn."""
        groups = len(self.group_den)
        num = np.bincount(
            self.term_group, weights=self.term_points * q[self.term_cell], minlength=groups
        )
        score = num / self.group_den if groups else num
        w = np.ones(groups) if weight is None else weight[self.group_row]
        total = np.bincount(self.group_metric, weights=w * score, minlength=len(self.names))
        count = np.bincount(self.group_metric, weights=w, minlength=len(self.names))
        # mutmut: a metric no drawn row defines has total and count both 0 (0 / 0: `invalid`),
        # so `divide` never fires and its argument mutated away changes nothing
        with np.errstate(invalid="ignore", divide="ignore"):  # pragma: no mutate
            return np.clip(total / count, 0.0, 1.0)


@dataclass(frozen=True)
class Counts:
    """What an estimator sees: the bridge's pairs per cell (`n`, and `k` of them with O met)
    and the run's graded criteria per cell (`run`), each cell `2 * stratum + N's verdict`."""

    n: np.ndarray
    k: np.ndarray
    run: np.ndarray


class Estimator(Protocol):
    """A bridge method: from the counts, a weight per cell (the probability that O said met on
    a criterion of that cell), the strata table, and a refusal where the bridge cannot be used
    (None: it can). `rates`: per cell, the quantity the method assumes the same for every
    model, as `by_old` groups the pairs (`grading.bridge.checks.spread` compares it between
    sources): by N's verdict (False), each cell's share of O met; by O's verdict (True), each
    cell's share where N agrees."""

    name: str
    by_old: bool
    revision: int  # SPEC 7.5's revision of the method it follows (summary.json's `revision`)

    def pooling_note(self, strata: int) -> str:
        """The one-line warning where `strata` strata take pooled values (its thresholds
        formatted from its constants)."""
        ...

    def varies_note(self, first: SpreadCell, cells: int) -> str:
        """The one-line warning where what it holds fixed varies between the bridge sources
        beyond the bridge's interval in `cells` cells, `first` the first of them."""
        ...

    def weights(self, cells: Cells, counts: Counts) -> np.ndarray: ...

    def rates(self, cells: Cells, counts: Counts) -> np.ndarray: ...

    def strata(self, cells: Cells, counts: Counts) -> list[BridgeStratum]: ...

    def refusal(self, cells: Cells, counts: Counts) -> str | None: ...


class BridgeRefused(ValueError):
    """The bridge cannot be used for this run (the estimator's one-line reason)."""


@dataclass
class Bridging:
    """The bridged metrics of a run, their intervals, the strata table and the weight draws."""

    metrics: dict[str, float | None]
    ci: dict[str, list[float] | None]
    strata: list[BridgeStratum]
    q_draws: np.ndarray  # (samples, cells): each bootstrap resample's weights
    rate_draws: np.ndarray  # (samples, cells): each resample's `Estimator.rates`
    cells: Cells
    q: np.ndarray  # the weights per cell


def cells_of(rows: Sequence[RunRow], pairs: Sequence[Pair]) -> Cells:
    """Every stratum and sign of the bridge's pairs and the run's criteria."""
    strata = {(p.stratum, p.points > 0) for p in pairs}
    strata |= {(stratum_of(c.tags), c.points > 0) for r in rows for c in r.criteria}
    return Cells(sorted(strata))


def bridge_run(
    rows: Sequence[RunRow],
    pairs: Sequence[Pair],
    samples: int,
    seed: int,
    estimator: Estimator,
) -> Bridging:
    """The bridged metrics of `rows` (N's verdicts) through `pairs` with `estimator` (see the
    module docstring); BridgeRefused where the estimator refuses the bridge."""
    cells = cells_of(rows, pairs)
    data = BridgeData.of(pairs, cells)
    layout = Layout.of(rows, cells)
    counts = Counts(*data.counts(), layout.run_counts())
    refusal = estimator.refusal(cells, counts)
    if refusal is not None:
        raise BridgeRefused(refusal)
    q = estimator.weights(cells, counts)
    point = layout.means(q)
    rng = np.random.default_rng(seed)
    draws = np.empty((samples, len(point)))
    q_draws = np.empty((samples, len(q)))
    rate_draws = np.empty((samples, len(q)))
    for i in range(samples):
        drawn_rows = rng.integers(0, max(1, layout.rows), layout.rows)
        # mutmut: `astype(None)` is float64 too
        weight = np.bincount(drawn_rows, minlength=layout.rows).astype(float)  # pragma: no mutate
        n, k = data.counts(data.draw(rng))
        drawn = Counts(n, k, layout.run_counts(weight))
        q_draws[i] = estimator.weights(cells, drawn)
        rate_draws[i] = estimator.rates(cells, drawn)
        draws[i] = layout.means(q_draws[i], weight)
    metrics: dict[str, float | None] = {}
    ci: dict[str, list[float] | None] = {}
    for j, name in enumerate(layout.names):
        defined = draws[:, j][~np.isnan(draws[:, j])]
        metrics[name] = None if np.isnan(point[j]) else float(point[j])
        ci[name] = (
            percentile_interval(defined).as_list()
            if len(defined) and not np.isnan(point[j])
            else None
        )
    order = [OVERALL, *sorted(n for n in layout.names if n != OVERALL)]
    return Bridging(
        {name: metrics[name] for name in order},
        {name: ci[name] for name in order},
        estimator.strata(cells, counts),
        q_draws,
        rate_draws,
        cells,
        q,
    )
