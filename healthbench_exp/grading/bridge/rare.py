"""Strata whose rare verdict a run gives far more often than the bridge did (SPEC 7.5
revision 3; docs/bridge.md, "When a stratum needs more bridge replies").

Where one of the reference grader O's verdicts is rare in a stratum of the bridge (fewer than
`MIN_PAIRS` pairs with it), `label_shift` takes its sign's pooled rate for that verdict (se for
`met`, sp for `not`). That is right while the run gives the verdict about as rarely; where the
run gives it far more often (`FAR_MORE` times the bridge's share and at least `MIN_GAP` above
it), the stratum's bridged figure rests on the pooled rate, which can be far from the
stratum's own (the study's edge case: se 0.60 against the sign's 0.93, the run meeting 0.17
against the bridge's 0.02-0.03: its `bridged:<tag>` figure off by 0.05-0.08 in pi).

- `rare_verdicts(rows)`: from a bridged run's strata (`BridgeStratum`, the run's share: pi).
- `rare_by_source(pairs)`: the bridge kit's check: each source in turn as the run (its own
  O verdicts, where it has at least `MIN_PAIRS` pairs in the stratum), the others as the bridge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from healthbench_exp.core.bridged import (
    MET,
    NEGATIVE,
    NOT_MET,
    POSITIVE,
    BridgeStratum,
    RareVerdict,
)
from healthbench_exp.grading.bridge.cells import MIN_PAIRS, POOLED, Pair

FAR_MORE = 3.0  # the run's share at least this many times the bridge's
MIN_GAP = 0.05  # and at least this much above it


def _rare(
    stratum: str, sign: str, n1: int, n0: int, run_met: float, source: str | None = None
) -> list[RareVerdict]:
    """The verdicts (met, not) rare in the bridge's n1 + n0 pairs that the run (its met share
    `run_met`) gives far more often."""
    out = []
    total = n1 + n0
    for verdict, count, run_share in ((MET, n1, run_met), (NOT_MET, n0, 1 - run_met)):
        share = count / total if total else 0.0
        if count < MIN_PAIRS and run_share >= FAR_MORE * share and run_share >= share + MIN_GAP:
            out.append(RareVerdict(stratum, sign, verdict, count, share, run_share, source))
    return out


def rare_verdicts(rows: Sequence[BridgeStratum]) -> list[RareVerdict]:
    """A bridged run's strata (label_shift's, with the run's criteria) whose rare verdict in
    the bridge the run gives far more often (its pi: O's met share there)."""
    out = []
    for row in rows:
        if row.stratum == POOLED or row.pi is None or not row.run_n:
            continue
        out += _rare(row.stratum, row.sign, row.n_o_met or 0, row.n_o_not or 0, row.pi)
    return out


def rare_by_source(pairs: Sequence[Pair], models: Sequence[str]) -> list[RareVerdict]:
    """Each source (`models[source]`) as the run, the other sources as the bridge: the strata
    whose rare verdict among the others' pairs that source's replies get far more often from
    O (its own share, where it has at least MIN_PAIRS pairs in the stratum)."""
    met: Counter[tuple[int, str, bool]] = Counter()
    total: Counter[tuple[int, str, bool]] = Counter()
    for p in pairs:
        key = (p.source, p.stratum, p.points > 0)
        total[key] += 1
        met[key] += p.old
    strata = sorted({(s, positive) for _, s, positive in total}, key=lambda k: (not k[1], k[0]))
    out = []
    for source, model in enumerate(models):
        for stratum, positive in strata:
            own = total[(source, stratum, positive)]
            if own < MIN_PAIRS:
                continue
            others = [i for i in range(len(models)) if i != source]
            n1 = sum(met[(i, stratum, positive)] for i in others)
            n = sum(total[(i, stratum, positive)] for i in others)
            sign = POSITIVE if positive else NEGATIVE
            share = met[(source, stratum, positive)] / own
            out += _rare(stratum, sign, n1, n - n1, share, model)
    return out
