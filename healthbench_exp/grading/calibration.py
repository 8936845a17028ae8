"""Calibrated consensus rates (SPEC 7.3): a judge's met rate corrected by its error rates.

From a meta-eval run of judge J, per category c: the physicians' majority on each row (a tie is
left out), and over the rows J graded (ungraded rows are left out) the sensitivity
Se_c = share of majority-positive rows J graded met, and the specificity Sp_c = share of
majority-negative rows J graded not met (n_pos, n_neg rows behind them). In an eval run graded
by J, p_c = share of the graded criteria with the `cluster:` tag c that J graded met. The
Rogan-Gladen estimate of the true rate is

    corrected_c = clip((p_c + Sp_c - 1) / (Se_c + Sp_c - 1), 0, 1)

not computed (with the reason) where Se_c + Sp_c - 1 <= MIN_YOUDEN or n_pos < MIN_ROWS or
n_neg < MIN_ROWS. Its 95% interval: `samples` seeded bootstrap resamples of the eval examples
(each example's criteria with the tag together) and, independently, of the category's usable
meta-eval rows; the 2.5th and 97.5th percentiles of the corrected value over the resamples
(a resample where Se + Sp - 1 <= 0 has no corrected value and is left out).

Plain lists in, plain values out; no config, no files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from healthbench_exp.core.calibrated_record import CalibratedCategory
from healthbench_exp.core.intervals import BootstrapResult
from healthbench_exp.grading.bridge.rates import rogan_gladen as corrected_share
from healthbench_exp.grading.resampling import bootstrap

MIN_YOUDEN = 0.1  # Se + Sp - 1 at most this: the judge barely tells met from not met
MIN_ROWS = 20  # majority-positive and majority-negative meta-eval rows needed, each
EPSILON = 1e-9  # float slack at the threshold: 12/20 + 10/20 - 1 is 0.1 exactly


def majority(labels: Sequence[bool]) -> bool | None:
    """The physicians' majority label; None on a tie (or no label)."""
    met = sum(bool(x) for x in labels)
    unmet = len(labels) - met
    return None if met == unmet else met > unmet


def usable_pairs(
    verdicts: Sequence[bool | None], labels: Sequence[Sequence[bool]]
) -> list[tuple[bool, bool]]:
    """(judge verdict, physicians' majority) of each row the judge graded and the physicians
    did not tie on."""
    pairs = []
    for verdict, row_labels in zip(verdicts, labels, strict=True):
        truth = majority(row_labels)
        if verdict is not None and truth is not None:
            pairs.append((bool(verdict), truth))
    return pairs


@dataclass(frozen=True)
class ErrorRates:
    """A judge's sensitivity and specificity (None where undefined: no rows of that class)."""

    sensitivity: float | None
    specificity: float | None
    n_pos: int
    n_neg: int


def observed_error_rates(pairs: Sequence[tuple[bool, bool]]) -> ErrorRates:
    """Se and Sp of (verdict, majority) pairs (`usable_pairs`) as the observed shares: Se = met
    verdicts / positives, Sp = unmet verdicts / negatives (the bridge's `error_rates` is another
    estimator: Jeffreys', (k + 0.5) / (n + 1))."""
    positives = [v for v, truth in pairs if truth]
    negatives = [v for v, truth in pairs if not truth]
    se = sum(positives) / len(positives) if positives else None
    sp = sum(not v for v in negatives) / len(negatives) if negatives else None
    return ErrorRates(se, sp, len(positives), len(negatives))


def checked_rogan_gladen(observed: float, sensitivity: float, specificity: float) -> float:
    """clip((p + Sp - 1) / (Se + Sp - 1), 0, 1), the bridge's `rogan_gladen` (which floors
    Se + Sp - 1 for its resamples), refusing instead: Se + Sp - 1 must be positive."""
    youden = sensitivity + specificity - 1
    if youden <= 0:
        raise ValueError(f"Se + Sp - 1 = {youden:g} <= 0: no correction")
    return corrected_share(observed, sensitivity, specificity)


