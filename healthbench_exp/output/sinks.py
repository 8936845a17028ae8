"""The local files of a run as sinks (`core.sink.Sink`), which the CLI passes to the engine.

Per-row JSONL files are opened when the first request is about to go out and written (and
flushed) as each row finishes, so a crash keeps every finished row; at the end the JSONL files
are closed and `summary.json`, the `results/` HF dataset (read back from those files: no sink
keeps the run's results) and `report.html` are written, in that order. An eval writes
`examples.jsonl` and `per_criterion.jsonl`, a meta-eval `meta_eval.jsonl`.
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Iterator
from pathlib import Path

from healthbench_exp.config.schema import TaskKind
from healthbench_exp.core.sink import Sink, SinkFields
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.core.types import ExampleResult, MetaEvalResult
from healthbench_exp.output.dataset import (
    record_of_lines,
    write_meta_eval_dataset,
    write_results_records,
)
from healthbench_exp.output.files import JsonlWriter, ResultWriter, read_lines, write_summary
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

    def finish(self, summary: RunSummary) -> None:
        raise NotImplementedError

    def interrupted(self, summary: RunSummary, error: BaseException) -> None:
        """Stopped by a signal: the same files as `finish`, of what finished (partial)."""
        self.finish(summary)

    def fail(self, error: BaseException) -> None:
        self.open.close()


class EvalFiles(_RowFiles):
    """examples.jsonl and per_criterion.jsonl as rows finish; then summary.json, results/ and
    report.html. The results dataset is read back from the JSONL files, in the rows' order:
    of each scored row only its position and where its lines start are kept."""

    def _writer(self) -> ResultWriter:
        self.writer = ResultWriter(self.output_dir)
        self.scored = RowIndex()
        self.integral = True  # every scored row's points are whole numbers
        return self.writer

    def on_result(self, result: ExampleResult, position: int) -> None:
        place = self.writer.write(result)
        if result.metrics is not None:
            self.scored.add(position, place.example, place.criteria, len(result.example.rubrics))
            self.integral &= all(isinstance(c.points, int) for c in result.example.rubrics)

    def finish(self, summary: RunSummary) -> None:
        self.open.close()
        write_summary(self.output_dir, summary)
        with (
            open(self.output_dir / "examples.jsonl", "rb") as examples,
            open(self.output_dir / "per_criterion.jsonl", "rb") as criteria,
        ):
            records = (
                record_of_lines(
                    read_lines(examples, example, 1)[0], read_lines(criteria, first, count)
                )
                for example, first, count in self.scored.in_order()
            )
            write_results_records(self.output_dir / "results", records, self.integral)
        write_run_report(self.output_dir)


class MetaEvalFiles(_RowFiles):
    """meta_eval.jsonl as rows finish; then summary.json, results/ (read back from
    meta_eval.jsonl, in the rows' order) and report.html."""

    def _writer(self) -> JsonlWriter:
        self.writer = JsonlWriter(self.output_dir / "meta_eval.jsonl")
        self.rows = RowIndex()
        return self.writer

    def on_result(self, result: MetaEvalResult, position: int) -> None:
        self.rows.add(position, self.writer.write(result.record), 0, 0)

    def finish(self, summary: RunSummary) -> None:
        self.open.close()
        write_summary(self.output_dir, summary)
        with open(self.output_dir / "meta_eval.jsonl", "rb") as lines:
            records = [read_lines(lines, offset, 1)[0] for offset, _, _ in self.rows.in_order()]
        write_meta_eval_dataset(self.output_dir / "results", records)
        write_meta_eval_report(self.output_dir, summary)


class RowIndex:
    """Where each row's lines start in the files written as rows finish, by the row's position:
    three arrays of ints, not the rows (read back in the rows' order with `in_order`)."""

    def __init__(self) -> None:
        self.positions = array("q")
        self.places = array("q")  # per row: first offset, second offset, line count

    def add(self, position: int, first: int, second: int, count: int) -> None:
        self.positions.append(position)
        self.places.extend((first, second, count))

    def in_order(self) -> Iterator[tuple[int, int, int]]:
        """(first, second, count) of each row, in the rows' order."""
        for i in sorted(range(len(self.positions)), key=self.positions.__getitem__):
            yield self.places[3 * i], self.places[3 * i + 1], self.places[3 * i + 2]


def local_files(kind: TaskKind, output_dir: Path) -> Sink:
    """The sink of a task's local files in `output_dir`."""
    return MetaEvalFiles(output_dir) if kind is TaskKind.meta_eval else EvalFiles(output_dir)
