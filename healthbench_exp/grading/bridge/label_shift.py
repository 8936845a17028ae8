"""The `label_shift` estimator of the bridge (SPEC 7.5; `grading.bridge` holds what it shares).

What it assumes: models differ in how many criteria they meet, and the new judge N's error
rates against the reference grader O, per stratum and sign, do not depend on which model wrote
the reply. Per stratum s (with its sign):

- From the bridge's pairs: se_s = (a + 0.5) / (n1 + 1), a pairs with O met and N met of n1 with
  O met; sp_s = (b + 0.5) / (n0 + 1), b with O and N not met of n0 with O not met. A stratum
  with n1 < 30 or n0 < 30 (`bridge`), or whose own J_s = se_s + sp_s - 1 is below 0.2
  (`near_chance`), takes its sign's pooled se and sp (the pairs of every stratum of that sign).
- From the run: m_s, the share of its graded criteria in s that N said met; a stratum with
  fewer than 30 of them (`run`) takes its sign's pooled m, se and sp. O's met share there:
  pi_s = clip((m_s - (1 - sp_s)) / J_s, 0, 1) (Rogan-Gladen).
- Each criterion's weight, by Bayes with the run's own pi_s: w_s(met) = se pi / (se pi +
  (1 - sp)(1 - pi)); w_s(not met) = (1 - se) pi / ((1 - se) pi + sp (1 - pi)).
- Refused (`refusal`) where a sign's pooled J is below 0.2 (N barely tells O's verdicts apart).

In a bootstrap resample every step is recomputed, pooling included; a resample whose pooled J
falls to 0 or below (possible only near the refusal's bound) divides by a tiny positive J.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from healthbench_exp.core.bridged import (
    FEW_PAIRS,
    FEW_RUN,
    LABEL_SHIFT,
    NEAR_CHANCE,
    NEGATIVE,
    POSITIVE,
    BridgeStratum,
)
from healthbench_exp.grading.bridge.estimate import MIN_PAIRS, POOLED, Cells, Counts

MIN_RUN = 30  # a stratum with fewer graded criteria in the run takes its sign's pooled m
MIN_J = 0.2  # a stratum's J below this takes its sign's pooled rates; a sign's: refused


def _by_sign(positive: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each stratum's sign's total of `values` (summed over the strata of that sign, along the
    last axis)."""
    plus = (values * positive).sum(axis=-1, keepdims=True)
    minus = (values * ~positive).sum(axis=-1, keepdims=True)
    totals: np.ndarray = np.where(positive, plus, minus)
    return totals


def _pi_and_weights(
    se: np.ndarray, sp: np.ndarray, m: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pi, w_met, w_not) from the error rates and N's met share (see the module docstring)."""
    j = se + sp - 1
    # mutmut: J <= 0 only in a resample of a bridge at the refusal's bound; the floor keeps the
    # division finite there and never moves a value where J is above it
    pi = np.clip((m - (1 - sp)) / np.maximum(j, 1e-9), 0.0, 1.0)  # pragma: no mutate
    w_met = se * pi / (se * pi + (1 - sp) * (1 - pi))
    w_not = (1 - se) * pi / ((1 - se) * pi + sp * (1 - pi))
    return pi, w_met, w_not


@dataclass
class Shift:
    """Every quantity of the estimator per stratum (the last axis, over `cells.strata`; leading
    axes are resamples), and each stratum's sign's pooled values beside it."""

    n1: np.ndarray  # bridge pairs with O met
    n0: np.ndarray  # with O not met
    se: np.ndarray  # as used (pooled where the stratum is)
    sp: np.ndarray
    run_n: np.ndarray  # the run's graded criteria
    run_met: np.ndarray  # of them, N said met
    pi: np.ndarray
    w_met: np.ndarray
    w_not: np.ndarray
    few_pairs: np.ndarray  # why pooled
    near_chance: np.ndarray
    few_run: np.ndarray
    pooled: tuple[np.ndarray, ...]  # the sign's (n1, n0, se, sp, run_n, run_met, pi, w_met, w_not)

    @classmethod
    def of(cls, cells: Cells, counts: Counts) -> Shift:
        n_not, n_met = counts.n[..., 0::2], counts.n[..., 1::2]
        k_not, k_met = counts.k[..., 0::2], counts.k[..., 1::2]
        n1, a = k_met + k_not, k_met
        n0, b = n_met - k_met + n_not - k_not, n_not - k_not
        run_n = counts.run[..., 0::2] + counts.run[..., 1::2]
        run_met = counts.run[..., 1::2]
        positive = cells.positive
        pn1, pa, pn0, pb = (_by_sign(positive, x) for x in (n1, a, n0, b))
        prun_n, prun_met = _by_sign(positive, run_n), _by_sign(positive, run_met)
        se_own, sp_own = (a + 0.5) / (n1 + 1), (b + 0.5) / (n0 + 1)
        se_pool, sp_pool = (pa + 0.5) / (pn1 + 1), (pb + 0.5) / (pn0 + 1)
        few_pairs = (n1 < MIN_PAIRS) | (n0 < MIN_PAIRS)
        # mutmut: no counts give J exactly 0.2 (`<=` for `<` changes nothing; tested both sides)
        near_chance = se_own + sp_own - 1 < MIN_J  # pragma: no mutate
        few_run = run_n < MIN_RUN
        pool = few_pairs | near_chance | few_run
        se = np.where(pool, se_pool, se_own)
        sp = np.where(pool, sp_pool, sp_own)
        m_pool = prun_met / np.maximum(prun_n, 1)
        # mutmut: the floor only keeps 0 / 0 away where few_run takes the pooled m anyway
        m = np.where(few_run, m_pool, run_met / np.maximum(run_n, 1))  # pragma: no mutate
        pi, w_met, w_not = _pi_and_weights(se, sp, m)
        pooled: tuple[np.ndarray, ...] = (pn1, pn0, se_pool, sp_pool, prun_n, prun_met)
        pooled += _pi_and_weights(se_pool, sp_pool, m_pool)
        return cls(
            n1,
            n0,
            se,
            sp,
            run_n,
            run_met,
            pi,
            w_met,
            w_not,
            few_pairs,
            near_chance,
            few_run,
            pooled,
        )

    def signs(self, cells: Cells) -> dict[bool, tuple[float, ...]]:
        """Each sign present: its pooled values (one set of counts, not resamples)."""
        out = {}
        for sign in (True, False):
            at = np.flatnonzero(cells.positive == sign)
            if len(at):
                out[sign] = tuple(float(v[at[0]]) for v in self.pooled)
        return out


