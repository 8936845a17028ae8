"""The bridge's simulation study (SPEC 7.5 revision 3): worlds with known truth, where the bridge's
estimators (the package's own, `grading.bridge.methods.ESTIMATORS`, with their own interval
forms) are scored against the reference grader O's own score on the run's replies, and against
the run's model's expected score. Pure numpy; `bench/bridge_study.py` prints the table.

A world (`World`, with the study's worlds `SCENARIOS` and `RARE_VERDICT`, in
`bench/bridge_worlds.py`): examples of one fixed layout (POSITIVE_SLOTS positive criteria over
five axis strata, NEGATIVE_SLOTS negative ones over two, and a consensus criterion in some
examples, of one cluster stratum or, `sparse`, of one of SPARSE_CLUSTERS rare ones). O says met
on a criterion with its prevalence: its stratum's base share (the bridge's model), plus `shift` on
positive criteria for the run's model (minus half of it on negative ones: a stronger model also
avoids more), plus, with `spread`, an offset per criterion slot drawn from [-spread, spread]
(prevalence that varies between the criteria of a stratum), or, with `points_spread`, one that
grows with the criterion's points (from -points_spread at 3 points to +points_spread at 10).
The new judge N says met with probability se_s where O said met and 1 - sp_s where O did
not; se_s and sp_s are J's mean 0.5 + J / 2 moved by a per-stratum offset, the same for both
models (`rates_change` moves se on the run's model only: a world where the assumption fails;
`strata_se` sets se per stratum instead, cycling through its values; `negative_sp` and
`negative_se` the sp and se of the negative strata). `negative_strata` and `negative_slots` set
how many negative strata and criteria an example has (slots cycle over the strata);
`negative_shift` moves the run's negative criteria (default: minus half of `shift`);
`rare_bridge_share` and `rare_run_share`, where set, are the bridge's and the run's prevalence
on the first negative stratum's criteria (a verdict rare in the bridge's replies given far more
often in the run's). With
`reply_correlation` r, each of a reply's verdicts follows, with probability r, the reply's one
leniency draw v (N says met where v < se_s if O said met, v < 1 - sp_s if not; the marginal
rates unchanged): a judge lenient or strict on a reply as a whole, its errors correlated within
the reply and all moving the reply's met share the same way. In such worlds the study also runs
`label_shift` with the bridge's pairs resampled one by one (`BY_PAIR`), as before revision 2.
`prevalence` and `negative_prevalence` set the ranges of the strata's base shares (true scores
near 0 or 1).

Per replicate: a bridge of `bridge_examples` examples (O and N), a run of `run_examples` (N's
verdicts; O's kept as the truth); the bridged score and its interval computed by the package's
own code, as `bridge_run` computes them (`bridged`): the draws as the package's arrays
(`BridgeData.of_arrays`, `Layout.overall`), the estimator's weights, `Layout.means`, the
bootstrap `grading.bridge.estimate.bootstrap` (`resamples` resamples of the run's examples and,
independently, of the bridge as the estimator draws it, on the replicate's random stream) and
the estimator's own interval (`Estimator.interval`). On the same pairs and seed it gives
`bridge_run`'s numbers to the last digit (tests/grading/test_bridge_study.py).

Per method: bias and RMSE of the bridged score against O's own score, the mean interval width,
the share of replicates whose interval holds O's own score (coverage) and the share that holds
the model's expected score (`expected_score`: each slot's prevalence times its points over the
example's positive points, averaged over whether the consensus criterion is present).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from healthbench_exp.core.bridged import LABEL_SHIFT
from healthbench_exp.grading.bridge.cells import BridgeData, Cells
from healthbench_exp.grading.bridge.estimate import Counts, Estimator, Layout, bootstrap
from healthbench_exp.grading.bridge.label_shift import LabelShift
from healthbench_exp.grading.bridge.methods import ESTIMATORS

# the worlds, beside this file: importable whether this runs as `bench.bridge_simulation` (the
# tests) or beside a script (`bench/bridge_study.py`)
sys.path.insert(0, str(Path(__file__).parent))
from bridge_worlds import RARE_VERDICT, SCENARIOS, World

__all__ = ["RARE_VERDICT", "SCENARIOS", "World", "study"]

POSITIVE_SLOTS = 8  # positive criteria per example, over AXES strata
AXES = 5
CLUSTER_SHARE = 0.1  # share of examples with a consensus criterion (one cluster stratum)
SPARSE_CLUSTERS = 12  # `sparse`: that many cluster strata, a consensus criterion in 30%
SPARSE_SHARE = 0.3
BY_PAIR = "label_shift, pairs one by one"  # the study's own variant (`LabelShiftByPair`)
REVISION_2 = "label_shift, revision 2"  # the pooling rule before revision 3, for comparison


class LabelShiftByPair(LabelShift):
    """`label_shift` with the bridge's pairs resampled one by one within stratum and sign (as
    before revision 2) instead of by example: the study runs it beside `label_shift` where a
    judge's errors are correlated within a reply, to show what resampling by example fixes."""

    name = BY_PAIR
    by_example = False


