"""What an earlier invocation of a run recorded in its directory, for a resume to continue from.

An eval writes every row as it finishes, stopped rows included: its reply (`examples.jsonl`:
`messages`, `completion`) and each criterion's verdict (`per_criterion.jsonl`). A resume reads
them before anything is sent, and a row whose reply or verdicts are recorded is not asked again:
the run's own records are what it continues from, whether or not the response cache is on (the
cache only adds what they lack, such as the calls of rows a signal cut short).

Records are used only when they are this run's: the directory's last invocation
(`invocations.jsonl`) measured the same thing (`config.measured.measured_fingerprint`), or no
invocation was recorded yet (the first one was cut short by a signal or a kill); and each record
is used only where it matches what the row sends now (the same messages, the same reply, the same
criterion text). What counts as recorded:

- a reply: a row's `completion` (a row whose model call failed has none and is asked again);
- a verdict: a criterion judged met or not, or one with no valid verdict after its parse
  retries (those replies were paid); a failed or unsent judge call is asked again. In a jury run
  the same holds for each further judge's verdict (`verdicts`, `explanations`, `errors` of
  `per_criterion.jsonl`, by the judge's model name).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from healthbench_exp.config.measured import measured_fingerprint
from healthbench_exp.core.types import CriterionGrade
from healthbench_exp.model.invocations import read_invocations

log = logging.getLogger(__name__)

EXAMPLES_FILE = "examples.jsonl"  # as output.files writes them
CRITERIA_FILE = "per_criterion.jsonl"
UNPARSEABLE = "no valid verdict in "  # grading.grader's error after the parse retries


@dataclass
class RecordedRow:
    """One (example, rollout) as an earlier invocation recorded it."""

    messages: list[dict[str, str]]
    completion: str | None
    grades: dict[int, tuple[str, CriterionGrade]] = field(default_factory=dict)  # by index
    # a jury run: each judge's verdicts by its model name, then by criterion index
    jury: dict[str, dict[int, tuple[str, CriterionGrade]]] = field(default_factory=dict)

    def reply(self, sent: list[dict[str, str]]) -> str | None:
        """The recorded reply to `sent`, if this row recorded one for exactly these messages."""
        return self.completion if self.messages == sent else None

    def grade(
        self, sent: list[dict[str, str]], reply: str, index: int, criterion: str
    ) -> CriterionGrade | None:
        """The recorded verdict on criterion `index` (`criterion` its text) of `reply` to
        `sent`, if there is one for exactly that conversation and criterion."""
        return self._known(self.grades, sent, reply, index, criterion)

    def member_grade(
        self, name: str, sent: list[dict[str, str]], reply: str, index: int, criterion: str
    ) -> CriterionGrade | None:
        """Like `grade`, for the jury member whose model name is `name`."""
        return self._known(self.jury.get(name, {}), sent, reply, index, criterion)

    def _known(
        self,
        grades: dict[int, tuple[str, CriterionGrade]],
        sent: list[dict[str, str]],
        reply: str,
        index: int,
        criterion: str,
    ) -> CriterionGrade | None:
        if self.messages != sent or self.completion != reply:
            return None
        recorded = grades.get(index)
        return recorded[1] if recorded is not None and recorded[0] == criterion else None


Records = dict[tuple[str, int], RecordedRow]


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a kill
                continue
            if isinstance(row, dict):
                yield row


def _usable(
    met: object, explanation: object, error: object, attempts: int
) -> CriterionGrade | None:
    if isinstance(met, bool):
        return CriterionGrade(met, str(explanation or ""), attempts)
    if isinstance(error, str) and error.startswith(UNPARSEABLE):
        return CriterionGrade(None, "", attempts, error=error)
    return None


def _members(row: dict[str, Any]) -> Iterator[tuple[str, CriterionGrade]]:
    """Each jury member's usable verdict recorded on a per_criterion row (a jury run's)."""
    verdicts, explanations, errors = (row.get(k) for k in ("verdicts", "explanations", "errors"))
    if not isinstance(verdicts, dict):
        return
    explanations = explanations if isinstance(explanations, dict) else {}
    errors = errors if isinstance(errors, dict) else {}
    for name, met in verdicts.items():
        grade = _usable(met, explanations.get(name), errors.get(name), 1)
        if grade is not None:
            yield str(name), grade


def read_records(output_dir: Path) -> Records:
    """Every reply and verdict recorded in `output_dir` (empty when it holds none)."""
    records: Records = {}
    for row in _rows(output_dir / EXAMPLES_FILE):
        completion = row.get("completion")
        if isinstance(completion, str) and isinstance(row.get("messages"), list):
            key = (str(row.get("prompt_id")), int(row.get("rollout") or 0))
            records[key] = RecordedRow(row["messages"], completion)
    for row in _rows(output_dir / CRITERIA_FILE):
        recorded = records.get((str(row.get("prompt_id")), int(row.get("rollout") or 0)))
        if recorded is None:
            continue
        index, text = int(row.get("criterion_index") or 0), str(row.get("criterion"))
        attempts = row.get("judge_attempts") or 0
        grade = _usable(row.get("criteria_met"), row.get("explanation"), row.get("error"), attempts)
        if grade is not None:
            recorded.grades[index] = (text, grade)
        for name, member in _members(row):
            recorded.jury.setdefault(name, {})[index] = (text, member)
    return records


def records_to_continue(output_dir: Path, config_dict: dict[str, Any]) -> Records:
    """The records an invocation of the run measuring `config_dict` continues from (see the
    module docstring); empty when the directory holds another config's results or none."""
    invocations = read_invocations(output_dir)
    if invocations and invocations[-1].get("measured_config_sha256") != measured_fingerprint(
        config_dict
    ):
        return {}
    records = read_records(output_dir)
    if records:
        verdicts = sum(len(r.grades) + sum(map(len, r.jury.values())) for r in records.values())
        log.info(
            "this run continues from its own records in %s: %d replies and %d verdicts are "
            "not asked again",
            output_dir,
            len(records),
            verdicts,
        )
    return records
