"""The `label_shift` estimator of the bridge (SPEC 7.5 revision 3; `grading.bridge.estimate`
holds what it shares).

What it assumes: models differ in how many criteria they meet, and the new judge N's error
rates against the reference grader O, per stratum and sign, do not depend on which model wrote
the reply. Per stratum s (with its sign):

- From the bridge's pairs: se_s = (a + 0.5) / (n1 + 1), a pairs with O met and N met of n1 with
  O met; sp_s = (b + 0.5) / (n0 + 1), b with O and N not met of n0 with O not met. Each rate
  stands on its own count (revision 3): n1 < 30 takes the sign's pooled se (`few_o_met`), n0 <
  30 the sign's pooled sp (`few_o_not`; pooled: the pairs of every stratum of that sign), the
  other rate stays the stratum's own. Where J_s = se_s + sp_s - 1 of the rates so chosen is
  below 0.1 (`near_chance`), the stratum takes both pooled rates. (Revision 2, kept for the
  study's comparison as `LabelShift(2)`: n1 < 30 or n0 < 30 pooled both (`bridge`), and the
  J_s check was on the stratum's own rates; revision 1: that check at 0.2.)
- From the run: m_s, the share of its graded criteria in s that N said met, weighted as the
  score weights criteria: sum(c [N met]) / sum(c), c = |points| / the graded positive points of
  the criterion's example (`Counts.run_weight`); a stratum with fewer than 30 graded criteria
  (a count, `run`) takes its sign's pooled m (weighted the same way), se and sp. O's met share
  there: pi_s = clip((m_s - (1 - sp_s)) / J_s, 0, 1) (Rogan-Gladen).
- Each criterion's weight, by Bayes with the run's own pi_s: w_s(met) = se pi / (se pi +
  (1 - sp)(1 - pi)); w_s(not met) = (1 - se) pi / ((1 - se) pi + sp (1 - pi)).
- Refused (`refusal`) where a sign's pooled J is below 0.2 (N barely tells O's verdicts apart).

In a bootstrap resample every step is recomputed, the pooling decisions included (a stratum
near n1 = 30 pools its se in some resamples and not in others); a resample whose pooled J falls
to 0 or below (possible only near the refusal's bound) divides by a tiny positive J. The
bootstrap draws the bridge's examples within each source (`by_example`), and the interval is
the estimate +- 1.96 bootstrap standard deviations, clipped to [0, 1]; where the estimate has
some stratum of the run at a bound (pi clipped to 0 or 1), it is widened to hold the 2.5th and
97.5th percentiles of the draws too (`interval`; the study chose this form: see
docs/bridge.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from healthbench_exp.core.bridged import (
    BOTH,
    FEW_O_MET,
    FEW_O_NOT,
    FEW_PAIRS,
    FEW_RUN,
    LABEL_SHIFT,
    MET,
    NEAR_CHANCE,
    NEGATIVE,
    POSITIVE,
    SE,
    SP,
    BridgeStratum,
    SpreadCell,
)
from healthbench_exp.core.intervals import Interval, normal_interval, percentile_interval
from healthbench_exp.grading.bridge.cells import MIN_PAIRS, POOLED, Cells
from healthbench_exp.grading.bridge.estimate import Counts
from healthbench_exp.grading.bridge.rates import error_rates, rogan_gladen

REVISION = 3  # of SPEC 7.5's label_shift (summary.json's `bridged.revision`)
REVISIONS = (2, 3)  # the pooling rules `LabelShift` computes (2: for the study's comparison)
MIN_RUN = 30  # a stratum with fewer graded criteria (a count) in the run: its sign's pooled m
MIN_STRATUM_J = 0.1  # a stratum's own J below this: its sign's pooled rates (revision 1: 0.2)
MIN_J = 0.2  # a sign's pooled J below this: the bridge is refused


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
    pi = rogan_gladen(m, se, sp)
    w_met = se * pi / (se * pi + (1 - sp) * (1 - pi))
    w_not = (1 - se) * pi / ((1 - se) * pi + sp * (1 - pi))
    return pi, w_met, w_not


@dataclass
class SignPooled:
    """One sign's pooled values (every stratum of that sign together), as `Shift` names them."""

    n1: float
    n0: float
    se: float
    sp: float
    run_n: float
    run_met: float
    pi: float
    w_met: float
    w_not: float

    @property
    def j(self) -> float:
        """se + sp - 1."""
        return self.se + self.sp - 1


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
    few_o_met: np.ndarray  # why pooled: n1 < 30 (revision 3: its se; 2: both)
    few_o_not: np.ndarray  # n0 < 30 (revision 3: its sp; 2: both)
    near_chance: np.ndarray  # J below MIN_STRATUM_J (3: of the rates chosen; 2: its own): both
    few_run: np.ndarray  # fewer than MIN_RUN graded criteria in the run: both, and the pooled m
    pooled_se: np.ndarray  # whether se is its sign's pooled se
    pooled_sp: np.ndarray
    pooled: dict[str, np.ndarray]  # the sign's values, by `SignPooled`'s field names

    @classmethod
    def of(cls, cells: Cells, counts: Counts, revision: int = REVISION) -> Shift:
        """Every quantity from the counts (leading axes: resamples, each pooled on its own
        counts), by the pooling rule of `revision` (3, or 2 for the study's comparison)."""
        n_not, n_met = counts.n[..., 0::2], counts.n[..., 1::2]
        k_not, k_met = counts.k[..., 0::2], counts.k[..., 1::2]
        n1, a = k_met + k_not, k_met
        n0, b = n_met - k_met + n_not - k_not, n_not - k_not
        run_n = counts.run[..., 0::2] + counts.run[..., 1::2]
        run_met = counts.run[..., 1::2]
        # m weighted as the score weights criteria (revision 2): sum(c [N met]) / sum(c)
        weight_all = counts.run_weight[..., 0::2] + counts.run_weight[..., 1::2]
        weight_met = counts.run_weight[..., 1::2]
        positive = cells.positive
        pn1, pa, pn0, pb = (_by_sign(positive, x) for x in (n1, a, n0, b))
        prun_n, prun_met = _by_sign(positive, run_n), _by_sign(positive, run_met)
        pweight_all, pweight_met = _by_sign(positive, weight_all), _by_sign(positive, weight_met)
        se_own, sp_own = error_rates(n1, a, n0, b)
        se_pool, sp_pool = error_rates(pn1, pa, pn0, pb)
        few_o_met, few_o_not = n1 < MIN_PAIRS, n0 < MIN_PAIRS
        few_run = run_n < MIN_RUN
        if revision == 2:
            # both rates pooled where either count is short; J checked on the own rates
            few_pairs = few_o_met | few_o_not
            se_chosen, sp_chosen = se_own, sp_own
            pooled_se = pooled_sp = few_pairs
        else:
            # each rate on its own count; J checked on the rates so chosen
            se_chosen = np.where(few_o_met, se_pool, se_own)
            sp_chosen = np.where(few_o_not, sp_pool, sp_own)
            pooled_se, pooled_sp = few_o_met, few_o_not
        # mutmut: no counts give J exactly 0.1 (`<=` for `<` changes nothing; tested both sides)
        near_chance = se_chosen + sp_chosen - 1 < MIN_STRATUM_J  # pragma: no mutate
        pooled_se = pooled_se | near_chance | few_run
        pooled_sp = pooled_sp | near_chance | few_run
        se = np.where(pooled_se, se_pool, se_own)
        sp = np.where(pooled_sp, sp_pool, sp_own)
        # mutmut: the floors keep 0 / 0 away only where no criterion is weighed (m unused, or
        # the pooled m where few_run takes it anyway)
        m_pool = pweight_met / np.maximum(pweight_all, 1e-300)  # pragma: no mutate
        m_own = weight_met / np.maximum(weight_all, 1e-300)  # pragma: no mutate
        m = np.where(few_run, m_pool, m_own)
        pi, w_met, w_not = _pi_and_weights(se, sp, m)
        pi_pool, w_met_pool, w_not_pool = _pi_and_weights(se_pool, sp_pool, m_pool)
        pooled = {
            "n1": pn1,
            "n0": pn0,
            "se": se_pool,
            "sp": sp_pool,
            "run_n": prun_n,
            "run_met": prun_met,
            "pi": pi_pool,
            "w_met": w_met_pool,
            "w_not": w_not_pool,
        }
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
            few_o_met,
            few_o_not,
            near_chance,
            few_run,
            pooled_se,
            pooled_sp,
            pooled,
        )

    def reasons(self, i: int, revision: int = REVISION) -> list[str]:
        """Why stratum `i` (of one set of counts) takes pooled values, by `revision`'s names."""
        if revision == 2:
            short = [FEW_PAIRS] * bool(self.few_o_met[i] or self.few_o_not[i])
        else:
            short = [FEW_O_MET] * bool(self.few_o_met[i]) + [FEW_O_NOT] * bool(self.few_o_not[i])
        return short + [NEAR_CHANCE] * bool(self.near_chance[i]) + [FEW_RUN] * bool(self.few_run[i])

    def rates_pooled(self, i: int) -> str | None:
        """Which of stratum `i`'s rates are its sign's: `se`, `sp`, `both`; None: neither."""
        se, sp = bool(self.pooled_se[i]), bool(self.pooled_sp[i])
        return BOTH if se and sp else SE if se else SP if sp else None

    def signs(self, cells: Cells) -> dict[bool, SignPooled]:
        """Each sign present: its pooled values (one set of counts, not resamples)."""
        out = {}
        for sign in (True, False):
            at = np.flatnonzero(cells.positive == sign)
            if len(at):
                out[sign] = SignPooled(**{k: float(v[at[0]]) for k, v in self.pooled.items()})
        return out


