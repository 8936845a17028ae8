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
  The run's criteria per cell are also summed weighted as the score weighs them (|points| over
  the example's positive points: `Counts.run_weight`, `label_shift`'s m).
- 95% interval: `samples` seeded resamples, each drawing the run's rows with replacement and,
  independently, the bridge (the weights recomputed from both, pooling included): its examples
  within each source (`Estimator.by_example`: `label_shift`) or its pairs within each stratum
  and sign (`calibration`); the interval's form is the estimator's (`Estimator.interval`:
  `label_shift` the estimate +- 1.96 bootstrap standard deviations, widened to the 2.5th and
  97.5th percentiles too where a stratum's pi is at 0 or 1, `calibration` the 2.5th and 97.5th
  percentiles).

Pure: arrays in, `core.bridged` records out; no config, no files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from healthbench_exp.core.bridged import BridgeStratum, SpreadCell
from healthbench_exp.core.intervals import Interval
from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.bridge.cells import (
    OVERALL,
    PREFIX,
    BridgeData,
    Cells,
    Pair,
    RunRow,
    stratum_of,
)


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
    cell_weights: np.ndarray  # (rows, cells): their |points| over the row's positive points

    @classmethod
    def of(cls, rows: Sequence[RunRow], cells: Cells) -> Layout:
        names: dict[str, int] = {OVERALL: 0}
        terms: list[tuple[int, int, float]] = []
        groups: list[tuple[float, int, int]] = []  # (den, row, metric)
        scored = 0
        counted: list[np.ndarray] = []
        weighted: list[np.ndarray] = []
        for row in rows:
            graded = [
                (c, v) for c, v in zip(row.criteria, row.verdicts, strict=True) if v is not None
            ]
            row_den = sum(c.points for c, _ in graded if c.points > 0)
            if row_den <= 0:
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
            shares = [abs(c.points) / row_den for c, _ in graded]
            weighted.append(np.bincount(per_cell, weights=shares, minlength=2 * len(cells.strata)))
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
            np.array(weighted, dtype=float).reshape(scored, 2 * len(cells.strata)),
        )

    def run_counts(self, weight: np.ndarray | None = None) -> np.ndarray:
        """The run's graded criteria per cell (rows weighted by a resample's counts)."""
        counts: np.ndarray = (
            self.cell_counts.sum(axis=0) if weight is None else weight @ self.cell_counts
        )
        return counts

    def run_weights(self, weight: np.ndarray | None = None) -> np.ndarray:
        """The run's criteria per cell weighted as the score weights them (`Counts.run_weight`;
        rows weighted by a resample's counts)."""
        weights: np.ndarray = (
            self.cell_weights.sum(axis=0) if weight is None else weight @ self.cell_weights
        )
        return weights

    @classmethod
    def overall(
        cls, cells: Cells, row: np.ndarray, cell: np.ndarray, points: np.ndarray, rows: int
    ) -> Layout:
        """The overall score's part of the layout `of` gives (the overall score its only
        metric; the same counts per cell and, for it, the same means to the last digit), from
        arrays: graded criterion i of row `row[i]` (of `rows`; criteria in row order, then in
        their order within the row) in cell `cell[i]` with `points[i]`. A row without positive
        points is left out, as `of` leaves it."""
        size = 2 * len(cells.strata)
        den = np.bincount(row, weights=np.where(points > 0, points, 0.0), minlength=rows)
        scored = den > 0
        kept = scored[row]
        number = np.cumsum(scored) - 1  # each scored row's index among the scored
        row, cell, points = number[row[kept]], cell[kept], points[kept]
        count = int(scored.sum())
        flat = row * size + cell
        counted = np.bincount(flat, minlength=count * size).astype(float)
        shares = np.abs(points) / den[scored][row]
        weighted = np.bincount(flat, weights=shares, minlength=count * size)
        return cls(
            [OVERALL],
            row,
            cell,
            points.astype(float),
            den[scored],
            np.arange(count),
            np.zeros(count, dtype=int),
            count,
            counted.reshape(count, size),
            weighted.reshape(count, size),
        )

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
    # per cell, the run's criteria weighted as the score weights them: sum of |points| over the
    # graded positive points of the criterion's example (`label_shift`'s m, SPEC 7.5 rev. 2)
    run_weight: np.ndarray


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
    # the bootstrap draws the bridge's examples (all their pairs together, within each source)
    # rather than its pairs one by one (within each stratum and sign)
    by_example: bool

    def interval(self, point: float, draws: np.ndarray, cells: Cells, counts: Counts) -> Interval:
        """The 95% interval of a metric from its point estimate, its bootstrap draws and the
        counts the estimate came from."""
        ...

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
    ci: dict[str, Interval | None]  # each metric's 95% interval (`Estimator.interval`)
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


def bootstrap(
    data: BridgeData,
    layout: Layout,
    estimator: Estimator,
    samples: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bootstrap of `bridge_run` (and of the study, `bench/bridge_simulation.py`): per
    resample, the run's rows drawn with replacement (`rng.integers`) and then the bridge
    (`draw_within`: its examples within source where `estimator.by_example`, else its pairs
    within stratum and sign), in that order on `rng`; then, all resamples at once, each one's
    weights recomputed from its counts (pooling included) and the metrics from them.
    (metric draws (samples, metrics), weight draws and `Estimator.rates` draws (samples,
    cells))."""
    cells = data.cells
    rows = layout.rows
    units = len(data.example_start) if estimator.by_example else len(data.cell)
    drawn_rows = np.empty((samples, rows), dtype=int)
    drawn_units = np.empty((samples, units), dtype=int)
    for i in range(samples):
        drawn_rows[i] = rng.integers(0, max(1, rows), rows)
        drawn_units[i] = data.draw(rng, estimator.by_example)
    at = (drawn_rows + rows * np.arange(samples)[:, None]).ravel()
    weight = np.bincount(at, minlength=samples * rows).reshape(samples, rows).astype(float)
    n, k = data.resample_counts(drawn_units, estimator.by_example)
    # each resample's sums alone (a product of all at once may round apart, and takes BLAS's
    # threads)
    run = np.array([layout.run_counts(w) for w in weight]).reshape(n.shape)
    run_weight = np.array([layout.run_weights(w) for w in weight]).reshape(n.shape)
    drawn = Counts(n, k, run, run_weight)
    q_draws = estimator.weights(cells, drawn)
    draws = np.array([layout.means(q, w) for q, w in zip(q_draws, weight, strict=True)])
    return draws.reshape(samples, len(layout.names)), q_draws, estimator.rates(cells, drawn)


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
    counts = Counts(*data.counts(), layout.run_counts(), layout.run_weights())
    refusal = estimator.refusal(cells, counts)
    if refusal is not None:
        raise BridgeRefused(refusal)
    q = estimator.weights(cells, counts)
    point = layout.means(q)
    draws, q_draws, rate_draws = bootstrap(
        data, layout, estimator, samples, np.random.default_rng(seed)
    )
    metrics: dict[str, float | None] = {}
    ci: dict[str, Interval | None] = {}
    for j, name in enumerate(layout.names):
        defined = draws[:, j][~np.isnan(draws[:, j])]
        metrics[name] = None if np.isnan(point[j]) else float(point[j])
        ci[name] = (
            estimator.interval(float(point[j]), defined, cells, counts)
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
