"""The bridge's simulation study (SPEC 7.5): worlds with known truth, where the bridge's estimators
(the package's own, `grading.bridge.methods.ESTIMATORS`) are scored against the reference grader
O's own score on the run's replies. Pure numpy; `bench/bridge_study.py` prints the table.

A world (`World`): examples of one fixed layout (POSITIVE_SLOTS positive criteria over five axis
strata, NEGATIVE_SLOTS negative ones over two, and a consensus criterion in some examples, of
one cluster stratum or, `sparse`, of one of SPARSE_CLUSTERS rare ones). O says met on a
criterion with its prevalence: its stratum's base share (the bridge's model), plus `shift` on
positive criteria for the run's model (minus half of it on negative ones: a stronger model also
avoids more), plus, with `spread`, an offset per criterion slot drawn from [-spread, spread]
(prevalence that varies between the criteria of a stratum), or, with `points_spread`, one that
grows with the criterion's points (from -points_spread at 3 points to +points_spread at 10).
The new judge N says met with probability se_s where O said met and 1 - sp_s where O did
not; se_s and sp_s are J's mean 0.5 + J / 2 moved by a per-stratum offset, the same for both
models (`rates_change` moves se on the run's model only: a world where the assumption fails).

Per replicate: a bridge of `bridge_examples` examples (O and N), a run of `run_examples` (N's
verdicts; O's kept as the truth); the point estimate and `resamples` bootstrap resamples of the
run's examples and, within stratum and sign, of the bridge's pairs, exactly as `bridge_run`
(vectorised: a resample of a group's pairs is a multinomial draw of its four kinds of pair). Per
method: bias and RMSE of the bridged score against O's own score, the mean interval width, and
the share of replicates whose interval holds O's own score (coverage).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from healthbench_exp.core.intervals import percentile_interval
from healthbench_exp.grading.bridge.cells import Cells
from healthbench_exp.grading.bridge.estimate import Counts, Estimator
from healthbench_exp.grading.bridge.methods import ESTIMATORS

POSITIVE_SLOTS = 8  # positive criteria per example, over AXES strata
AXES = 5
NEGATIVE_SLOTS = 3  # negative criteria per example, over two strata
CLUSTER_SHARE = 0.1  # share of examples with a consensus criterion (one cluster stratum)
SPARSE_CLUSTERS = 12  # `sparse`: that many cluster strata, a consensus criterion in 30%
SPARSE_SHARE = 0.3


@dataclass(frozen=True)
class World:
    """One scenario of the study (see the module docstring)."""

    name: str
    j: float = 0.6  # the new judge's mean J = se + sp - 1
    bridge_examples: int = 500
    run_examples: int = 1000
    shift: float = 0.0  # the run's model: this much more of each positive criterion met
    spread: float = 0.0  # prevalence offset between criteria of a stratum (random per slot)
    points_spread: float = 0.0  # prevalence offset that grows with the criterion's points
    sparse: bool = False  # many rare cluster strata (pooled on both sides)
    rates_change: float = 0.0  # the judge's se on the run's model minus on the bridge's


SCENARIOS = (
    World("same model"),
    World("+0.15 met", shift=0.15),
    World("-0.15 met", shift=-0.15),
    World("prevalence varies within strata, +0.15", shift=0.15, spread=0.2),
    World("sparse strata, +0.15", shift=0.15, sparse=True),
    World("J 0.4, +0.15", j=0.4, shift=0.15),
    World("J 0.4, -0.15", j=0.4, shift=-0.15),
    World("J 0.9, +0.15", j=0.9, shift=0.15),
    World("J 0.9, -0.15", j=0.9, shift=-0.15),
    World("bridge 250, +0.15", bridge_examples=250, shift=0.15),
    World("bridge 250, J 0.4, -0.15", bridge_examples=250, j=0.4, shift=-0.15),
    World("bridge 1000, +0.15", bridge_examples=1000, shift=0.15),
    # outside what the estimators can see: the weights are per stratum, not per criterion
    World("prevalence rises with points, +0.15", shift=0.15, points_spread=0.1),
    World("se 0.1 lower on the run's model (assumption broken)", shift=0.15, rates_change=-0.1),
)


@dataclass(frozen=True)
class Result:
    """One method in one world, over the replicates."""

    world: str
    method: str
    replicates: int
    truth: float  # mean of O's own score
    bias: float  # mean of bridged - own
    rmse: float
    width: float  # mean interval width
    coverage: float  # share of intervals holding O's own score


@dataclass
class _Layout:
    """The criteria slots of every example of a world and their strata."""

    cells: Cells
    slot_stratum: np.ndarray  # (slots,): index into cells.strata
    slot_points: np.ndarray
    base: np.ndarray  # (slots,): the bridge's model's prevalence
    se: np.ndarray  # (strata,): the judge's, on the bridge's model
    sp: np.ndarray
    cluster_slot: int  # the last slot: present in some examples only
    clusters: np.ndarray  # stratum indices a consensus criterion may take

    @classmethod
    def of(cls, world: World, rng: np.random.Generator) -> _Layout:
        clusters = SPARSE_CLUSTERS if world.sparse else 1
        names = [(f"axis:{a}", True) for a in range(AXES)]
        names += [(f"cluster:{c}", True) for c in range(clusters)]
        names += [("axis:n0", False), ("axis:n1", False)]
        cells = Cells(names)
        axis = [cells.index[(f"axis:{i % AXES}", True)] for i in range(POSITIVE_SLOTS)]
        negative = [cells.index[(f"axis:n{i % 2}", False)] for i in range(NEGATIVE_SLOTS)]
        cluster = [cells.index[(f"cluster:{c}", True)] for c in range(clusters)]
        points = [3 + (7 * i) % 8 for i in range(POSITIVE_SLOTS)]
        points += [-(2 + (5 * i) % 7) for i in range(NEGATIVE_SLOTS)] + [5]
        stratum_share = rng.uniform(0.3, 0.6, len(names))
        negative_share = rng.uniform(0.1, 0.25, len(names))
        slot_stratum = np.array([*axis, *negative, cluster[0]])
        share = np.where(
            np.arange(len(slot_stratum)) < POSITIVE_SLOTS,
            stratum_share[slot_stratum],
            negative_share[slot_stratum],
        )
        share[-1] = stratum_share[cluster[0]]
        offset = world.spread * rng.uniform(-1, 1, len(points))
        offset += world.points_spread * (np.abs(points) - 6.5) / 3.5
        base = np.clip(share + offset, 0.02, 0.98)
        tilt = rng.uniform(-0.08, 0.08, len(names))
        se = np.clip(0.5 + world.j / 2 + tilt, 0.02, 0.99)
        sp = np.clip(0.5 + world.j / 2 - tilt, 0.02, 0.99)
        return cls(
            cells,
            slot_stratum,
            np.array(points, dtype=float),
            base,
            se,
            sp,
            len(slot_stratum) - 1,
            np.array(cluster),
        )

    def prevalence(self, world: World) -> np.ndarray:
        """The run's model's prevalence per slot."""
        positive = self.slot_points > 0
        moved = self.base + np.where(positive, world.shift, -world.shift / 2)
        clipped: np.ndarray = np.clip(moved, 0.01, 0.99)
        return clipped

    def draw(
        self, rng: np.random.Generator, examples: int, prevalence: np.ndarray, se: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(stratum, O, N, present) per example and slot."""
        shape = (examples, len(self.slot_stratum))
        stratum = np.broadcast_to(self.slot_stratum, shape).copy()
        share = SPARSE_SHARE if len(self.clusters) > 1 else CLUSTER_SHARE
        present = np.ones(shape, dtype=bool)
        present[:, self.cluster_slot] = rng.random(examples) < share
        stratum[:, self.cluster_slot] = self.clusters[rng.integers(0, len(self.clusters), examples)]
        old = rng.random(shape) < prevalence
        agree = rng.random(shape)
        new = np.where(old, agree < se[stratum], agree >= self.sp[stratum])
        return stratum, old, new, present