class LabelShift:
    """`label_shift` (see the module docstring): revision 3, the CLI's and the study's; the
    study also builds `LabelShift(2)` to put revision 2's figures beside it."""

    name = LABEL_SHIFT
    by_old = True  # se and sp: N's agreement among the pairs where O gave a verdict
    by_example = True  # revision 2: a reply's verdicts travel together

    def __init__(self, revision: int = REVISION) -> None:
        if revision not in REVISIONS:
            raise ValueError(f"label_shift computes revisions {REVISIONS}, not {revision}")
        self.revision = revision

    def interval(self, point: float, draws: np.ndarray, cells: Cells, counts: Counts) -> Interval:
        """point +- 1.96 bootstrap standard deviations, clipped to [0, 1] (revision 2, as the
        headline's: near the ceiling pi is clipped at 1 in many resamples, which makes the
        percentile interval lopsided while the error is symmetric); where the estimate has a
        stratum of the run at a bound (`at_bound`), the smallest interval holding both that and
        the draws' 2.5th and 97.5th percentiles: there the resamples cannot cross the bound, so
        their standard deviation understates the estimate's error away from it (the study:
        coverage 0.925 near a true score of 0.05 without it)."""
        normal = normal_interval(point, float(np.std(draws)))
        if not self.at_bound(cells, counts):
            return normal
        spread = percentile_interval(draws)
        return Interval(min(normal.low, spread.low), max(normal.high, spread.high))

    def at_bound(self, cells: Cells, counts: Counts) -> bool:
        """Whether some stratum with graded criteria in the run has pi clipped to 0 or 1."""
        s = Shift.of(cells, counts, self.revision)
        return bool(((s.run_n > 0) & ((s.pi <= 0) | (s.pi >= 1))).any())

    def pooling_note(self, strata: int) -> str:
        if self.revision == 2:
            return (
                f"{strata} strata take their sign's pooled error rates (fewer than {MIN_PAIRS} "
                f"bridge pairs with either verdict of the reference grader, or J below "
                f"{MIN_STRATUM_J}) or the run's pooled met share (fewer than {MIN_RUN} graded "
                "criteria)"
            )
        return (
            f"{strata} strata take their sign's pooled se (fewer than {MIN_PAIRS} bridge pairs "
            f"where the reference grader said met), pooled sp (fewer than {MIN_PAIRS} where it "
            f"said not met), or both (J below {MIN_STRATUM_J}, or fewer than {MIN_RUN} graded "
            "criteria in the run: then the run's pooled met share too)"
        )

    def varies_note(self, first: SpreadCell, cells: int) -> str:
        rate = "se" if first.verdict == MET else "sp"
        return (
            f"the new judge's error rates vary between the bridge sources beyond the bridge's "
            f"interval in {cells} cells (e.g. {first.stratum} {first.sign}, {rate}): they "
            f"depend on the replies' model there, which {self.name} assumes they do not, and "
            "the interval does not cover that"
        )

    def rates(self, cells: Cells, counts: Counts) -> np.ndarray:
        """Each stratum's own (unpooled) sp (cell `2 * s`) and se (cell `2 * s + 1`)."""
        k_not, k_met = counts.k[..., 0::2], counts.k[..., 1::2]
        n_not, n_met = counts.n[..., 0::2], counts.n[..., 1::2]
        out = np.empty(np.shape(counts.n))
        se, sp = error_rates(k_met + k_not, k_met, n_met - k_met + n_not - k_not, n_not - k_not)
        out[..., 1::2], out[..., 0::2] = se, sp
        return out

    def weights(self, cells: Cells, counts: Counts) -> np.ndarray:
        shift = Shift.of(cells, counts, self.revision)
        out = np.empty(np.shape(counts.n))
        out[..., 0::2], out[..., 1::2] = shift.w_not, shift.w_met
        return out

    def strata(self, cells: Cells, counts: Counts) -> list[BridgeStratum]:
        """Each stratum and sign as used, then each sign's pooled values."""
        s = Shift.of(cells, counts, self.revision)
        out = []
        for i, (stratum, positive) in enumerate(cells.strata):
            row = _row(
                stratum,
                positive,
                s.reasons(i, self.revision),
                (s.n1[i], s.n0[i], s.se[i], s.sp[i], s.run_n[i], s.run_met[i]),
                (s.pi[i], s.w_met[i], s.w_not[i]),
            )
            row.pooled_rates = s.rates_pooled(i) if self.revision >= 3 else None
            out.append(row)
        for positive, p in s.signs(cells).items():
            out.append(
                _row(
                    POOLED,
                    positive,
                    [],
                    (p.n1, p.n0, p.se, p.sp, p.run_n, p.run_met),
                    (p.pi, p.w_met, p.w_not),
                )
            )
        return out

    def refusal(self, cells: Cells, counts: Counts) -> str | None:
        """One line where a sign's pooled J is below MIN_J; else None."""
        s = Shift.of(cells, counts, self.revision)
        for positive, p in s.signs(cells).items():
            # mutmut: no counts give J exactly 0.2 (tested on both sides)
            if p.j < MIN_J:  # pragma: no mutate
                sign = POSITIVE if positive else NEGATIVE
                return (
                    f"the new judge barely tells the reference grader's verdicts apart on "
                    f"{sign} criteria (pooled J = se + sp - 1 = {p.j:.3f} < {MIN_J}, "
                    f"se {p.se:.3f}, sp {p.sp:.3f}, {int(p.n1)} + {int(p.n0)} bridge pairs): "
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
