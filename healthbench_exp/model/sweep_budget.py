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
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path

from healthbench_exp.config.schema import BudgetConfig
from healthbench_exp.model.costs import Budget
from healthbench_exp.model.reply_json import json_map

LEDGER_FILE = "sweep_budget.json"  # each job's committed spend, in US$, by job directory name
LOCK_FILE = ".sweep_budget.lock"  # flock'ed around each read-and-update of the ledger
TRANCHE_OF_CAP = 1 / 50  # a tranche is at most this share of the sweep's cap
TRANCHE_OF_HEADROOM = 1 / 8  # and at most this share of what the sweep has left


def tranche_usd(max_usd: float, others: float, committed: float) -> float:
    """How much a job claims beyond what it has committed: a small share of the sweep's cap,
    shrinking with what is left, so that near the cap every request is claimed alone (and the
    claims are as exact as one per request)."""
    return max(
        0.0, min(max_usd * TRANCHE_OF_CAP, (max_usd - others - committed) * TRANCHE_OF_HEADROOM)
    )


class SweepLedger:
    """One job's view of its sweep's ledger (`model.costs.SharedSpend`), claimed in tranches.

    The job's entry in the ledger is what it has claimed: its committed spend plus a tranche
    (`tranche_usd`). A request whose estimate fits in the claim reads and writes nothing; one
    that does not claims again under the lock, on the calling thread, and is refused when its
    committed spend alone does not fit beside the other jobs' entries. While more than half a
    tranche is left, the next one is claimed ahead by a worker thread, so the event loop's thread
    seldom waits for the ledger's file (one read and write per tranche, not two per request; see
    bench/sweep_ledger.py). A finished request that cost more than its claim is written by the
    worker too. `close` writes the job's exact committed spend (its claim released): a job that
    ends leaves what it spent, one killed leaves its claim (never less than it paid). An error
    of the worker (the file system's) is raised on the next call of the job.
    """

    def __init__(self, max_usd: float, sweep_dir: Path, own_dir: Path) -> None:
        self.max_usd = max_usd
        self.sweep_dir = sweep_dir
        self.job = own_dir.name
        self._others: dict[str, float] = {}  # as last read
        self._claimed = 0.0  # this job's entry in the ledger, as last written
        self._committed = 0.0  # this job's spend plus its estimates in flight, as last told
        self._state = threading.Lock()  # the three fields above, between the loop and the worker
        self._file = threading.Lock()  # one read-and-update of the file at a time in this job
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="sweep-ledger")
        self._pending: Future[None] | None = None  # a claim ahead or a record, by the worker
        self._error: BaseException | None = None

    @contextmanager
    def _entries(self) -> Iterator[dict[str, float]]:
        """The ledger's entries under its lock; what the caller leaves in them is written."""
        with self._file:
            self.sweep_dir.mkdir(parents=True, exist_ok=True)
            with (self.sweep_dir / LOCK_FILE).open("a") as lock:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
                entries = read_ledger(self.sweep_dir)
                before = dict(entries)
                yield entries
                with self._state:
                    self._others = {job: usd for job, usd in entries.items() if job != self.job}
                    self._claimed = entries.get(self.job, 0.0)
                if entries != before:
                    path = self.sweep_dir / LEDGER_FILE
                    partial = path.with_name(f".{LEDGER_FILE}.{os.getpid()}")
                    partial.write_text(json.dumps(entries, sort_keys=True), encoding="utf-8")
                    partial.replace(path)

    def claim(self, committed: float) -> float | None:
        """Keep `committed` within this job's claim if the sweep's total then stays within
        `max_usd` (None); else leave the ledger as it is and return the other jobs' total."""
        self._raise_error()
        with self._state:
            self._committed = committed
            claimed = self._claimed
        if committed <= claimed:
            if claimed - committed < tranche_usd(self.max_usd, 0.0, 0.0) / 2:
                self._ahead(self._claim_ahead)
            return None
        with self._entries() as entries:
            others = sum(usd for job, usd in entries.items() if job != self.job)
            if others + committed > self.max_usd:
                return others
            entries[self.job] = committed + tranche_usd(self.max_usd, others, committed)
            return None

    def record(self, committed: float) -> None:
        """This job's committed spend is now `committed` (a request finished: its cost replaced
        its estimate); written (by the worker) only when it passes the claim."""
        self._raise_error()
        with self._state:
            self._committed = committed
            passed = committed > self._claimed
        if passed:
            self._ahead(self._claim_ahead)

    def close(self, committed: float) -> None:
        """The job is over: its entry becomes `committed` exactly (the claim left released)."""
        self._worker.shutdown(wait=True)
        with self._state:
            self._committed = committed
        with self._entries() as entries:
            entries[self.job] = committed
        self._raise_error()

    def others(self) -> Mapping[str, float]:
        """The other jobs' entries as last read."""
        with self._state:
            return dict(self._others)

    def _ahead(self, task: Callable[[], None]) -> None:
        """Run `task` on the worker unless one is pending (it claims from the latest state)."""
        if self._pending is None or self._pending.done():
            with suppress(RuntimeError):  # closed: nothing more is claimed
                self._pending = self._worker.submit(self._guarded, task)

    def _guarded(self, task: Callable[[], None]) -> None:
        try:
            task()
        except BaseException as exc:  # raised on the job's next call (`_raise_error`)
            self._error = exc

    def _claim_ahead(self) -> None:
        """(worker) The job's claim: its latest committed spend plus a tranche, as the other
        jobs' entries leave room for (never below what it has committed)."""
        with self._entries() as entries:
            others = sum(usd for job, usd in entries.items() if job != self.job)
            with self._state:
                committed = self._committed
            tranche = tranche_usd(self.max_usd, others, committed)
            entries[self.job] = max(entries.get(self.job, 0.0), committed + tranche, committed)

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error


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
