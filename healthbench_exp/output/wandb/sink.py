"""The job's W&B run as a sink (`core.sink.Sink`): the CLI passes it to the engine last, so
every local output is written before W&B finishes; nothing here raises (a W&B failure is a
warning, see `tracker.Tracker`)."""

from __future__ import annotations

from pathlib import Path

from healthbench_exp.core.sink import SinkFields
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.core.types import ExampleResult, MetaEvalResult
from healthbench_exp.output.wandb.tracker import Tracker


class WandbSink:
    """Progress to W&B as rows finish; the summary, tables and artifact at the end."""

    def __init__(self, tracker: Tracker, output_dir: Path) -> None:
        self.tracker = tracker
        self.output_dir = output_dir

    def start(self) -> None:
        """Nothing yet: the run opens with the first result (see `Tracker`)."""

    def on_result(self, result: ExampleResult | MetaEvalResult, position: int) -> None:
        if isinstance(result, MetaEvalResult):
            self.tracker.on_row(result.grade)
        else:
            self.tracker.on_result(result)

    def describe(self) -> SinkFields:
        """`wandb` in summary.json: where the run is (None when W&B is disabled)."""
        return {"wandb": self.tracker.describe()}

    def finish(self, summary: RunSummary) -> None:
        self.tracker.finish(summary, self.output_dir)

    def interrupted(self, summary: RunSummary, error: BaseException) -> None:
        """Stopped by a signal: the run is failed with the signal's exit code, as on any error
        (`wandb sync` never uploads it as finished); its resume finishes it."""
        self.tracker.fail(error)

    def fail(self, error: BaseException) -> None:
        self.tracker.fail(error)
