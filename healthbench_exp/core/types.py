"""The vocabulary every layer shares: examples and their criteria, work items, grades and
results. Standard library only; nothing here knows about config, endpoints or files."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

AXES = frozenset(
    {
        "accuracy",
        "completeness",
        "context_awareness",
        "communication_quality",
        "instruction_following",
    }
)  # the five rubric axes (`axis:<name>` tags)
THEMES = (
    "emergency_referrals",
    "context_seeking",
    "global_health",
    "health_data_tasks",
    "communication",
    "hedging",
    "complex_responses",
)  # the seven themes of HealthBench, in the paper's order


def tag_value(tags: Iterable[str], key: str) -> str | None:
    prefix = key + ":"
    for tag in tags:
        if tag.startswith(prefix):
            return tag[len(prefix) :]
    return None


@dataclass(frozen=True)
class Criterion:
    text: str
    points: int | float  # as in the data: the grader sees `[5]` for 5 and `[5.0]` for 5.0
    tags: tuple[str, ...]

    @property
    def axis(self) -> str | None:
        return tag_value(self.tags, "axis")

    @property
    def cluster(self) -> str | None:
        """The consensus cluster (`cluster:<value>` tag) without its prefix, if any."""
        return tag_value(self.tags, "cluster")

    @cached_property
    def criterion_id(self) -> str:
        """blake2b (8-byte digest, hex) of the criterion text, as the verifiers environment."""
        return hashlib.blake2b(self.text.encode("utf-8"), digest_size=8).hexdigest()


@dataclass(frozen=True)
class Example:
    prompt_id: str
    prompt: tuple[dict[str, str], ...]
    rubrics: tuple[Criterion, ...]
    example_tags: tuple[str, ...]
    ideal_completions_data: Mapping[str, object] | None
    where: str  # "file.jsonl line 12" or "repo row 12": for messages
    # HealthBench Professional (SPEC 6): a row of that set (slice tags `use_case:`, `type:`,
    # `difficulty:`, `specialty:` instead of a theme; no ideal completions), and its physician's
    # reply (the human baseline `completions=physician` grades; None: the row has none)
    professional: bool = False
    physician_response: str | None = None

    @property
    def theme(self) -> str:
        """The `theme:` tag's value (exactly one on a 2025 row); a Professional row has no
        theme and gives its `use_case` label instead ("" when that is null), so per-theme views
        of the outputs group Professional rows by use case."""
        theme = tag_value(self.example_tags, "theme")
        if theme is not None:
            return theme
        assert self.professional  # a 2025 row has exactly one theme: validated on load
        return tag_value(self.example_tags, "use_case") or ""


@dataclass(frozen=True)
class WorkItem:
    example: Example
    rollout: int
    completion: str | None = None  # the reply to grade; None: sample it from the model
    # the conversation the given reply answered (file replies); None: the dataset prompt
    messages: tuple[dict[str, str], ...] | None = None
    error: str | None = None  # the item cannot be graded (the file has no reply for it)


@dataclass(frozen=True, slots=True)  # no __dict__: one per row the run holds
class RowItem:
    """A `WorkItem` before its row starts: its example's position in the dataset's examples
    instead of the example, which is built when the row starts (`work_item`), so a run holds
    no parsed rows but the ones running (`data.example_rows.ExampleRows`)."""

    position: int  # the example's index in the dataset's examples
    rollout: int
    completion: str | None = None
    messages: tuple[dict[str, str], ...] | None = None
    error: str | None = None

    def work_item(self, examples: Sequence[Example]) -> WorkItem:
        """This item with its example, `examples[position]` (built then, for lazy examples)."""
        example = examples[self.position]
        return WorkItem(example, self.rollout, self.completion, self.messages, self.error)


@dataclass(frozen=True, slots=True)  # no __dict__: one per criterion the run grades
class CriterionGrade:
    criteria_met: bool | None  # None: ungraded
    explanation: str
    attempts: int  # judge replies received (parse retries included)
    error: str | None = None  # why it is ungraded
    not_run: bool = False  # not sent: the budget was reached (a resumed run grades it)


@dataclass
class ExampleResult:
    """One (example, rollout): what was sent, the reply, every criterion's grade, the score."""

    example: Example
    rollout: int
    messages: list[dict[str, str]]  # exactly what the model was sent (system message included)
    completion: str | None
    grades: list[CriterionGrade]
    error: str | None = None  # the example failed (no usable reply); it is not scored
    metrics: dict[str, float] | None = None  # None: failed, or every positive criterion ungraded
    sampled: bool = True  # the reply was asked of the model (not given by physicians or a file)
    not_run: bool = False  # stopped by budget.max_usd before it finished; a resumed run does it
    # a jury run (SPEC 7.1): every judge's grades by model name, the primary judge's (`grades`)
    # first, each index-aligned with the example's criteria; empty without a jury
    jury: dict[str, list[CriterionGrade]] = field(default_factory=dict)

    @property
    def score(self) -> float | None:
        return None if self.metrics is None else self.metrics["overall_score"]

    @property
    def ungraded(self) -> int:
        return sum(1 for g in self.grades if g.criteria_met is None)


@dataclass(frozen=True)
class MetaEvalRow:
    prompt_id: str
    completion_id: str
    prompt: tuple[dict[str, str], ...]
    completion: str
    rubric: str  # the criterion text, inserted into the grader prompt as given
    category: str  # `cluster:<theme>_<behavior>_<criterion>`
    binary_labels: tuple[bool, ...]  # one verdict per physician
    physician_ids: tuple[str, ...]  # anonymized, index-aligned with binary_labels
    where: str


@dataclass
class MetaEvalResult:
    row: MetaEvalRow
    repeat: int
    grade: CriterionGrade
    # a jury (SPEC 7.1): every judge's grade of the row by model name, the primary judge's
    # (`grade`) first, as `ExampleResult.jury`; empty without a jury
    jury: dict[str, CriterionGrade] = field(default_factory=dict)

    @property
    def record(self) -> dict[str, object]:
        """The row of `meta_eval.jsonl` (and of the results dataset)."""
        row = self.row
        return {
            "prompt_id": row.prompt_id,
            "completion_id": row.completion_id,
            "repeat": self.repeat,
            "category": row.category,
            "rubric": row.rubric,
            "criteria_met": self.grade.criteria_met,
            "explanation": self.grade.explanation,
            "judge_attempts": self.grade.attempts,
            "error": self.grade.error,
            "binary_labels": list(row.binary_labels),
            "anonymized_physician_ids": list(row.physician_ids),
        } | (
            {  # a jury: every judge's, the primary's first, as per_criterion.jsonl's
                "verdicts": {n: g.criteria_met for n, g in self.jury.items()},
                "explanations": {n: g.explanation for n, g in self.jury.items()},
                "errors": {n: g.error for n, g in self.jury.items()},
            }
            if self.jury
            else {}
        )
