"""A sweep's budget: `budget.max_usd` on a multirun caps what all its jobs spend together.

The sweep's jobs share a ledger in the sweep directory (`LEDGER_FILE`): for each job (by its
directory's name) what it has committed, its measured spend plus the estimated cost of its
requests in flight. Before each request a job takes the ledger's lock (`fcntl.flock` on
`LOCK_FILE`, held for a read and a write of a small file), adds the request's estimate to its
own entry and keeps it only if the sweep's total stays within the cap, else the request is not
sent; when a request finishes its entry becomes its spend plus what is still in flight. So the
cap holds across jobs exactly as a single run's holds across its requests, with the sequential
launcher and with a parallel one on the same machine alike (and on a shared file system whose
`flock` works across hosts, as NFSv4's does): the sweep passes its cap by no more than what its
requests in flight cost beyond their estimates.

A job killed with requests in flight leaves their estimates in the ledger: the sweep counts
them as spent (never less than was paid). `budget.max_usd_per_job` caps each job's own spend
as well (alone, it is the per-job cap a sweep's `budget.max_usd` was before).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from healthbench_exp.config.schema import BudgetConfig
from healthbench_exp.model.costs import Budget
from healthbench_exp.model.reply_json import json_map

LEDGER_FILE = "sweep_budget.json"  # each job's committed spend, in US$, by job directory name
LOCK_FILE = ".sweep_budget.lock"  # flock'ed around each read-and-update of the ledger


class SweepLedger:
    """One job's view of its sweep's ledger (`model.costs.SharedSpend`)."""

    def __init__(self, max_usd: float, sweep_dir: Path, own_dir: Path) -> None:
        self.max_usd = max_usd
        self.sweep_dir = sweep_dir
        self.job = own_dir.name
        self._others: dict[str, float] = {}  # as last read

    @contextmanager
    def _entries(self) -> Iterator[dict[str, float]]:
        """The ledger's entries under its lock; what the caller leaves in them is written."""
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        with (self.sweep_dir / LOCK_FILE).open("a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
            entries = read_ledger(self.sweep_dir)
            before = dict(entries)
            yield entries
            self._others = {job: usd for job, usd in entries.items() if job != self.job}
            if entries != before:
                path = self.sweep_dir / LEDGER_FILE
                partial = path.with_name(f".{LEDGER_FILE}.{os.getpid()}")
                partial.write_text(json.dumps(entries, sort_keys=True), encoding="utf-8")
                partial.replace(path)

    def claim(self, committed: float) -> float | None:
        """Make `committed` this job's entry if the sweep's total then stays within `max_usd`
        (None); else leave the ledger as it is and return the other jobs' total."""
        with self._entries() as entries:
            others = sum(usd for job, usd in entries.items() if job != self.job)
            if others + committed > self.max_usd:
                return others
            entries[self.job] = committed
            return None

    def record(self, committed: float) -> None:
        """Make `committed` this job's entry (a request finished: its cost replaces its
        estimate)."""
        with self._entries() as entries:
            entries[self.job] = committed

    def others(self) -> Mapping[str, float]:
        """The other jobs' entries as last read."""
        return self._others


def read_ledger(sweep_dir: Path) -> dict[str, float]:
    """The ledger of the sweep in `sweep_dir` ({} when none was written)."""
    try:
        data = json.loads((sweep_dir / LEDGER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in json_map(data).items() if isinstance(v, int | float)}


def budget_of(config: BudgetConfig, run_dir: Path) -> Budget | None:
    """The budget of a run (an invocation) in `run_dir`, None without a cap. A job of a sweep
    (`config.sweep_dir` set) counts `budget.max_usd` over the whole sweep's spend."""
    if not config.capped():
        return None
    if config.sweep_dir is None or config.max_usd is None:
        return Budget(config.max_usd, config.max_usd_per_job)
    ledger = SweepLedger(config.max_usd, Path(config.sweep_dir), run_dir)
    return Budget(None, config.max_usd_per_job, ledger)
