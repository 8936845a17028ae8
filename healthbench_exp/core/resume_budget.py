"""The `budget.max_usd` a budget-stopped run's `resume=` needs: the one that stopped it would stop
the resume again. One choice, for the single run's stop line and a sweep's finish lines alike.
"""

from __future__ import annotations

import math

from healthbench_exp.core.summary import RunSummary


def budget_to_finish(spent: float | None, rows_done: int, rows_left: int) -> float | None:
    """A `budget.max_usd` that should let one more invocation finish `rows_left` rows: 1.5x
    their cost at this run's cost per finished row so far (`spent` over `rows_done`: the
    run's `usage.total_cost_usd`), rounded up to two significant digits. None when no row
    finished or no cost is known (then nothing can be extrapolated)."""
    if not rows_done or not rows_left or not spent:
        return None
    return _rounded_up(1.5 * spent / rows_done * rows_left)


def _rounded_up(usd: float) -> float:
    """`usd` rounded up to two significant digits."""
    step = 10.0 ** (math.floor(math.log10(usd)) - 1)
    return round(math.ceil(usd / step) * step, 12)


def budget_to_resume(summary: RunSummary, estimate_usd: float | None = None) -> tuple[float, str]:
    """The `budget.max_usd` to resume a budget-stopped run with (`budget_to_finish` at its cost
    per finished row so far; with no row finished, ten times the cap that stopped it, and at
    least `estimate_usd`, the run's own estimated cost, when known; never below that cap), and
    the sentence that says how it was chosen."""
    counts, budget, usage = summary.counts, summary.budget, summary.usage
    assert counts is not None and budget is not None and usage is not None, "a budget stop's"
    left, rows = counts.rows_not_run, counts.rows
    spent = usage.total_cost_usd
    _option, stopped_at = budget.binding()
    cap = budget_to_finish(spent, rows - left, left)
    if cap is None or spent is None:  # no row finished: nothing to extrapolate from
        why = "no row finished to estimate their cost from"
        if estimate_usd is None or estimate_usd <= 10 * stopped_at:
            return max(10 * stopped_at, stopped_at), why
        # the margin over the estimate that `budget_to_finish` gives over the finished rows'
        return _rounded_up(1.5 * estimate_usd), f"{why}; the run's estimated cost is " + (
            f"${estimate_usd:.4f}"
        )
    per_row = (
        f"the {left} rows left should cost about ${spent / (rows - left) * left:.4f} at "
        f"this run's ${spent / (rows - left):.4f} per finished row"
    )
    return max(cap, stopped_at), per_row
