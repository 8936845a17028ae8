"""The requests a stop abandoned in flight, in a comparison: per job and summed over the jobs.

A request sent and never answered (the run left before its reply: a second Ctrl-C, no grace)
may be billed; its cost is estimated (`model.costs`), never part of a measured cost. A job row
carries `abandoned_in_flight` and `abandoned_cost_usd` when its run abandoned any (over all its
invocations, as its cost), and the comparison their sums over the jobs, apart from `cost_usd`,
and `cost_with_abandoned_usd`, the measured cost plus the estimate; the sweep's total states
both (`cost_total_text`). All are absent when no job abandoned a request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from healthbench_exp.core.run_end import Status
from healthbench_exp.output.html.charts import number
from healthbench_exp.output.run_context import RunContext, abandoned_text
from healthbench_exp.sweep.jobs import total


class AbandonedSums(TypedDict, total=False):
    """The jobs' requests abandoned in flight, summed; empty when none was."""

    abandoned_in_flight: int
    abandoned_cost_usd: float | None  # estimated; None: some job's estimate is unknown
    # the jobs' measured cost plus that estimate: what the sweep may have been billed
    cost_with_abandoned_usd: float | None


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
    estimate = total([number(row, "abandoned_cost_usd") for row in counted])
    measured = total(
        [number(row, "cost_usd") for row in rows if row.get("status") != Status.DRY_RUN]
    )
    return {
        "abandoned_in_flight": sum(int(number(row, "abandoned_in_flight") or 0) for row in counted),
        "abandoned_cost_usd": estimate,
        "cost_with_abandoned_usd": None
        if None in (estimate, measured)
        else (estimate or 0.0) + (measured or 0.0),
    }


def abandoned_of(data: Mapping[str, object]) -> AbandonedSums:
    """The `AbandonedSums` a comparison (`sweep_summary.json`'s data) holds; empty: none."""
    count = data.get("abandoned_in_flight")
    if not isinstance(count, int) or not count:
        return {}
    return {
        "abandoned_in_flight": count,
        "abandoned_cost_usd": number(data, "abandoned_cost_usd"),
        "cost_with_abandoned_usd": number(data, "cost_with_abandoned_usd"),
    }


def cost_total_text(cost: float | None, note: str, sums: AbandonedSums) -> str:
    """A sweep's total in words: `$0.0420` (its measured cost, then `note`), and when its jobs
    abandoned requests in flight, `; + about $0.0120 for 28 requests abandoned in flight
    (estimated: ...): about $0.0540 in all`."""
    text = ("unknown (a price is not set)" if cost is None else f"${cost:.4f}") + note
    count = sums.get("abandoned_in_flight")
    if not count:
        return text
    text += f"; + {abandoned_text(count, sums.get('abandoned_cost_usd'))}"
    in_all = sums.get("cost_with_abandoned_usd")
    return text + ("" if in_all is None else f": about ${in_all:.4f} in all")