class LabelShiftRevision2(LabelShift):
    """`label_shift` pooling as revision 2 did (both rates where n1 or n0 is under 30; J_s on
    the stratum's own rates): the package's one implementation (`LabelShift(2)`), run beside
    revision 3 in the rare-verdict worlds for docs/bridge.md's comparison."""

    name = REVISION_2

    def __init__(self) -> None:
        super().__init__(2)


STUDY_ESTIMATORS: dict[str, Estimator] = {
    **ESTIMATORS,
    BY_PAIR: LabelShiftByPair(),
    REVISION_2: LabelShiftRevision2(),
}


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
class WorldLayout:
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
    def of(cls, world: World, rng: np.random.Generator) -> WorldLayout:
        clusters = SPARSE_CLUSTERS if world.sparse else 1
        names = [(f"axis:{a}", True) for a in range(AXES)]
        names += [(f"cluster:{c}", True) for c in range(clusters)]
        strata = world.negative_strata
        names += [(f"axis:n{k}", False) for k in range(strata)]
        cells = Cells(names)
        axis = [cells.index[(f"axis:{i % AXES}", True)] for i in range(POSITIVE_SLOTS)]
        negative = [
            cells.index[(f"axis:n{i % strata}", False)] for i in range(world.negative_slots)
        ]
        cluster = [cells.index[(f"cluster:{c}", True)] for c in range(clusters)]
        points = [3 + (7 * i) % 8 for i in range(POSITIVE_SLOTS)]
        points += [-(2 + (5 * i) % 7) for i in range(world.negative_slots)] + [5]
        stratum_share = rng.uniform(*world.prevalence, len(names))
        negative_share = rng.uniform(*world.negative_prevalence, len(names))
        slot_stratum = np.array([*axis, *negative, cluster[0]])
        share = np.where(
            np.arange(len(slot_stratum)) < POSITIVE_SLOTS,
            stratum_share[slot_stratum],
            negative_share[slot_stratum],
        )
        share[-1] = stratum_share[cluster[0]]
        if world.rare_bridge_share:
            share[slot_stratum == cells.index[("axis:n0", False)]] = world.rare_bridge_share
        offset = world.spread * rng.uniform(-1, 1, len(points))
        offset += world.points_spread * (np.abs(points) - 6.5) / 3.5
        base = np.clip(share + offset, 0.02, 0.98)
        tilt = rng.uniform(-0.08, 0.08, len(names))
        se = np.clip(0.5 + world.j / 2 + tilt, 0.02, 0.99)
        if world.strata_se:
            se = np.resize(np.array(world.strata_se), len(names))
        sp = np.clip(0.5 + world.j / 2 - tilt, 0.02, 0.99)
        # the negative strata are the last `strata` of `cells.strata` (axis:n0, axis:n1, ...)
        chosen_sp = np.resize(np.array(world.negative_sp, dtype=float), strata)
        sp[-strata:] = np.where(chosen_sp > 0, chosen_sp, sp[-strata:])
        if world.negative_se:
            chosen_se = np.resize(np.array(world.negative_se, dtype=float), strata)
            se[-strata:] = np.where(chosen_se > 0, chosen_se, se[-strata:])
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
        negative_shift = -world.shift / 2 if world.negative_shift is None else world.negative_shift
        moved = self.base + np.where(positive, world.shift, negative_shift)
        if world.rare_run_share:
            first = self.cells.index[("axis:n0", False)]
            moved = np.where(self.slot_stratum == first, world.rare_run_share, moved)
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
        new = np.where(old, agree < se[stratum], agree >= self.sp[stratum])
        if correlation:
            # the reply's leniency: one draw v per reply; a criterion that takes it is met by N
            # where v < se (O met) or v < 1 - sp (O not met): a low v, N lenient on the whole
            # reply (more met where O said met and where it did not), a high v strict
            lenient = rng.random((examples, 1))
            shares = rng.random(shape) < correlation
            by_reply = lenient < np.where(old, se[stratum], 1 - self.sp[stratum])
            new = np.where(shares, by_reply, new)
        return stratum, old, new, present


def expected_score(world: World, layout: WorldLayout) -> float:
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


