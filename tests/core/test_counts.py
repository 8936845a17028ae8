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
            result([], error="APITimeoutError"),  # failed
            result([grade(None), grade(None)]),  # a reply, nothing graded: unscorable
            # stopped by the budget: not run, though it has an error; the criterion it left is
            # neither graded nor ungraded
            result([grade(True), grade(None, not_run=True)], error="not run", not_run=True),
        ]
    )
    assert counts.summary_fields() == {
        "rows": 4,
        "rows_scored": 1,
        "rows_failed": 1,
        "rows_unscorable": 1,
        "rows_not_run": 1,
        "criteria_graded": 3,
        "ungraded_criteria": 3,
    }
    assert counts.progress_fields() == {
        "scored": 1,
        "failed": 1,
        "not_run": 1,
        "ungraded_criteria": 3,
    }
    assert (counts.finished, counts.pending) == (4, 0)
    partial = RunCounts(rows=5)
    partial.add(result([grade(True)], metrics={"overall_score": 1.0}))
    assert (partial.finished, partial.pending, partial.scored) == (1, 4, 1)


def test_meta_eval_rows_are_one_criterion_graded_once() -> None:
    counts = RunCounts(rows=4)
    for g in (grade(True), grade(False), grade(None), grade(None, not_run=True)):
        counts.add_grade(g)
    assert counts.summary_fields() == {
        "rows": 4,
        "rows_scored": 2,
        "rows_failed": 0,
        "rows_unscorable": 1,
        "rows_not_run": 1,
        "criteria_graded": 2,
        "ungraded_criteria": 1,
    }