class LabelShift:
    """`label_shift` (see the module docstring)."""

    name = LABEL_SHIFT
    by_old = True  # se and sp: N's agreement among the pairs where O gave a verdict

    def rates(self, cells: Cells, counts: Counts) -> np.ndarray:
        """Each stratum's own (unpooled) sp (cell `2 * s`) and se (cell `2 * s + 1`)."""
        k_not, k_met = counts.k[..., 0::2], counts.k[..., 1::2]
        n_not, n_met = counts.n[..., 0::2], counts.n[..., 1::2]
        out = np.empty(np.shape(counts.n))
        out[..., 1::2] = (k_met + 0.5) / (k_met + k_not + 1)
        out[..., 0::2] = (n_not - k_not + 0.5) / (n_met - k_met + n_not - k_not + 1)
        return out

    def weights(self, cells: Cells, counts: Counts) -> np.ndarray:
        shift = Shift.of(cells, counts)
        out = np.empty(np.shape(counts.n))
        out[..., 0::2], out[..., 1::2] = shift.w_not, shift.w_met
        return out

    def strata(self, cells: Cells, counts: Counts) -> list[BridgeStratum]:
        """Each stratum and sign as used, then each sign's pooled values."""
        s = Shift.of(cells, counts)
        out = []
        for i, (stratum, positive) in enumerate(cells.strata):
            reasons = [FEW_PAIRS] * bool(s.few_pairs[i]) + [NEAR_CHANCE] * bool(s.near_chance[i])
            out.append(
                _row(
                    stratum,
                    positive,
                    reasons + [FEW_RUN] * bool(s.few_run[i]),
                    (s.n1[i], s.n0[i], s.se[i], s.sp[i], s.run_n[i], s.run_met[i]),
                    (s.pi[i], s.w_met[i], s.w_not[i]),
                )
            )
        for positive, values in s.signs(cells).items():
            out.append(_row(POOLED, positive, [], values[:6], values[6:]))
        return out

    def refusal(self, cells: Cells, counts: Counts) -> str | None:
        """One line where a sign's pooled J is below MIN_J; else None."""
        s = Shift.of(cells, counts)
        for positive, (n1, n0, se, sp, *_) in s.signs(cells).items():
            # mutmut: no counts give J exactly 0.2 (tested on both sides)
            if se + sp - 1 < MIN_J:  # pragma: no mutate
                sign = POSITIVE if positive else NEGATIVE
                return (
                    f"the new judge barely tells the reference grader's verdicts apart on "
                    f"{sign} criteria (pooled J = se + sp - 1 = {se + sp - 1:.3f} < {MIN_J}, "
                    f"se {se:.3f}, sp {sp:.3f}, {int(n1)} + {int(n0)} bridge pairs): "
                    "bridge.method=label_shift refuses this bridge"
                )
        return None


def _row(
    stratum: str,
    positive: bool,
    pooled: list[str],
    counts: tuple[float, ...],
    shares: tuple[float, ...],
) -> BridgeStratum:
    n1, n0, se, sp, run_n, run_met = counts
    pi, w_met, w_not = shares
    return BridgeStratum(
        stratum,
        POSITIVE if positive else NEGATIVE,
        pooled=pooled,
        n_o_met=int(n1),
        n_o_not=int(n0),
        se=float(se),
        sp=float(sp),
        run_n=int(run_n),
        run_met=int(run_met),
        pi=float(pi),
        w_met=float(w_met),
        w_not=float(w_not),
    )
