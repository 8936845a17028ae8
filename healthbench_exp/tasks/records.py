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
  retries (those replies were paid); a failed or unsent judge call is asked again.
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
from healthbench_exp.model.costs import read_invocations

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

    def reply(self, sent: list[dict[str, str]]) -> str | None:
        """The recorded reply to `sent`, if this row recorded one for exactly these messages."""
        return self.completion if self.messages == sent else None

    def grade(
        self, sent: list[dict[str, str]], reply: str, index: int, criterion: str
    ) -> CriterionGrade | None:
        """The recorded verdict on criterion `index` (`criterion` its text) of `reply` to
        `sent`, if there is one for exactly that conversation and criterion."""
        if self.messages != sent or self.completion != reply:
            return None
        recorded = self.grades.get(index)
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


def _usable(row: dict[str, Any]) -> CriterionGrade | None:
    met, error = row.get("criteria_met"), row.get("error")
    attempts = row.get("judge_attempts") or 0
    if isinstance(met, bool):
        return CriterionGrade(met, str(row.get("explanation") or ""), attempts)
    if isinstance(error, str) and error.startswith(UNPARSEABLE):
        return CriterionGrade(None, "", attempts, error=error)
    return None


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
        grade = _usable(row)
        if recorded is not None and grade is not None:
            index = int(row.get("criterion_index") or 0)
            recorded.grades[index] = (str(row.get("criterion")), grade)
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
        verdicts = sum(len(r.grades) for r in records.values())
        log.info(
            "this run continues from its own records in %s: %d replies and %d verdicts are "
            "not asked again",
            output_dir,
            len(records),
            verdicts,
        )
    return records
