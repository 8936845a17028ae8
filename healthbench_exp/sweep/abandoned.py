"""The requests a stop abandoned in flight, in a comparison: per job and summed over the jobs.

A request sent and never answered (the run left before its reply: a second Ctrl-C, no grace)
may be billed; its cost is estimated (`model.costs`), never part of a measured cost. A job row
carries `abandoned_in_flight` and `abandoned_cost_usd` when its run abandoned any, and the
comparison their sums over the jobs, apart from `cost_usd`; both are absent when no job
abandoned a request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from healthbench_exp.output.html.charts import number
from healthbench_exp.output.run_context import RunContext
from healthbench_exp.sweep.jobs import total


class AbandonedSums(TypedDict, total=False):
    """The jobs' requests abandoned in flight, summed; empty when none was."""

    abandoned_in_flight: int
    abandoned_cost_usd: float | None  # estimated; None: some job's estimate is unknown


def abandoned_columns(context: RunContext) -> dict[str, object]:
    """A job row's `abandoned_in_flight` and estimated `abandoned_cost_usd` (None: a price is
    missing); nothing when its run abandoned no request."""
    if not context.abandoned:
        return {}
    return {
        "abandoned_in_flight": context.abandoned,
        "abandoned_cost_usd": context.abandoned_cost_usd,
    }


def abandoned_sums(rows: Sequence[Mapping[str, object]]) -> AbandonedSums:
    """The jobs' abandoned requests summed (`abandoned_in_flight`, and `abandoned_cost_usd`:
    None when some job's estimate is unknown); nothing when no job abandoned one."""
    counted = [row for row in rows if number(row, "abandoned_in_flight")]
    if not counted:
        return {}
    return {
        "abandoned_in_flight": sum(int(number(row, "abandoned_in_flight") or 0) for row in counted),
        "abandoned_cost_usd": total([number(row, "abandoned_cost_usd") for row in counted]),
    }
