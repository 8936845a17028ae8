"""The progress bar of a run: rows done, the run's counts, and each endpoint's wait and pace."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Generic, TypeVar

from healthbench_exp.core.counts import RunCounts
from healthbench_exp.model.endpoint import ChatEndpoint

Result = TypeVar("Result")


class Progress(Generic[Result]):
    """A tqdm bar over a run's rows with the run's `RunCounts` as live counters (the same counts
    the end-of-run table and summary.json report); silent when disabled.

    `tally(counts, result)` counts one finished row (the task's `tally`); `unit` is "ex" (the
    bar reads "examples") or "row" ("rows").
    """

    def __init__(
        self,
        total: int,
        enabled: bool,
        endpoints: list[ChatEndpoint],
        tally: Callable[[RunCounts, Result], None],
        unit: str = "ex",
    ) -> None:
        self.endpoints = endpoints
        self.counts = RunCounts(rows=total)
        self.tally = tally
        self.bar = None
        self.interactive = False
        if enabled:
            from tqdm import tqdm  # 80 ms of imports: only when the bar is shown

            self.interactive = sys.stderr.isatty()
            self.bar = tqdm(
                total=total,
                unit=unit,
                desc="examples" if unit == "ex" else "rows",
                dynamic_ncols=True,
                mininterval=0.5 if self.interactive else 10.0,
            )

    def update(self, result: Result) -> None:
        """Count a finished row and advance the bar."""
        self.tally(self.counts, result)
        if self.bar is not None:
            self.bar.set_postfix_str(self.postfix(), refresh=False)
            self.bar.update(1)

    def postfix(self) -> str:
        """Counters, and each rate-limited endpoint's wait and pace."""
        in_flight = sum(e.stats.in_flight for e in self.endpoints)
        counters = {**self.counts.progress_fields(), "in_flight": in_flight}
        parts = [
            ", ".join(f"{name}={value}" for name, value in counters.items()),
            *filter(None, (e.pacer.describe() for e in self.endpoints)),
        ]
        return ", ".join(parts)

    def refresh(self) -> None:
        """Show the current postfix though no row finished (a rate-limit wait, a stall);
        redrawn at once on a terminal only (a log file gets it with the next update)."""
        if self.bar is not None:
            self.bar.set_postfix_str(self.postfix(), refresh=self.interactive)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
