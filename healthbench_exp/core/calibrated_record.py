"""`calibrated` of summary.json: an eval's consensus met rates corrected by its judge's error
rates against physicians (SPEC 7.3, `grading.calibration`)."""

from __future__ import annotations

from dataclasses import dataclass

from healthbench_exp.core.record import Record


@dataclass
class CalibratedCategory(Record):
    """One `cluster:` category's calibrated consensus rate (SPEC 7.3, `grading.calibration`)."""

    category: str
    n_eval: int  # graded eval criteria with the tag
    observed: float | None  # the judge's met rate p_c in this run
    sensitivity: float | None  # against the physicians' majority, in the meta-eval run
    specificity: float | None
    n_pos: int  # majority-positive meta-eval rows the judge graded
    n_neg: int
    corrected: float | None  # Rogan-Gladen; None: not corrected (see `reason`)
    ci_low: float | None  # 95% bootstrap interval of `corrected`
    ci_high: float | None
    reason: str | None  # why not corrected


@dataclass
class Calibrated(Record):
    """`calibrated` of an eval run with `calibration.meta_eval_run`: beside the reference
    metrics, never instead of them."""

    meta_eval_run: str  # the meta-eval run's directory, as given
    judge: str  # the judge both runs were graded by
    criteria: list[CalibratedCategory]
