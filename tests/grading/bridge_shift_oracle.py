"""An independent re-statement of the `label_shift` bridge (SPEC 7.5 revision 3, docs/bridge.md)
for the tests: plain loops over dicts, written from the spec's formulas, never calling the
package's bridge code.

Per stratum and sign: se = (a + 0.5) / (n1 + 1), sp = (b + 0.5) / (n0 + 1) from the bridge;
each rate on its own count: the sign's pooled se where n1 < 30, the sign's pooled sp where
n0 < 30; then both pooled where se + sp - 1 of the rates so chosen is below 0.1 (`revision=2`:
both pooled where n1 < 30 or n0 < 30 or the stratum's own se + sp - 1 < 0.1); from the run's scored
rows, m = sum(c [N met]) / sum(c), c = |points| / the graded positive points of the
criterion's example (the sign's pooled m, weighted the same way, se and sp under 30 graded
criteria, a count); pi = clip((m - (1 - sp)) / (se + sp - 1), 0, 1); w(met) = se pi / (se pi +
(1 - sp)(1 - pi)), w(not) = (1 - se) pi / ((1 - se) pi + sp (1 - pi)).

`shift_bootstrap`: the interval, revision 2: per resample the scored rows drawn with
replacement (`integers`), then the bridge's examples (sorted by source and example) drawn with
replacement within their source (one uniform each, in that order), each drawn example bringing
all its pairs; the estimate +- 1.96 standard deviations of the resampled metric, clipped to
[0, 1]; where a stratum with criteria in the run has pi at 0 or 1 in the estimate, each end
moved out to the resampled metric's 2.5th or 97.5th percentile where that lies further out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from healthbench_exp.grading.bridge.cells import Pair, RunRow
from tests.grading.bridge_oracle import QFn, metrics_of, stratum


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
    rates: str | None  # which rates are the sign's: se, sp, both (None: neither)


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
    pairs: Sequence[Pair],
    rows: Sequence[RunRow],
    weight: Sequence[int] | None = None,
    revision: int = 3,
) -> dict[tuple[str, bool], Stratum]:
    """Every stratum and sign of the bridge and the run (and ("pooled", sign)); the run's
    counts over its scored rows (each counted `weight` times)."""
    chosen = scored(rows)
    weights = [1] * len(chosen) if weight is None else list(weight)
    observed = []
    for row, w in zip(chosen, weights, strict=True):
        graded = [(c, v) for c, v in zip(row.criteria, row.verdicts, strict=True) if v is not None]
        den = sum(c.points for c, _ in graded if c.points > 0)
        observed += [(stratum(c), c.points > 0, v, w, abs(c.points) / den) for c, v in graded]
    keys = {(stratum(c), c.points > 0) for row in rows for c in row.criteria}
    return table_of(pairs, observed, keys, revision)


def table_of(
    pairs: Sequence[Pair],
    observed: Sequence[tuple[str, bool, bool, float, float]],
    keys: set,
    revision: int = 3,
) -> dict[tuple[str, bool], Stratum]:
    """The table from the pairs and the run's (stratum, positive, N's verdict, count, c: the
    criterion's |points| over its example's positive points)."""
    o_met: dict = defaultdict(int)
    both_met: dict = defaultdict(int)
    o_not: dict = defaultdict(int)
    both_not: dict = defaultdict(int)
    run_n: dict = defaultdict(float)
    run_met: dict = defaultdict(float)
    run_c: dict = defaultdict(float)
    run_c_met: dict = defaultdict(float)
    keys = set(keys) | {(s, positive) for s, positive, _, _, _ in observed}
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
    for s, positive, v, w, c in observed:
        for k in ((s, positive), ("pooled", positive)):
            run_n[k] += w
            run_met[k] += w * v
            run_c[k] += w * c
            run_c_met[k] += w * c * v

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
        m = run_c_met[k] / run_c[k] if run_c[k] else 0.0
        table[k] = Stratum(
            o_met[k], o_not[k], se, sp, run_n[k], run_met[k], *weights_for(se, sp, m), [], None
        )
    for key in keys:
        pool = table[("pooled", key[1])]
        se = (both_met[key] + 0.5) / (o_met[key] + 1)
        sp = (both_not[key] + 0.5) / (o_not[key] + 1)
        reasons = []
        pool_se = pool_sp = False
        if revision == 2:
            if o_met[key] < 30 or o_not[key] < 30:
                reasons.append("bridge")
                pool_se = pool_sp = True
        else:
            if o_met[key] < 30:
                reasons.append("few_o_met")
                se, pool_se = pool.se, True
            if o_not[key] < 30:
                reasons.append("few_o_not")
                sp, pool_sp = pool.sp, True
        if se + sp - 1 < 0.1:
            reasons.append("near_chance")
            pool_se = pool_sp = True
        if run_n[key] < 30:
            reasons.append("run")
            pool_se = pool_sp = True
        if pool_se:
            se = pool.se
        if pool_sp:
            sp = pool.sp
        rates = "both" if pool_se and pool_sp else "se" if pool_se else "sp" if pool_sp else None
        k = ("pooled", key[1])
        if run_n[key] < 30:
            m = run_c_met[k] / run_c[k] if run_c[k] else 0.0
        else:
            m = run_c_met[key] / run_c[key]
        table[key] = Stratum(
            o_met[key],
            o_not[key],
            se,
            sp,
            run_n[key],
            run_met[key],
            *weights_for(se, sp, m),
            reasons,
            rates,
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


def shift_bootstrap(
    rows: Sequence[RunRow], pairs: Sequence[Pair], samples: int, seed: int
) -> dict[str, list[float]]:
    """Each metric's interval, revision 2's resampling (see the module docstring), each
    resample pooled on its own counts."""
    scored_rows = scored(rows)
    point = metrics_of(scored_rows, shift_q(pairs, scored_rows), None)
    examples = sorted({(p.source, p.example) for p in pairs})
    by_example: dict = defaultdict(list)
    for p in pairs:
        by_example[(p.source, p.example)].append(p)
    of_source: dict = defaultdict(list)
    for key in examples:
        of_source[key[0]].append(key)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(samples):
        drawn_rows = rng.integers(0, max(1, len(scored_rows)), len(scored_rows))
        weight = [int((drawn_rows == r).sum()) for r in range(len(scored_rows))]
        u = rng.random(len(examples))
        drawn: list[Pair] = []
        for i, key in enumerate(examples):
            group = of_source[key[0]]
            drawn += by_example[group[int(u[i] * len(group))]]
        draws.append(metrics_of(scored_rows, shift_q(drawn, scored_rows, weight), weight))
    at_bound = any(
        row.run_n > 0 and row.pi in (0.0, 1.0)
        for key, row in shift_table(pairs, scored_rows).items()
        if key[0] != "pooled"
    )
    out = {}
    for name, value in point.items():
        defined = [d[name] for d in draws if not np.isnan(d.get(name, np.nan))]
        std = float(np.std(defined))
        low, high = max(0.0, value - 1.96 * std), min(1.0, value + 1.96 * std)
        if at_bound:
            low = min(low, float(np.percentile(defined, 2.5)))
            high = max(high, float(np.percentile(defined, 97.5)))
        out[name] = [low, high]
    return out
