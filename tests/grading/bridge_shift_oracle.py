"""An independent re-statement of the `label_shift` bridge (SPEC 7.5 revised, docs/bridge.md)
for the tests: plain loops over dicts, written from the spec's formulas, never calling the
package's bridge code.

Per stratum and sign: se = (a + 0.5) / (n1 + 1), sp = (b + 0.5) / (n0 + 1) from the bridge;
the sign's pooled se and sp where n1 < 30, n0 < 30 or se + sp - 1 < 0.2; from the run's scored
rows, m = met / graded (the sign's pooled m, se and sp under 30 graded); pi = clip((m - (1 -
sp)) / (se + sp - 1), 0, 1); w(met) = se pi / (se pi + (1 - sp)(1 - pi)), w(not) = (1 - se) pi
/ ((1 - se) pi + sp (1 - pi)).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from healthbench_exp.grading.bridge.estimate import Pair, RunRow
from tests.grading.bridge_oracle import QFn, stratum


@dataclass
class Stratum:
    n1: int
    n0: int
    se: float
    sp: float
    run_n: float
    run_met: float
    pi: float
    w_met: float
    w_not: float
    pooled: list[str]


def scored(rows: Sequence[RunRow]) -> list[RunRow]:
    """Rows with graded positive points (the ones the bridged score counts)."""
    out = []
    for row in rows:
        den = sum(
            c.points
            for c, v in zip(row.criteria, row.verdicts, strict=True)
            if v is not None and c.points > 0
        )
        if den > 0:
            out.append(row)
    return out


def shift_table(
    pairs: Sequence[Pair], rows: Sequence[RunRow], weight: Sequence[int] | None = None
) -> dict[tuple[str, bool], Stratum]:
    """Every stratum and sign of the bridge and the run (and ("pooled", sign)); the run's
    counts over its scored rows (each counted `weight` times)."""
    chosen = scored(rows)
    weights = [1] * len(chosen) if weight is None else list(weight)
    observed = [
        (stratum(c), c.points > 0, v, w)
        for row, w in zip(chosen, weights, strict=True)
        for c, v in zip(row.criteria, row.verdicts, strict=True)
        if v is not None
    ]
    keys = {(stratum(c), c.points > 0) for row in rows for c in row.criteria}
    return table_of(pairs, observed, keys)


def table_of(
    pairs: Sequence[Pair], observed: Sequence[tuple[str, bool, bool, float]], keys: set
) -> dict[tuple[str, bool], Stratum]:
    """The table from the pairs and the run's (stratum, positive, N's verdict, count)."""
    o_met: dict = defaultdict(int)
    both_met: dict = defaultdict(int)
    o_not: dict = defaultdict(int)
    both_not: dict = defaultdict(int)
    run_n: dict = defaultdict(float)
    run_met: dict = defaultdict(float)
    keys = set(keys) | {(s, positive) for s, positive, _, _ in observed}
    for p in pairs:
        key = (p.stratum, p.points > 0)
        keys.add(key)
        for k in (key, ("pooled", key[1])):
            if p.old:
                o_met[k] += 1
                both_met[k] += p.new
            else:
                o_not[k] += 1
                both_not[k] += not p.new
    for s, positive, v, w in observed:
        for k in ((s, positive), ("pooled", positive)):
            run_n[k] += w
            run_met[k] += w * v

    def weights_for(se: float, sp: float, m: float) -> tuple[float, float, float]:
        j = se + sp - 1
        pi = min(1.0, max(0.0, (m - (1 - sp)) / j))
        w_met = se * pi / (se * pi + (1 - sp) * (1 - pi))
        w_not = (1 - se) * pi / ((1 - se) * pi + sp * (1 - pi))
        return pi, w_met, w_not

    table = {}
    for sign in {k[1] for k in keys}:
        k = ("pooled", sign)
        se = (both_met[k] + 0.5) / (o_met[k] + 1)
        sp = (both_not[k] + 0.5) / (o_not[k] + 1)
        m = run_met[k] / run_n[k] if run_n[k] else 0.0
        table[k] = Stratum(
            o_met[k], o_not[k], se, sp, run_n[k], run_met[k], *weights_for(se, sp, m), []
        )
    for key in keys:
        pool = table[("pooled", key[1])]
        se = (both_met[key] + 0.5) / (o_met[key] + 1)
        sp = (both_not[key] + 0.5) / (o_not[key] + 1)
        reasons = []
        if o_met[key] < 30 or o_not[key] < 30:
            reasons.append("bridge")
        if se + sp - 1 < 0.2:
            reasons.append("near_chance")
        if run_n[key] < 30:
            reasons.append("run")
        if reasons:
            se, sp = pool.se, pool.sp
        if run_n[key] < 30:
            m = pool.run_met / pool.run_n if pool.run_n else 0.0
        else:
            m = run_met[key] / run_n[key]
        table[key] = Stratum(
            o_met[key],
            o_not[key],
            se,
            sp,
            run_n[key],
            run_met[key],
            *weights_for(se, sp, m),
            reasons,
        )
    return table


def shift_q(
    pairs: Sequence[Pair], rows: Sequence[RunRow], weight: Sequence[int] | None = None
) -> QFn:
    """The weight of a criterion of (stratum, positive) with N's verdict."""
    table = shift_table(pairs, rows, weight)

    def q(s: str, positive: bool, verdict: bool) -> float:
        row = table[(s, positive)]
        return row.w_met if verdict else row.w_not

    return q