def _bridge_kinds(
    layout: _Layout, stratum: np.ndarray, old: np.ndarray, new: np.ndarray, present: np.ndarray
) -> np.ndarray:
    """(strata, 4) pair counts: O met and N met, O met and N not, O not and N met, neither."""
    kind = 2 * (1 - old.astype(int)) + (1 - new.astype(int))
    flat = 4 * stratum[present] + kind[present]
    return np.bincount(flat, minlength=4 * len(layout.cells.strata)).reshape(-1, 4).astype(float)


def _cell_counts(kinds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, k) per cell (`2 * stratum + N's verdict`) from pair kinds (..., strata, 4)."""
    n = np.empty((*kinds.shape[:-2], 2 * kinds.shape[-2]))
    k = np.empty_like(n)
    n[..., 1::2] = kinds[..., 0] + kinds[..., 2]  # N met
    k[..., 1::2] = kinds[..., 0]
    n[..., 0::2] = kinds[..., 1] + kinds[..., 3]  # N not met
    k[..., 0::2] = kinds[..., 1]
    return n, k


def _resample_kinds(rng: np.random.Generator, kinds: np.ndarray, resamples: int) -> np.ndarray:
    """(resamples, strata, 4): each group's pairs drawn with replacement (multinomial)."""
    out = np.zeros((resamples, *kinds.shape))
    for s, counts in enumerate(kinds):
        total = int(counts.sum())
        if total:
            out[:, s] = rng.multinomial(total, counts / total, size=resamples)
    return out


