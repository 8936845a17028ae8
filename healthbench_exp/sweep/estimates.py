"""A dry-run sweep's estimate: its jobs' `estimate.json` summed per role."""

from __future__ import annotations

from collections.abc import Mapping

from healthbench_exp.core.run_end import Status
from healthbench_exp.output.html.charts import number
from healthbench_exp.sweep.jobs import Job, read_object, total

ESTIMATE_FIGURES = (
    "calls",
    "cached_calls",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
)


def sweep_estimate(jobs: list[Job]) -> dict[str, dict[str, float | None]] | None:
    """The dry-run estimates of the sweep's jobs summed per role (model, judge): calls, calls
    the cache holds, tokens to pay (input, cached input, output, reasoning) and dollars (None
    when some job's cost is unknown). None when no job is a dry run."""
    estimates = [read_object(j.path / "estimate.json") for j in jobs if j.status == Status.DRY_RUN]
    if not estimates:
        return None
    sums: dict[str, dict[str, float | None]] = {}
    for role in ("model", "judge"):
        parts: list[Mapping[str, object]] = [
            part for e in estimates if isinstance(part := e.get(role), dict)
        ]
        if not parts:
            continue
        figures: dict[str, float | None] = {
            k: sum(number(p, k) or 0 for p in parts) for k in ESTIMATE_FIGURES
        }
        figures["cost_usd"] = total([number(p, "cost_usd") for p in parts])
        sums[role] = figures
    return sums
