"""The local files of a run as sinks (`core.sink.Sink`), which the CLI passes to the engine.

Per-row JSONL files are opened when the first request is about to go out and written (and
flushed) as each row finishes, so a crash keeps every finished row; at the end the JSONL files
are closed and `summary.json`, the `results/` HF dataset and `report.html` are written, in that
order. An eval writes `examples.jsonl` and `per_criterion.jsonl`, a meta-eval `meta_eval.jsonl`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from healthbench_exp.config.schema import TaskKind
from healthbench_exp.core.sink import Sink, SinkFields
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.core.types import ExampleResult, MetaEvalResult
from healthbench_exp.output.dataset import write_meta_eval_dataset, write_results_dataset
from healthbench_exp.output.files import JsonlWriter, ResultWriter, write_summary
from healthbench_exp.output.html.pages import write_meta_eval_report, write_run_report


class _RowFiles:
    """Opens its writer on `start`, closes it on `finish` or `fail`."""

    def __init__(self, output_dir: Path) -> None:
        self.output_dir = output_dir
        self.open = contextlib.ExitStack()

    def start(self) -> None:
        self.open.enter_context(self._writer())

    def _writer(self) -> contextlib.AbstractContextManager[object]:
        raise NotImplementedError

    def describe(self) -> SinkFields:
        return {}

    def fail(self, error: BaseException) -> None:
        self.open.close()


class EvalFiles(_RowFiles):
    """examples.jsonl and per_criterion.jsonl as rows finish; then summary.json, results/ and
    report.html."""

    def _writer(self) -> ResultWriter:
        self.writer = ResultWriter(self.output_dir)
        return self.writer

    def on_result(self, result: ExampleResult) -> None:
        self.writer.write(result)

    def finish(self, summary: RunSummary, results: Sequence[ExampleResult]) -> None:
        self.open.close()
        write_summary(self.output_dir, summary)
        write_results_dataset(self.output_dir / "results", list(results))
        write_run_report(self.output_dir)


class MetaEvalFiles(_RowFiles):
    """meta_eval.jsonl as rows finish; then summary.json, results/ and report.html."""

    def _writer(self) -> JsonlWriter:
        self.writer = JsonlWriter(self.output_dir / "meta_eval.jsonl")
        return self.writer

    def on_result(self, result: MetaEvalResult) -> None:
        self.writer.write(result.record)

    def finish(self, summary: RunSummary, results: Sequence[MetaEvalResult]) -> None:
        self.open.close()
        write_summary(self.output_dir, summary)
        write_meta_eval_dataset(self.output_dir / "results", [r.record for r in results])
        write_meta_eval_report(self.output_dir, summary)


def local_files(kind: TaskKind, output_dir: Path) -> Sink:
    """The sink of a task's local files in `output_dir`."""
    return MetaEvalFiles(output_dir) if kind is TaskKind.meta_eval else EvalFiles(output_dir)
