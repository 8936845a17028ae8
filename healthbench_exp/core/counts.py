"""How many rows of a run are in which state: one count for every place that reports it.

The live progress bar, the end-of-run table, `summary.json` (`counts`), the W&B summary and the
reports all read these numbers, so a partial run tells one story. Every (example, rollout) row
is in exactly one state:

- `scored`: it has a score (every criterion the judge could grade counts);
- `failed`: no usable reply (a failed request, an empty reply, a file without one): not scored;
- `unscorable`: a reply, but every positive criterion ungraded (the judge gave no verdict);
- `not_run`: stopped by `budget.max_usd` before it finished: a resumed run does it;
- `pending`: not finished yet (while the run is going; zero at its end, unless a stopping
  signal held rows back or cut them short: summary.json counts those `rows_not_run` too).

Criteria: `ungraded_criteria` have no verdict after every attempt; criteria left by the budget
are not counted there (they are `not run`, not ungraded).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from healthbench_exp.core.types import CriterionGrade, ExampleResult


@dataclass
class RunCounts:
    """Rows by state, and criteria by outcome; `add` each finished row."""

    rows: int  # every row the run is to grade
    scored: int = 0
    failed: int = 0
    unscorable: int = 0
    not_run: int = 0
    criteria_graded: int = 0
    ungraded_criteria: int = 0

    @property
    def finished(self) -> int:
        return self.scored + self.failed + self.unscorable + self.not_run

    @property
    def pending(self) -> int:
        return self.rows - self.finished

    def add(self, result: ExampleResult) -> None:
        """Count one finished row."""
        self.add_row(
            scored=result.metrics is not None,
            failed=result.error is not None and not result.not_run,
            not_run=result.not_run,
            graded=sum(g.criteria_met is not None for g in result.grades),
            ungraded=sum(g.criteria_met is None and not g.not_run for g in result.grades),
        )

    def add_grade(self, grade: CriterionGrade) -> None:
        """Count one finished meta-eval row: one criterion, graded once."""
        verdict = grade.criteria_met is not None
        self.add_row(
            scored=verdict,
            failed=False,
            not_run=grade.not_run,
            graded=int(verdict),
            ungraded=int(not verdict and not grade.not_run),
        )

    def add_row(
        self, *, scored: bool, failed: bool, not_run: bool, graded: int, ungraded: int
    ) -> None:
        """Count one finished row given its state (meta-eval rows have no ExampleResult)."""
        if not_run:
            self.not_run += 1
        elif failed:
            self.failed += 1
        elif scored:
            self.scored += 1
        else:
            self.unscorable += 1
        self.criteria_graded += graded
        self.ungraded_criteria += ungraded

    @classmethod
    def of(cls, results: list[ExampleResult]) -> RunCounts:
        counts = cls(rows=len(results))
        for result in results:
            counts.add(result)
        return counts

    def progress_fields(self) -> dict[str, int]:
        """The progress bar's counters."""
        return {
            "scored": self.scored,
            "failed": self.failed,
            "not_run": self.not_run,
            "ungraded_criteria": self.ungraded_criteria,
        }

    def summary_fields(self) -> dict[str, int]:
        """The row and criteria counts of `summary.json` (`counts`)."""
        return {
            "rows": self.rows,
            "rows_scored": self.scored,
            "rows_failed": self.failed,
            "rows_unscorable": self.unscorable,
            # a row still pending at the end: a stopping signal held it back or cut it short
            "rows_not_run": self.not_run + self.pending,
            "criteria_graded": self.criteria_graded,
            "ungraded_criteria": self.ungraded_criteria,
        }
