"""Checks of a bridge (`grading.bridge`): on its own held-out examples, and between its sources.

- `holdout_error`: k-fold by example (k = FOLDS; the bridge's examples shuffled with the seed,
  the i-th in fold i mod k). For each fold, the estimator's weights from the other folds' pairs
  (pooling as the bridge pools), with the held-out fold's pairs as the run (their N verdicts
  per cell, each weighted by its |points| over its example's positive points: `label_shift`'s
  m; `calibration` ignores them); each held-out example's bridged
  score (its pairs, N's verdicts weighted) minus O's own score on the same pairs (section 3,
  not clipped); examples without positive points are left out. `mean`: the mean error over
  every example; `ci`: the 2.5th and 97.5th percentiles of that mean over `samples` seeded
  resamples of the examples.
- `spread`: with several sources (replies of different models), per cell where two or more
  sources have pairs, of the quantity the method holds fixed between models. `calibration`
  (`by_old` False): cells by N's verdict, the rate q = O's met share; `label_shift` (`by_old`
  True): cells by O's verdict, the rate N's agreement (se where O said met, sp where not). Each
  source's n, k and unpooled rate (Jeffreys); the largest minus the smallest; Pearson's
  chi-square test of one rate for every source (2 x S table; df = S - 1; 0 with p = 1 where
  every pair has the same outcome); `beyond_interval` where a source's rate lies outside the
  bridge's 95% bootstrap interval of the cell's rate (`rate_draws`, the same resamples as the
  bridged score's) and the test rejects at ALPHA.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from healthbench_exp.core.bridged import (
    MET,
    NEGATIVE,
    NOT_MET,
    POSITIVE,
    HoldoutError,
    SourceCell,
    SpreadCell,
)
from healthbench_exp.core.intervals import percentile_interval
from healthbench_exp.grading.bridge.cells import BridgeData, Cells, Pair
from healthbench_exp.grading.bridge.estimate import Counts, Estimator
from healthbench_exp.grading.bridge.rates import jeffreys

FOLDS = 5
ALPHA = 0.05


def holdout_error(
    pairs: Sequence[Pair],
    cells: Cells,
    estimator: Estimator,
    samples: int,
    seed: int,
    folds: int = FOLDS,
) -> HoldoutError:
    """The k-fold check of the bridge on its own examples (see the module docstring)."""
    examples = sorted({(p.source, p.example) for p in pairs})
    order = np.random.default_rng(seed).permutation(len(examples))
    fold_of = {examples[j]: i % folds for i, j in enumerate(order)}
    by_example: dict[tuple[int, str], list[Pair]] = defaultdict(list)
    for p in pairs:
        by_example[(p.source, p.example)].append(p)
    errors: list[float] = []
    for fold in range(folds):
        train = [p for p in pairs if fold_of[(p.source, p.example)] != fold]
        held_out = [p for p in pairs if fold_of[(p.source, p.example)] == fold]
        held_cells = [cells.cell(p.stratum, p.points > 0, p.new) for p in held_out]
        run = np.bincount(held_cells, minlength=2 * len(cells.strata)).astype(float)
        run_weight = np.bincount(
            held_cells,
            weights=[_share(p, by_example[(p.source, p.example)]) for p in held_out],
            minlength=2 * len(cells.strata),
        ).astype(float)
        counts = Counts(*BridgeData.of(train, cells).counts(), run, run_weight)
        q = estimator.weights(cells, counts)
        for key in examples:
            if fold_of[key] != fold:
                continue
            held = by_example[key]
            den = sum(p.points for p in held if p.points > 0)
            if den <= 0:
                continue
            bridged = sum(p.points * q[cells.cell(p.stratum, p.points > 0, p.new)] for p in held)
            own = sum(p.points for p in held if p.old)
            errors.append(float(bridged - own) / den)
    if not errors:
        return HoldoutError(None, None, folds, 0)
    values = np.asarray(errors)
    rng = np.random.default_rng(seed)
    means = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(samples)]
    interval = percentile_interval(means)
    return HoldoutError(float(values.mean()), interval.as_list(), folds, len(values))


def _share(pair: Pair, example: Sequence[Pair]) -> float:
    """The pair's |points| over its example's positive points (0: none), as the score weighs
    its criterion."""
    den = sum(p.points for p in example if p.points > 0)
    return abs(pair.points) / den if den > 0 else 0.0


def chi2_sf(statistic: float, df: int) -> float:
    """P(X >= statistic) for X chi-square with `df` degrees of freedom (regularized upper
    incomplete gamma Q(df / 2, statistic / 2): series below a + 1, continued fraction above)."""
    if df <= 0 or statistic <= 0:
        return 1.0
    a, x = df / 2.0, statistic / 2.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    # mutmut: both expansions converge near x = a + 1, so moving the switch a little changes the
    # value by about 1e-13; the loops stop long before their bound, and `<` or `<=` against a
    # 1e-15 relative step changes nothing
    if x < a + 1:  # pragma: no mutate
        term = total = 1.0 / a
        for n in range(1, 1000):  # pragma: no mutate
            term *= x / (a + n)
            total += term
            if abs(term) < abs(total) * 1e-15:  # pragma: no mutate
                break
        return max(0.0, 1.0 - math.exp(log_front) * total)
    b, c, d = x + 1 - a, 1e300, 1.0 / (x + 1 - a)
    h = d
    # mutmut: Lentz's guards against a zero d or c never fire for x >= a + 1 (both stay above 1);
    # without the stopping test the loop runs to its bound and h moves by under 1e-13
    for n in range(1, 1000):  # pragma: no mutate
        an = -n * (n - a)
        b += 2
        d = an * d + b
        d = 1e-300 if abs(d) < 1e-300 else d  # pragma: no mutate
        c = b + an / c
        c = 1e-300 if abs(c) < 1e-300 else c  # pragma: no mutate
        d = 1.0 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:  # pragma: no mutate
            break
    return min(1.0, math.exp(log_front) * h)


def chi2_equal_rates(counts: Sequence[tuple[int, int]]) -> tuple[float, int]:
    """Pearson's chi-square statistic and df for (n, k) per group: one rate for every group."""
    used = [(n, k) for n, k in counts if n > 0]
    total_n = sum(n for n, _ in used)
    total_k = sum(k for _, k in used)
    if len(used) < 2 or total_k in (0, total_n):
        return 0.0, max(0, len(used) - 1)
    rate = total_k / total_n
    statistic = 0.0
    for n, k in used:
        for observed, expected in ((k, n * rate), (n - k, n * (1 - rate))):
            statistic += (observed - expected) ** 2 / expected
    return statistic, len(used) - 1


