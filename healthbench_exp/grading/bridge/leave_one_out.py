"""Leave one model out (SPEC 7.5, `transport`): the only check of the bridge's assumption that
the data can give, and only while the reference grader O still answers.

With bridge sources from two or more models, for each source i and each method: the bridge
built from the other sources' pairs, applied to source i's new-judge verdicts as if they were a
run (its pairs grouped by example: one row per example, each pair a criterion of its stratum
and sign), against O's own score on the same pairs (section 3: per example sum(points x O met)
/ positive points, the mean over the examples with positive points, clipped to [0, 1]: at
most 1 already).
`error`: bridged minus own; `ci`: the bridged score's 95% interval (the bootstrap of
`grading.bridge`, `samples` resamples, `seed`). A method whose assumption holds between the
models errs within its interval for every source; one error far outside says the models differ
where the method assumes they do not.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from healthbench_exp.core.intervals import Interval
from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.bridge.cells import OVERALL, Pair, RunRow
from healthbench_exp.grading.bridge.estimate import BridgeRefused, Estimator, bridge_run


@dataclass(frozen=True)
class Transported:
    """One source left out, through one method."""

    source: int
    method: str
    own: float | None  # O's own score on the source's pairs; None: no example scored
    bridged: float | None  # None: no example scored, or the method refused the other sources
    ci: Interval | None  # the bridged score's 95% interval
    refused: str | None = None  # the method's refusal of the other sources' bridge


def as_rows(pairs: Sequence[Pair]) -> list[RunRow]:
    """The pairs grouped by example as run rows, with N's verdicts."""
    by_example: dict[str, list[Pair]] = defaultdict(list)
    for p in pairs:
        by_example[p.example].append(p)
    return [
        RunRow(
            [],
            # mutmut: the criterion's text is never read (its stratum and points are)
            [Criterion("", p.points, (p.stratum,)) for p in group],  # pragma: no mutate
            [p.new for p in group],
        )
        for _, group in sorted(by_example.items())
    ]


def own_score(pairs: Sequence[Pair]) -> float | None:
    """O's own score on the pairs (see the module docstring)."""
    by_example: dict[str, list[Pair]] = defaultdict(list)
    for p in pairs:
        by_example[p.example].append(p)
    scores = []
    for group in by_example.values():
        # mutmut: a criterion of 0 points adds 0 either way
        den = sum(p.points for p in group if p.points > 0)  # pragma: no mutate
        if den > 0:
            scores.append(sum(p.points for p in group if p.old) / den)
    # clipped to [0, 1]: an example's score is at most 1 already, so only the floor can bite
    return max(0.0, sum(scores) / len(scores)) if scores else None


def leave_one_out(
    pairs: Sequence[Pair],
    sources: int,
    estimators: Mapping[str, Estimator],
    samples: int,
    seed: int,
) -> list[Transported]:
    """Each source left out, through each method (see the module docstring); [] with fewer
    than two sources."""
    if sources < 2:
        return []
    out = []
    for source in range(sources):
        held = [p for p in pairs if p.source == source]
        others = [p for p in pairs if p.source != source]
        own = own_score(held)
        rows = as_rows(held)
        for method, estimator in estimators.items():
            try:
                result = bridge_run(rows, others, samples, seed, estimator)
            except BridgeRefused as exc:
                out.append(Transported(source, method, own, None, None, str(exc)))
                continue
            bridged = result.metrics[OVERALL]
            out.append(Transported(source, method, own, bridged, result.ci[OVERALL]))
    return out
