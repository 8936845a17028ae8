"""A sweep's budget: `budget.max_usd` on a multirun caps what all its jobs spend together.

Each job of such a sweep counts the spend of the sweep's other jobs against the cap, as their
run directories record it: a finished job's `invocations.jsonl` (its whole usage), a running
job's `sweep_spend.json` (what it has spent so far, rewritten as its requests are paid, at most
once per `REFRESH_S`). A job reads its siblings' spend when it sends its first request and again
at most once per `REFRESH_S` while it runs, so:

- with the sequential launcher every other job has finished or not started when a job runs:
  the sweep's spend never passes the cap by more than a single run's would (the cost of the
  requests in flight beyond their estimate);
- with a parallel launcher each job sees the others' spend at most about 2 x `REFRESH_S` late:
  the sweep may pass its cap by what its running jobs pay in that time, plus their requests in
  flight.

`budget.max_usd_per_job` caps each job's own spend as well (alone, it is the per-job cap a
sweep's `budget.max_usd` was before).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from healthbench_exp.config.schema import BudgetConfig
from healthbench_exp.model.costs import Budget, read_invocations
from healthbench_exp.model.reply_json import json_map

REFRESH_S = 1.0  # how often a job rewrites its own spend and rereads the others'
LIVE_SPEND_FILE = "sweep_spend.json"  # a running sweep job's spend so far, for its siblings


def recorded_spend(run_dir: Path) -> float | None:
    """What the job in `run_dir` has spent: the sum of its invocations' costs once it recorded
    one, else its running spend (`LIVE_SPEND_FILE`); None when it has recorded nothing."""
    invocations = read_invocations(run_dir)
    if invocations:
        costs = [json_map(entry.get("usage")).get("total_cost_usd") for entry in invocations]
        return sum(cost for cost in costs if isinstance(cost, int | float))
    try:
        live = json.loads((run_dir / LIVE_SPEND_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # not written yet, or being replaced
        return None
    spent = json_map(live).get("spent_usd")
    return float(spent) if isinstance(spent, int | float) else None


def sweep_spend(sweep_dir: Path, own_dir: Path) -> dict[str, float]:
    """The spend of each job of the sweep in `sweep_dir` but the one in `own_dir`, by job
    directory name (jobs that recorded nothing left out)."""
    spend: dict[str, float] = {}
    own = own_dir.resolve()
    try:
        entries = sorted(sweep_dir.iterdir())
    except OSError:
        return spend
    for entry in entries:
        if not entry.is_dir() or entry.resolve() == own:
            continue
        spent = recorded_spend(entry)
        if spent is not None:
            spend[entry.name] = spent
    return spend


class SweepSpend:
    """The other jobs' spend for one job of a sweep (`model.costs.SharedSpend`), reread at most
    once per `refresh_s`, and this job's own, written for them as often."""

    def __init__(
        self, max_usd: float, sweep_dir: Path, own_dir: Path, refresh_s: float = REFRESH_S
    ) -> None:
        self.max_usd = max_usd
        self.sweep_dir = sweep_dir
        self.own_dir = own_dir
        self.refresh_s = refresh_s
        self._others: dict[str, float] = {}
        self._read_at: float | None = None
        self._written_at: float | None = None

    def others(self) -> Mapping[str, float]:
        now = time.monotonic()
        if self._read_at is None or now - self._read_at >= self.refresh_s:
            self._others = sweep_spend(self.sweep_dir, self.own_dir)
            self._read_at = now
        return self._others

    def record(self, spent: float) -> None:
        now = time.monotonic()
        if self._written_at is not None and now - self._written_at < self.refresh_s:
            return
        self._written_at = now
        path = self.own_dir / LIVE_SPEND_FILE
        partial = path.with_name(f".{LIVE_SPEND_FILE}.{os.getpid()}")
        try:
            partial.write_text(json.dumps({"spent_usd": spent}), encoding="utf-8")
            partial.replace(path)  # whole, for a sibling reading it now
        except OSError:  # a full disk: the siblings see this job's spend when it ends
            partial.unlink(missing_ok=True)


def budget_of(config: BudgetConfig, run_dir: Path) -> Budget | None:
    """The budget of a run (an invocation) in `run_dir`, None without a cap. A job of a sweep
    (`config.sweep_dir` set) counts `budget.max_usd` over the whole sweep's spend."""
    if not config.capped():
        return None
    if config.sweep_dir is None or config.max_usd is None:
        return Budget(config.max_usd, config.max_usd_per_job)
    sweep = SweepSpend(config.max_usd, Path(config.sweep_dir), run_dir)
    return Budget(None, config.max_usd_per_job, sweep)
