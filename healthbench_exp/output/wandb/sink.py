"""The job's W&B run as a sink (`core.sink.Sink`): the CLI passes it to the engine last, so
every local output is written before W&B finishes; nothing here raises (a W&B failure is a
warning, see `tracker.Tracker`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from healthbench_exp.core.summary import RunSummary, WandbInfo
from healthbench_exp.core.types import ExampleResult, MetaEvalResult
from healthbench_exp.output.wandb.tracker import Tracker


class WandbSink:
    """Progress to W&B as rows finish; the summary, tables and artifact at the end."""

    def __init__(self, tracker: Tracker, output_dir: Path) -> None:
        self.tracker = tracker
        self.output_dir = output_dir

    def start(self) -> None:
        """Nothing yet: the run opens with the first result (see `Tracker`)."""

    def on_result(self, result: ExampleResult | MetaEvalResult) -> None:
        if isinstance(result, MetaEvalResult):
            self.tracker.on_row(result.grade)
        else:
            self.tracker.on_result(result)

    def describe(self) -> dict[str, Any]:
        """`wandb` in summary.json: where the run is (None when W&B is disabled)."""
        where = self.tracker.describe()
        return {"wandb": None if where is None else WandbInfo.from_dict(where)}

    def finish(self, summary: RunSummary, results: Sequence[Any]) -> None:
        self.tracker.finish(summary, self.output_dir)

    def fail(self, error: BaseException) -> None:
        self.tracker.fail(error)