def not_corrected_reason(rates: ErrorRates) -> str | None:
    """Why a category's rate is not corrected (every reason, '; '-joined), else None."""
    reasons = []
    if rates.n_pos < MIN_ROWS:
        reasons.append(f"n_pos {rates.n_pos} < {MIN_ROWS}")
    if rates.n_neg < MIN_ROWS:
        reasons.append(f"n_neg {rates.n_neg} < {MIN_ROWS}")
    if rates.sensitivity is not None and rates.specificity is not None:
        youden = rates.sensitivity + rates.specificity - 1
        if youden <= MIN_YOUDEN + EPSILON:
            reasons.append(f"Se + Sp - 1 = {youden:.3f} <= {MIN_YOUDEN}")
    return "; ".join(reasons) or None


@dataclass(frozen=True)
class CalibratedRate:
    """One category's calibrated rate: `corrected` (None: not corrected, see `reason`) and
    its bootstrap (`core.intervals.BootstrapResult` around `corrected`: its 95% percentile
    interval and the draws' std; None when not corrected or when no resample has a corrected
    value). `record()`: summary.json's `calibrated.criteria` row."""

    category: str
    n_eval: int  # graded eval criteria with the tag
    observed: float | None  # p_c; None: no graded criterion
    sensitivity: float | None
    specificity: float | None
    n_pos: int
    n_neg: int
    corrected: float | None
    bootstrap: BootstrapResult | None
    reason: str | None  # why not corrected; None when corrected

    def record(self) -> CalibratedCategory:
        """summary.json's row: the interval written flat as `ci_low` / `ci_high`."""
        interval = None if self.bootstrap is None else self.bootstrap.interval
        return CalibratedCategory(
            self.category,
            self.n_eval,
            self.observed,
            self.sensitivity,
            self.specificity,
            self.n_pos,
            self.n_neg,
            self.corrected,
            None if interval is None else interval.low,
            None if interval is None else interval.high,
            self.reason,
        )


def calibrate(
    category: str,
    eval_examples: Sequence[tuple[int, int]],
    meta_pairs: Sequence[tuple[bool, bool]],
    samples: int = 1000,
    seed: int = 0,
) -> CalibratedRate:
    """The calibrated rate of one category.

    `eval_examples`: per eval example with graded criteria of the tag, (met, graded) counts over
    its rollouts; `meta_pairs`: the category's `usable_pairs` of the meta-eval run.
    """
    met = sum(m for m, _ in eval_examples)
    graded = sum(n for _, n in eval_examples)
    observed = met / graded if graded else None
    rates = observed_error_rates(meta_pairs)
    reason = not_corrected_reason(rates)
    if observed is None:
        reason = "; ".join(r for r in ("no graded eval criterion", reason) if r)
    corrected = result = None
    if reason is None:
        assert observed is not None and rates.sensitivity is not None
        assert rates.specificity is not None
        corrected = checked_rogan_gladen(observed, rates.sensitivity, rates.specificity)
        result = corrected_bootstrap(corrected, eval_examples, meta_pairs, samples, seed)
    return CalibratedRate(
        category,
        graded,
        observed,
        rates.sensitivity,
        rates.specificity,
        rates.n_pos,
        rates.n_neg,
        corrected,
        result,
        reason,
    )


def corrected_bootstrap(
    corrected: float,
    eval_examples: Sequence[tuple[int, int]],
    meta_pairs: Sequence[tuple[bool, bool]],
    samples: int,
    seed: int,
) -> BootstrapResult | None:
    """The bootstrap of the corrected rate (`corrected`, on the data itself) over resamples of
    the eval's examples and the meta-eval's rows, each drawn anew (`grading.resampling`): its
    2.5th and 97.5th percentiles and std; None when no resample has a corrected value."""
    counts = np.asarray(eval_examples, dtype=float).reshape(-1, 2)
    verdict = np.asarray([v for v, _ in meta_pairs], dtype=float)
    truth = np.asarray([t for _, t in meta_pairs], dtype=bool)

    def resampled(examples: np.ndarray, rows: np.ndarray) -> float | None:
        drawn = counts[examples].sum(axis=0)
        v, t = verdict[rows], truth[rows]
        n_pos, n_neg = t.sum(), (~t).sum()
        if drawn[1] == 0 or n_pos == 0 or n_neg == 0:
            return None
        se = v[t].sum() / n_pos
        sp = (1 - v[~t]).sum() / n_neg
        if se + sp - 1 <= 0:
            return None
        return checked_rogan_gladen(drawn[0] / drawn[1], float(se), float(sp))

    return bootstrap(resampled, (len(counts), len(meta_pairs)), samples, seed, corrected)