def spread(
    pairs: Sequence[Pair],
    cells: Cells,
    q_draws: np.ndarray,
    sources: Sequence[str],
    by_old: bool = False,
) -> list[SpreadCell]:
    """Per cell where two or more sources have pairs: how the rate varies between them."""
    counts: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])  # (cell, source)
    for p in pairs:
        verdict = p.old if by_old else p.new
        tally = counts[(cells.cell(p.stratum, p.points > 0, verdict), p.source)]
        tally[0] += 1
        tally[1] += p.new == p.old if by_old else p.old
    out = []
    for index, (stratum, positive) in enumerate(cells.strata):
        for verdict in (True, False):
            cell = 2 * index + int(verdict)
            per = {s: counts.get((cell, s), [0, 0]) for s in range(len(sources))}
            present = {s: nk for s, nk in per.items() if nk[0] > 0}
            if len(present) < 2:
                continue
            qs = {s: jeffreys(k, n) for s, (n, k) in present.items()}
            interval = percentile_interval(q_draws[:, cell])
            statistic, df = chi2_equal_rates([(n, k) for n, k in present.values()])
            p_value = chi2_sf(statistic, df)
            outside = not all(interval.covers(q) for q in qs.values())
            n_all = sum(n for n, _ in present.values())
            k_all = sum(k for _, k in present.values())
            out.append(
                SpreadCell(
                    stratum,
                    POSITIVE if positive else NEGATIVE,
                    MET if verdict else NOT_MET,
                    jeffreys(k_all, n_all),
                    interval.as_list(),
                    {
                        sources[s]: SourceCell(n, k, jeffreys(k, n) if n else None)
                        for s, (n, k) in per.items()
                    },
                    max(qs.values()) - min(qs.values()),
                    statistic,
                    df,
                    p_value,
                    outside and p_value < ALPHA,
                )
            )
    return out
