"""`RunCounts`: each finished row lands in exactly one state, and criteria are counted as graded
or ungraded (a criterion the budget left is neither), by hand on small rows."""

from __future__ import annotations

from healthbench_exp.core.counts import RunCounts
from healthbench_exp.core.types import Criterion, CriterionGrade, Example, ExampleResult

EXAMPLE = Example(
    "p", ({"role": "user", "content": "hi"},), (Criterion("c", 5, ()),) * 3, (), None, "t"
)


def grade(met: bool | None, not_run: bool = False) -> CriterionGrade:
    return CriterionGrade(met, "", 1, not_run=not_run)


def result(grades: list[CriterionGrade], **fields: object) -> ExampleResult:
    return ExampleResult(EXAMPLE, 0, [], "reply", grades, **fields)  # type: ignore[arg-type]


def test_each_row_lands_in_one_state_and_criteria_are_counted() -> None:
    counts = RunCounts.of(
        [
            result([grade(True), grade(None), grade(False)], metrics={"overall_score": 0.5}),
            result([grade(True), grade(True)], metrics={"overall_score": 1.0}),
            result([], error="APITimeoutError"),  # failed
            result([grade(None), grade(None)], error="empty reply"),  # failed, ungraded
            result([grade(None), grade(None)]),  # a reply, nothing graded: unscorable
            result([grade(None)]),
            # stopped by the budget: not run, though it has an error; the criterion it left is
            # neither graded nor ungraded
            result([grade(True), grade(None, not_run=True)], error="not run", not_run=True),
            result([], error="not run", not_run=True),
        ]
    )
    assert counts.summary_fields() == {
        "rows": 8,
        "rows_scored": 2,
        "rows_failed": 2,
        "rows_unscorable": 2,
        "rows_not_run": 2,
        "criteria_graded": 5,
        "ungraded_criteria": 6,
    }
    assert counts.progress_fields() == {
        "scored": 2,
        "failed": 2,
        "not_run": 2,
        "ungraded_criteria": 6,
    }
    assert (counts.finished, counts.pending) == (8, 0)
    partial = RunCounts(rows=5)
    partial.add(result([grade(True)], metrics={"overall_score": 1.0}))
    assert (partial.finished, partial.pending, partial.scored) == (1, 4, 1)


def test_meta_eval_rows_are_one_criterion_graded_once() -> None:
    counts = RunCounts(rows=6)
    for g in (grade(True), grade(False), grade(True), grade(None), grade(None)):
        counts.add_grade(g)
    counts.add_grade(grade(None, not_run=True))
    assert counts.summary_fields() == {
        "rows": 6,
        "rows_scored": 3,
        "rows_failed": 0,
        "rows_unscorable": 2,
        "rows_not_run": 1,
        "criteria_graded": 3,
        "ungraded_criteria": 2,
    }
