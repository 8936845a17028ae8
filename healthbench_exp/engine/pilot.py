"""`dry_run.pilot=N`: run the first N rows of a job for real, so the estimate can measure them.

The pilot's rows are the ones the run would start with: the first N of the task's `items()`, in
the run's order (the seeded sample, then its repeats), so the run finds every one of the
pilot's calls in the response cache and pays none of them again. The pilot writes only its
usage (`invocations.jsonl`) into `<dry run dir>/pilot`; its results are the run's to write.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypedDict, TypeVar

from healthbench_exp.core.counts import RunCounts
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.tasks.base import CallCounter, Clients, Summarizer, Task

Item = TypeVar("Item")
Result = TypeVar("Result")


class PilotRecord(TypedDict):
    """estimate.json's `pilot`: the rows the pilot sent, its paid calls and their cost."""

    rows: int
    requests: int  # paid calls, every role
    paid_calls: dict[str, int]  # per role (the jury's members by name)
    cost_usd: float | None  # None: a role without a price


@dataclass
class FirstRows(Generic[Item, Result]):
    """`task` restricted to its first `rows` items; everything else is the task's own."""

    task: Task[Item, Result]
    rows: int
    sent: int = 0  # the rows it ran (fewer than `rows` when the job has fewer)

    @property
    def kind(self) -> str:
        return self.task.kind

    @property
    def unit(self) -> str:
        return self.task.unit

    def items(self) -> list[Item]:
        items = self.task.items()[: self.rows]
        self.sent = len(items)
        return items

    def criteria(self, items: list[Item]) -> int:
        return self.task.criteria(items)

    def continue_from(self, output_dir: Path) -> None:
        self.task.continue_from(output_dir)

    def concurrency(self, rows: int) -> int:
        return self.task.concurrency(rows)

    async def run_item(self, item: Item, clients: Clients) -> Result:
        return await self.task.run_item(item, clients)

    def tally(self, counts: RunCounts, result: Result) -> None:
        self.task.tally(counts, result)

    def summarizer(self, rows: int) -> Summarizer[Result]:
        return self.task.summarizer(rows)

    def estimate(self, counter: CallCounter) -> int:
        raise NotImplementedError("a pilot is run, not estimated")


def pilot_record(summary: RunSummary, rows: int) -> PilotRecord:
    """What the estimate keeps of the pilot: rows sent, paid calls per role and their cost."""
    usage = summary.usage
    assert usage is not None, "a finished run has its usage"
    paid = {role: usage.role(role).requests for role in ("model", "judge")}
    paid.update({name: u.requests for name, u in (usage.jury or {}).items()})
    return {
        "rows": rows,
        "requests": sum(paid.values()),
        "paid_calls": paid,
        "cost_usd": usage.total_cost_usd,
    }