def _scores(weights: np.ndarray, drawn_points: np.ndarray, rows: float) -> np.ndarray:
    """Clipped means of the examples' bridged scores: weights (..., cells); drawn_points (...,
    cells): the drawn examples' points per cell over their positive points, summed; rows (...):
    how many examples were drawn."""
    clipped: np.ndarray = np.clip((weights * drawn_points).sum(axis=-1) / rows, 0.0, 1.0)
    return clipped


def replicate(
    world: World,
    layout: _Layout,
    rng: np.random.Generator,
    estimators: Sequence[Estimator],
    resamples: int,
) -> tuple[float, list[tuple[float, float, float]]]:
    """(O's own score on the run, per estimator (bridged, low, high)) of one replicate."""
    cells = layout.cells
    kinds = _bridge_kinds(layout, *layout.draw(rng, world.bridge_examples, layout.base, layout.se))
    run_se = np.clip(layout.se + world.rates_change, 0.01, 0.99)
    stratum, old, new, present = layout.draw(
        rng, world.run_examples, layout.prevalence(world), run_se
    )
    cell = 2 * stratum + new
    size = 2 * len(cells.strata)
    rows = np.arange(world.run_examples)[:, None]
    flat = (rows * size + cell)[present]
    points_by_cell = np.bincount(
        flat,
        weights=np.broadcast_to(layout.slot_points, old.shape)[present],
        minlength=world.run_examples * size,
    ).reshape(world.run_examples, size)
    counts_by_cell = (
        np.bincount(flat, minlength=world.run_examples * size)
        .reshape(world.run_examples, size)
        .astype(float)
    )
    # each example's denominator: its positive points (the consensus criterion where present)
    positive_den = np.where(present & (layout.slot_points > 0), layout.slot_points, 0.0).sum(1)
    points_by_cell = points_by_cell / positive_den[:, None]
    own_points = (np.where(old & present, layout.slot_points, 0.0)).sum(axis=1) / positive_den
    own = float(np.clip(own_points.mean(), 0.0, 1.0))
    n, k = _cell_counts(kinds)
    drawn_kinds = _resample_kinds(rng, kinds, resamples)
    n_b, k_b = _cell_counts(drawn_kinds)
    drawn = rng.integers(0, world.run_examples, (resamples, world.run_examples))
    offsets = (np.arange(resamples) * world.run_examples)[:, None]
    row_weight = np.bincount((drawn + offsets).ravel(), minlength=resamples * world.run_examples)
    row_weight = row_weight.reshape(resamples, world.run_examples).astype(float)
    run_b = row_weight @ counts_by_cell
    points_b = row_weight @ points_by_cell
    out = []
    for estimator in estimators:
        point = estimator.weights(cells, Counts(n, k, counts_by_cell.sum(axis=0)))
        score = float(_scores(point, points_by_cell.sum(axis=0), float(world.run_examples)))
        weights = estimator.weights(cells, Counts(n_b, k_b, run_b))
        draws = _scores(weights, points_b, float(world.run_examples))
        interval = percentile_interval(draws)
        out.append((score, interval.low, interval.high))
    return own, out


def study(
    worlds: Sequence[World] = SCENARIOS,
    replicates: int = 1000,
    resamples: int = 200,
    seed: int = 0,
    methods: Sequence[str] = tuple(ESTIMATORS),
) -> list[Result]:
    """Every world's results per method (seeded: the same seed, the same table)."""
    results = []
    for index, world in enumerate(worlds):
        rng = np.random.default_rng([seed, index])
        layout = _Layout.of(world, rng)
        estimators = [ESTIMATORS[m] for m in methods]
        truth, found = [], []
        for _ in range(replicates):
            own, per = replicate(world, layout, rng, estimators, resamples)
            truth.append(own)
            found.append(per)
        own_all = np.array(truth)
        for m, method in enumerate(methods):
            score, low, high = (np.array([f[m][i] for f in found]) for i in range(3))
            error = score - own_all
            results.append(
                Result(
                    world.name,
                    method,
                    replicates,
                    float(own_all.mean()),
                    float(error.mean()),
                    float(np.sqrt((error**2).mean())),
                    float((high - low).mean()),
                    float(((low <= own_all) & (own_all <= high)).mean()),
                )
            )
    return results
