"""The engine's contract with its sinks (`core.sink.Sink`): the order of the calls, what the
summary gets from `describe`, and which sinks `fail` when something raises."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from healthbench_exp.cli.job import build_task
from healthbench_exp.config.schema import SamplingConfig, TaskConfig, TaskKind
from healthbench_exp.core.endpoint_errors import FatalEndpointError
from healthbench_exp.core.summary import RunSummary, WandbInfo
from healthbench_exp.core.types import ExampleResult, MetaEvalResult
from healthbench_exp.engine.run import RunSettings, run
from healthbench_exp.output.run_dir import RunDirectory
from healthbench_exp.output.sinks import EvalFiles
from tests.engine.test_runner import make_config


class Recorder:
    """A sink that records every call into a shared log."""

    def __init__(self, name: str, calls: list[tuple[str, ...]], finish_raises: bool = False):
        self.name = name
        self.calls = calls
        self.finish_raises = finish_raises
        self.results: list[Any] = []
        self.positions: list[int] = []

    def start(self) -> None:
        self.calls.append((self.name, "start"))

    def on_result(self, result: Any, position: int) -> None:
        self.results.append(result)
        self.positions.append(position)
        self.calls.append((self.name, "on_result"))

    def describe(self) -> dict[str, Any]:
        """Sets the summary's `wandb` (as the W&B sink does), naming this sink and its rows."""
        self.calls.append((self.name, "describe"))
        return {"wandb": WandbInfo(f"{self.name}:{len(self.results)}", None, None, None, None)}

    def finish(self, summary: RunSummary) -> None:
        assert summary.wandb is not None
        self.calls.append((self.name, "finish", summary.wandb.run_id, len(self.results)))
        if self.finish_raises:
            raise OSError("disk full")

    def fail(self, error: BaseException) -> None:
        self.calls.append((self.name, "fail", type(error).__name__))


def run_with(config: Any, output_dir: Path, sinks: list[Any]) -> RunSummary:
    return run(build_task(config, {}), RunSettings(config, RunDirectory(output_dir)), sinks)


def test_sinks_see_every_result_then_describe_then_finish_in_order(
    loopback_server, tmp_path
) -> None:
    config = make_config(loopback_server().base_url, sampling=SamplingConfig(num_examples=3))
    calls: list[tuple[str, ...]] = []
    first, second = Recorder("first", calls), Recorder("second", calls)
    summary = run_with(config, tmp_path, [first, second])

    assert calls[:2] == [("first", "start"), ("second", "start")]
    rows = calls[2:-4]
    assert rows == [("first", "on_result"), ("second", "on_result")] * 3  # each row to both
    assert calls[-4:] == [
        ("first", "describe"),
        ("second", "describe"),
        ("first", "finish", "second:3", 3),  # every sink described before any finishes
        ("second", "finish", "second:3", 3),
    ]
    assert all(isinstance(r, ExampleResult) for r in first.results)
    assert sorted(first.positions) == [0, 1, 2]  # each row's place in the run's rows
    assert summary.wandb is not None and summary.wandb.run_id == "second:3"
    assert summary.eval_counts.rows_scored == 3
    assert (tmp_path / "invocations.jsonl").exists()  # the engine accounted the invocation


def test_a_sink_that_fails_to_finish_fails_itself_and_the_later_ones(
    loopback_server, tmp_path
) -> None:
    config = make_config(loopback_server().base_url, sampling=SamplingConfig(num_examples=2))
    calls: list[tuple[str, ...]] = []
    sinks = [Recorder("files", calls, finish_raises=True), Recorder("wandb", calls)]
    with pytest.raises(OSError, match="disk full"):
        run_with(config, tmp_path, sinks)
    assert calls[-3:] == [
        ("files", "finish", "wandb:2", 2),
        ("files", "fail", "OSError"),  # it did not finish either
        ("wandb", "fail", "OSError"),
    ]


def test_a_run_that_cannot_start_fails_its_sinks_and_writes_no_rows(tmp_path) -> None:
    config = make_config("http://127.0.0.1:9/v1")
    calls: list[tuple[str, ...]] = []
    with pytest.raises(FatalEndpointError, match="unreachable"):
        run_with(config, tmp_path, [EvalFiles(tmp_path), Recorder("wandb", calls)])
    assert calls == [("wandb", "fail", "FatalEndpointError")]  # never started
    assert not (tmp_path / "examples.jsonl").exists()  # files open only once requests go out


def test_the_meta_eval_runs_in_the_same_engine(loopback_server, tmp_path) -> None:
    config = make_config(loopback_server().base_url, task=TaskConfig(kind=TaskKind.meta_eval))
    config = replace(config, sampling=SamplingConfig(num_examples=5))
    calls: list[tuple[str, ...]] = []
    sink = Recorder("only", calls)
    summary = run_with(config, tmp_path, [sink])
    assert summary.task == "meta_eval" and summary.meta_counts.rows_graded == 5
    assert len(sink.results) == 5 and all(isinstance(r, MetaEvalResult) for r in sink.results)
    assert calls[-1] == ("only", "finish", "only:5", 5)