def bridge_data(
    layout: WorldLayout, stratum: np.ndarray, old: np.ndarray, new: np.ndarray, present: np.ndarray
) -> BridgeData:
    """The bridge's pairs (one source; examples in order) as the package's `BridgeData`."""
    examples, slots = stratum.shape
    example = np.broadcast_to(np.arange(examples)[:, None], (examples, slots))[present]
    points = np.broadcast_to(layout.slot_points, stratum.shape)[present]
    return BridgeData.of_arrays(
        layout.cells,
        stratum[present],
        example,
        points,
        new[present],
        old[present],
        np.zeros(examples, dtype=int),
    )


def run_layout(
    layout: WorldLayout, stratum: np.ndarray, new: np.ndarray, present: np.ndarray
) -> Layout:
    """The run's rows (N's verdicts) as the package's `Layout` of the overall score."""
    examples, slots = stratum.shape
    row = np.broadcast_to(np.arange(examples)[:, None], (examples, slots))[present]
    points = np.broadcast_to(layout.slot_points, stratum.shape)[present]
    cell = (2 * stratum + new)[present]
    return Layout.overall(layout.cells, row, cell, points, examples)


def replicate(
    world: World,
    layout: WorldLayout,
    rng: np.random.Generator,
    estimators: Sequence[Estimator],
    resamples: int,
) -> tuple[float, list[tuple[float, float, float]]]:
    """(O's own score on the run, per estimator (bridged, low, high)) of one replicate: the
    bridged score and its interval as `bridge_run` computes them (`Layout.means`,
    `grading.bridge.estimate.bootstrap`, `Estimator.interval`), the bootstrap on `rng`."""
    data = bridge_data(
        layout,
        *layout.draw(rng, world.bridge_examples, layout.base, layout.se, world.reply_correlation),
    )
    run_se = np.clip(layout.se + world.rates_change, 0.01, 0.99)
    stratum, old, new, present = layout.draw(
        rng, world.run_examples, layout.prevalence(world), run_se, world.reply_correlation
    )
    run = run_layout(layout, stratum, new, present)
    positive_den = np.where(present & (layout.slot_points > 0), layout.slot_points, 0.0).sum(1)
    own_points = np.where(old & present, layout.slot_points, 0.0).sum(axis=1) / positive_den
    own = float(np.clip(own_points.mean(), 0.0, 1.0))
    return own, [bridged(data, run, estimator, resamples, rng) for estimator in estimators]


def bridged(
    data: BridgeData, run: Layout, estimator: Estimator, resamples: int, rng: np.random.Generator
) -> tuple[float, float, float]:
    """(bridged score, low, high) of the run through the bridge, as `bridge_run` computes them
    (its estimator's weights, `Layout.means`, `grading.bridge.estimate.bootstrap` on `rng`,
    `Estimator.interval`): `bridge_run` with seed s gives the same digits as this with
    `np.random.default_rng(s)` (tests/grading/test_bridge_study.py)."""
    counts = Counts(*data.counts(), run.run_counts(), run.run_weights())
    score = float(run.means(estimator.weights(data.cells, counts))[0])
    draws = bootstrap(data, run, estimator, resamples, rng)[0][:, 0]
    interval = estimator.interval(score, draws, data.cells, counts)
    return score, interval.low, interval.high


def study(
    worlds: Sequence[World] = SCENARIOS,
    replicates: int = 1000,
    resamples: int = 200,
    seed: int = 0,
    methods: Sequence[str] = tuple(ESTIMATORS),
) -> list[Result]:
    """Every world's results per method (seeded by `seed` and the world's name: the same seed,
    the same numbers for a world, whichever worlds run beside it); in a world whose errors are
    correlated within a reply, `BY_PAIR` after the methods where they include `label_shift`."""
    results = []
    for world in worlds:
        # seeded by the world's name: a world's numbers do not depend on which others run
        rng = np.random.default_rng([seed, *world.name.encode()])
        layout = WorldLayout.of(world, rng)
        expected = expected_score(world, layout)
        chosen = [*methods, *[BY_PAIR] * bool(world.reply_correlation and LABEL_SHIFT in methods)]
        estimators = [STUDY_ESTIMATORS[m] for m in chosen]
        truth, found = [], []
        for _ in range(replicates):
            own, per = replicate(world, layout, rng, estimators, resamples)
            truth.append(own)
            found.append(per)
        own_all = np.array(truth)
        for m, method in enumerate(chosen):
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


def main() -> None:
    """`python bench/bridge_simulation.py`: the worlds the study runs, one a line (the study
    itself: `python bench/bridge_study.py`)."""
    parser = argparse.ArgumentParser(
        description="The bridge study's worlds (bench/bridge_study.py runs them)."
    )
    parser.parse_args()
    for world in SCENARIOS:
        print(world)


if __name__ == "__main__":
    main()
