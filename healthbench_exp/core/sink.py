"""The Sink protocol: where a run's results and summary go, passed into the engine from outside.

The engine (`engine.run.run`) knows sinks only through this protocol; the files, the HF dataset,
report.html and W&B are implementations built by the CLI (`output.sinks`, `output.wandb.sink`).
For one run the engine calls, on every sink in the order given:

1. `start()` once, after the data is loaded and the endpoints answered, just before the first
   request (a sink that writes per-row files opens them here, so a run that fails to start
   leaves no result file behind);
2. `on_result(result, position)` as each row finishes (an `ExampleResult` or a
   `MetaEvalResult`; `position`: the row's index in the task's rows, from 0: rows finish out of
   order), from the event loop's thread: it must be quick and must not block;
3. `describe()` once the summary is built, on every sink before any sink finishes: fields of
   the `RunSummary` the sink sets (W&B: `wandb`, where its run is; most sinks: none);
4. `finish(summary)` in order, so sinks listed first (local files) are complete before later
   ones (W&B) run; or, when a stopping signal ended the run after its grace,
   `interrupted(summary, error)` in the same order (`summary` is partial: what finished); or,
   when anything else raised on the way (a second signal too), `fail(error)` on every sink
   that had not finished, and the error propagates.

The engine keeps no whole-run list of results: a sink that writes something of every row at
the end (the `results/` dataset) reads back what it wrote as the rows finished.

`fail` must not raise. A sink whose failure must not cost the run (W&B) warns instead of raising
from any method.
"""

from __future__ import annotations

from typing import Protocol, TypedDict, TypeVar

from healthbench_exp.core.summary import RunSummary, WandbInfo

ResultT_contra = TypeVar("ResultT_contra", contravariant=True)


class SinkFields(TypedDict, total=False):
    """The `RunSummary` fields a sink may set from `describe()`."""

    wandb: WandbInfo | None


class Sink(Protocol[ResultT_contra]):
    """Receives one run's results (`ResultT_contra`: an `ExampleResult` or a `MetaEvalResult`)
    as they finish and its summary at the end."""

    def start(self) -> None:
        """The first request is about to go out."""

    def on_result(self, result: ResultT_contra, position: int) -> None:
        """One row finished (an `ExampleResult` or a `MetaEvalResult`); `position`: its index
        in the task's rows."""

    def describe(self) -> SinkFields:
        """`RunSummary` fields this sink sets (name -> value), before any sink finishes."""

    def finish(self, summary: RunSummary) -> None:
        """The run ended: its summary (with every sink's `describe()`)."""

    def interrupted(self, summary: RunSummary, error: BaseException) -> None:
        """A stopping signal (`error`) ended the run; `summary` is what finished (partial). The
        local files write what `finish` writes (a resume rewrites it); W&B fails the run as
        `fail` does. A second signal may raise from it."""

    def fail(self, error: BaseException) -> None:
        """The run raised `error` before this sink finished; never raises."""
