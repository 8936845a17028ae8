"""`published` of summary.json: the run's headline beside each published number for its model
and set (`healthbench_exp.published`), best-matching first.

A comparison is `consistent` or `differs` (a two-sided test at 95% on run-to-run noise, see
docs/reproducing.md) or `not comparable` (a different grader, set or length policy, or one the
source does not state); `why` names every setting that blocks the comparison or differs from
the source's, `not_stated` the settings the source does not give.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from healthbench_exp.core.record import Record


class Verdict(Enum):
    """The outcome of comparing a score with a published one."""

    CONSISTENT = "consistent"  # within the 95% interval of run-to-run noise
    DIFFERS = "differs"  # outside it
    NOT_COMPARABLE = "not comparable"  # a grader, set or length policy that differs or is unknown
    PLANNED = "to compare"  # a dry run: comparable once the run has its score


@dataclass
class PublishedComparison(Record):
    """One published number beside the run's (see the module docstring)."""

    source: str  # the source's title, table or figure, and date
    url: str | None
    status: str  # `read ...` in the source, or `quoted by X`; `checked`: if it was re-read
    model: str  # as the source names it
    set: str
    metric: str  # the metric compared: overall_score | length_adjusted_score | bridged_score
    value: float  # the published number
    uncertainty: str  # as the source states it ("" where none)
    score: float | None  # the run's (None: not comparable before a score is known, a dry run)
    difference: float | None  # score - value
    interval: float | None  # half-width of the difference's 95% interval (run-to-run noise)
    verdict: str  # a `Verdict` value
    why: list[str] = field(default_factory=list)  # what blocks the comparison or differs
    not_stated: list[str] = field(default_factory=list)  # settings the source does not give
    noise: str = ""  # how the interval was formed
