"""The bridge's simulation study (SPEC 7.5 revision 2): worlds with known truth, where the bridge's
estimators (the package's own, `grading.bridge.methods.ESTIMATORS`, with their own interval
forms) are scored against the reference grader O's own score on the run's replies, and against
the run's model's expected score. Pure numpy; `bench/bridge_study.py` prints the table.

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
models (`rates_change` moves se on the run's model only: a world where the assumption fails;
`strata_se` sets se per stratum instead, cycling through its values). With
`reply_correlation` r, each criterion's agreement draw is, with probability r, its reply's one
shared uniform (a judge's errors correlated within a reply; the marginal rates unchanged).
`prevalence` and `negative_prevalence` set the ranges of the strata's base shares (true scores
near 0 or 1).

Per replicate: a bridge of `bridge_examples` examples (O and N), a run of `run_examples` (N's
verdicts; O's kept as the truth); the point estimate and `resamples` bootstrap resamples of the
run's examples and, independently, of the bridge as the estimator's bootstrap draws it
(`by_example`: its examples, each with all its pairs; else its pairs within stratum and sign),
as `bridge_run` does (vectorised: a resample is a multinomial draw of the examples, or of a
group's four kinds of pair; the same distribution as `bridge_run`'s draws, not the same random
stream), and the estimator's own interval (`Estimator.interval`). Per method: bias and RMSE of
the bridged score against O's own score, the mean interval width, the share of replicates whose
interval holds O's own score (coverage) and the share that holds the model's expected score
(`expected_score`: each slot's prevalence times its points over the example's positive points,
averaged over whether the consensus criterion is present).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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
    strata_se: tuple[float, ...] = ()  # se per stratum (cycled) instead of J's mean
    reply_correlation: float = 0.0  # share of agreement draws shared within a reply
    prevalence: tuple[float, float] = (0.3, 0.6)  # range of a positive stratum's base share
    negative_prevalence: tuple[float, float] = (0.1, 0.25)  # of a negative one's


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
    # revision 2: m weighted as the score weights criteria follows prevalence that moves with
    # points
    World("prevalence rises with points by 0.1, +0.15", shift=0.15, points_spread=0.1),
    World("prevalence rises with points by 0.2, +0.15", shift=0.15, points_spread=0.2),
    World("se 0.95 and 0.6 between strata, -0.15", shift=-0.15, strata_se=(0.95, 0.6)),
    World("J 0.25, +0.15", j=0.25, shift=0.15),
    World(
        "bridge 150, errors correlated within a reply",
        bridge_examples=150,
        shift=0.15,
        reply_correlation=0.5,
    ),
    World("bridge 500, errors correlated within a reply", shift=0.15, reply_correlation=0.5),
    World("run 100, +0.15", run_examples=100, shift=0.15),
    World("run 250, +0.15", run_examples=250, shift=0.15),
    World("true score near 0.05", prevalence=(0.05, 0.09), negative_prevalence=(0.01, 0.03)),
    World("true score near 0.95", prevalence=(0.93, 0.97), negative_prevalence=(0.01, 0.03)),
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
    expected: float  # the run's model's expected score (`expected_score`)
    coverage_expected: float  # share of intervals holding the expected score


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
        stratum_share = rng.uniform(*world.prevalence, len(names))
        negative_share = rng.uniform(*world.negative_prevalence, len(names))
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
        if world.strata_se:
            se = np.resize(np.array(world.strata_se), len(names))
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
        self,
        rng: np.random.Generator,
        examples: int,
        prevalence: np.ndarray,
        se: np.ndarray,
        correlation: float = 0.0,
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
        if correlation:
            shared = rng.random((examples, 1))
            agree = np.where(rng.random(shape) < correlation, shared, agree)
        new = np.where(old, agree < se[stratum], agree >= self.sp[stratum])
        return stratum, old, new, present


def expected_score(world: World, layout: _Layout) -> float:
    """The run's model's expected score: per example, each slot's prevalence times its points
    over the example's positive points, averaged over whether the consensus criterion (the last
    slot) is present."""
    prevalence = layout.prevalence(world)
    share = SPARSE_SHARE if len(layout.clusters) > 1 else CLUSTER_SHARE
    points = layout.slot_points
    scores = []
    for present in (False, True):
        used = np.ones(len(points), dtype=bool)
        used[layout.cluster_slot] = present
        den = points[used & (points > 0)].sum()
        scores.append(float((prevalence * points)[used].sum() / den))
    return float(np.clip((1 - share) * scores[0] + share * scores[1], 0.0, 1.0))


def _bridge_kinds(
    layout: _Layout, stratum: np.ndarray, old: np.ndarray, new: np.ndarray, present: np.ndarray
) -> np.ndarray:
    """(examples, strata, 4) pair counts per bridge example: O met and N met, O met and N not,
    O not and N met, neither."""
    kind = 2 * (1 - old.astype(int)) + (1 - new.astype(int))
    size = 4 * len(layout.cells.strata)
    rows = np.arange(len(stratum))[:, None]
    flat = (rows * size + 4 * stratum + kind)[present]
    counts = np.bincount(flat, minlength=len(stratum) * size).astype(float)
    return counts.reshape(len(stratum), -1, 4)


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
    by_example = _bridge_kinds(
        layout,
        *layout.draw(rng, world.bridge_examples, layout.base, layout.se, world.reply_correlation),
    )
    kinds = by_example.sum(axis=0)
    run_se = np.clip(layout.se + world.rates_change, 0.01, 0.99)
    stratum, old, new, present = layout.draw(
        rng, world.run_examples, layout.prevalence(world), run_se, world.reply_correlation
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
    # each criterion's |points| over its example's positive points, per cell (`run_weight`)
    shares = np.abs(np.broadcast_to(layout.slot_points, old.shape)) / positive_den[:, None]
    weight_by_cell = np.bincount(
        flat, weights=shares[present], minlength=world.run_examples * size
    ).reshape(world.run_examples, size)
    own_points = (np.where(old & present, layout.slot_points, 0.0)).sum(axis=1) / positive_den
    own = float(np.clip(own_points.mean(), 0.0, 1.0))
    n, k = _cell_counts(kinds)
    n_pairs = k_pairs = n_examples = k_examples = np.zeros(0)
    if not all(e.by_example for e in estimators):
        n_pairs, k_pairs = _cell_counts(_resample_kinds(rng, kinds, resamples))
    if any(e.by_example for e in estimators):
        examples = len(by_example)
        times = rng.multinomial(examples, np.full(examples, 1 / examples), size=resamples)
        drawn_by_example = (times @ by_example.reshape(examples, -1)).reshape(resamples, -1, 4)
        n_examples, k_examples = _cell_counts(drawn_by_example)
    drawn = rng.integers(0, world.run_examples, (resamples, world.run_examples))
    offsets = (np.arange(resamples) * world.run_examples)[:, None]
    row_weight = np.bincount((drawn + offsets).ravel(), minlength=resamples * world.run_examples)
    row_weight = row_weight.reshape(resamples, world.run_examples).astype(float)
    run_b = row_weight @ counts_by_cell
    run_weight_b = row_weight @ weight_by_cell
    points_b = row_weight @ points_by_cell
    out = []
    for estimator in estimators:
        seen = Counts(n, k, counts_by_cell.sum(axis=0), weight_by_cell.sum(axis=0))
        point = estimator.weights(cells, seen)
        score = float(_scores(point, points_by_cell.sum(axis=0), float(world.run_examples)))
        n_b, k_b = (n_examples, k_examples) if estimator.by_example else (n_pairs, k_pairs)
        weights = estimator.weights(cells, Counts(n_b, k_b, run_b, run_weight_b))
        draws = _scores(weights, points_b, float(world.run_examples))
        interval = estimator.interval(score, draws)
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
        expected = expected_score(world, layout)
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
                    expected,
                    float(((low <= expected) & (expected <= high)).mean()),
                )
            )
    return results
