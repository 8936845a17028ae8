"""A jury in an eval (SPEC 7.1): each further judge grades every criterion of a row beside the
primary judge, and the run's summary gains the `jury` section (`grading.jury`).

Each further judge (`tasks.base.Juror`) grades with its own Completer (its endpoint, pacing,
cache entries and counters: `model.roles`), its own parse retries and its own calls in flight;
the run's metrics and headline stay the primary judge's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from healthbench_exp.config.schema import ScoringConfig
from healthbench_exp.core.summary import Jury
from healthbench_exp.core.types import Criterion, CriterionGrade, ExampleResult
from healthbench_exp.grading.grader import grade_criterion, rubric_item_text
from healthbench_exp.grading.jury import JuryRow, LengthSetting, jury_section
from healthbench_exp.tasks.base import Juror
from healthbench_exp.tasks.records import RecordedRow

log = logging.getLogger(__name__)


async def juror_grades(
    juror: Juror,
    conversation: str,
    criteria: Sequence[Criterion],
    rollout: int,
    max_parallel: int,
    order: str,
    prefix_key: str,
    recorded: tuple[RecordedRow, list[dict[str, str]], str] | None = None,
) -> list[CriterionGrade]:
    """`juror`'s grade of every criterion of one conversation, at most `max_parallel` at once.

    `recorded`: what an earlier invocation of the run recorded of this row, with the messages
    sent and the reply (`tasks.records`): the juror's recorded verdicts are not asked again."""
    slots = asyncio.Semaphore(max_parallel)

    async def one(index: int, criterion: Criterion) -> CriterionGrade:
        if recorded is not None:
            row, sent, reply = recorded
            known = row.member_grade(juror.name, sent, reply, index, criterion.text)
            if known is not None:
                return known
        async with slots:
            return await grade_criterion(
                juror.judge,
                conversation,
                rubric_item_text(criterion),
                juror.max_parse_retries,
                rollout,
                prefix_key=prefix_key,
                order=order,
            )

    return list(await asyncio.gather(*(one(i, c) for i, c in enumerate(criteria))))


def jury_row(result: ExampleResult, members: Sequence[str]) -> JuryRow | None:
    """What `jury_of` needs of one row: its verdicts by member; None for a row a one-judge run
    does not score (failed, stopped by the budget) or a run without a jury."""
    if result.error is not None or result.not_run or not result.jury:
        return None
    criteria = result.example.rubrics
    return JuryRow(
        result.example.example_tags,
        criteria,
        [
            {name: result.jury[name][i].criteria_met for name in members if name in result.jury}
            for i in range(len(criteria))
        ],
        len(result.completion or ""),
    )


def jury_of(
    rows: Sequence[JuryRow],
    members: Sequence[str],
    scoring: ScoringConfig,
    bootstrap_samples: int,
    seed: int,
) -> Jury | None:
    """summary.json's `jury` over the rows a one-judge run scores (`jury_row` of each row, in
    the run's order); None without a jury (`members`: the judges' model names, the primary
    first)."""
    if len(members) < 2:
        return None
    penalty = scoring.length_penalty_per_500_chars
    length = None if penalty is None else LengthSetting(penalty, scoring.length_center_chars)
    section = jury_section(members, rows, bootstrap_samples, seed, length)
    for name, count in section.ungraded.items():
        log.info("jury: %s left %d criteria ungraded", name, count)
    return section
