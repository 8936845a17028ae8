"""The results dataset is read back from the per-row files (issue 29, memory): rows finishing in
any order give the dataset that the whole list of results, in the run's order, gives."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import datasets
import pytest

from healthbench_exp.core.summary import RunSummary
from healthbench_exp.core.types import Example, ExampleResult
from healthbench_exp.output.dataset import (
    BATCH,
    SHARD,
    results_features,
    results_record,
    write_results_dataset,
    write_results_records,
)
from healthbench_exp.output.sinks import EvalFiles
from tests.engine.test_stream_summary import graded, sample
from tests.output.test_console import EVAL


def summary() -> RunSummary:
    return RunSummary.from_dict(EVAL)  # what summary.json says does not change the dataset


def read(path: Path) -> tuple[list[dict[str, object]], object, dict[str, object]]:
    dataset = datasets.load_from_disk(str(path))
    info = json.loads((path / "dataset_info.json").read_text(encoding="utf-8"))
    return dataset.to_list(), dataset.features, info


def with_float_points(example: Example) -> Example:
    first = replace(example.rubrics[0], points=float(example.rubrics[0].points))
    return replace(example, rubrics=(first, *example.rubrics[1:]))


@pytest.mark.parametrize("points", ["int", "float"])
def test_the_results_dataset_of_rows_in_any_order_is_the_lists(tmp_path: Path, points) -> None:
    rng = random.Random(4)
    examples = sample()
    if points == "float":  # one criterion's points written 5.0: a float column
        examples[3] = with_float_points(examples[3])
    results: list[ExampleResult] = [graded(e, r, rng) for r in range(2) for e in examples]
    results[1] = replace(results[1], completion="ünïcode ✓ " + (results[1].completion or ""))
    assert any(r.metrics is None for r in results)  # failed and unscorable rows are left out

    write_results_dataset(tmp_path / "expected", results)
    run = tmp_path / "run"
    run.mkdir()
    sink = EvalFiles(run)
    sink.start()
    finished = list(enumerate(results))
    rng.shuffle(finished)
    for position, result in finished:
        sink.on_result(result, position)
    sink.finish(summary())

    rows, features, info = read(run / "results")
    expected_rows, expected_features, expected_info = read(tmp_path / "expected")
    assert features == expected_features and info == expected_info
    assert rows == expected_rows
    assert len(rows) == sum(r.metrics is not None for r in results)
    assert sorted(p.name for p in (run / "results").iterdir()) == [
        "data-00000-of-00001.arrow",
        "dataset_info.json",
        "state.json",
    ]


def test_a_run_without_scored_rows_has_an_empty_dataset(tmp_path: Path) -> None:
    example = sample()[0]
    failed = ExampleResult(example, 0, list(example.prompt), None, [], error="model: 500")
    sink = EvalFiles(tmp_path)
    sink.start()
    sink.on_result(failed, 0)
    sink.finish(summary())
    assert len(datasets.load_from_disk(str(tmp_path / "results"))) == 0


def test_the_results_directory_is_what_save_to_disk_writes(tmp_path: Path) -> None:
    """The shard is written in place and state.json / dataset_info.json beside it as
    `Dataset.save_to_disk` writes them: the installed `datasets`' own save of the same rows
    must give the same two files (the fingerprint aside, which is random per dataset)."""
    rng = random.Random(5)
    results = [graded(e, 0, rng) for e in sample()]
    write_results_dataset(tmp_path / "ours", results)
    saved = tmp_path / "saved"
    datasets.load_from_disk(str(tmp_path / "ours")).save_to_disk(str(saved), num_shards=1)

    def state(path: Path) -> dict[str, object]:
        read = json.loads((path / "state.json").read_text(encoding="utf-8"))
        return {key: value for key, value in read.items() if key != "_fingerprint"}

    assert state(tmp_path / "ours") == state(saved)
    ours = (tmp_path / "ours" / "dataset_info.json").read_text(encoding="utf-8")
    assert ours == (saved / "dataset_info.json").read_text(encoding="utf-8")
    assert sorted(p.name for p in saved.iterdir()) == sorted(
        p.name for p in (tmp_path / "ours").iterdir()
    )


@pytest.mark.parametrize("points", ["int", "float"])
def test_the_shard_is_what_datasets_writes_record_by_record(tmp_path: Path, points) -> None:
    """Records are encoded and written a batch of columns at a time: the shard must hold the
    same bytes as `datasets`' own `ArrowWriter.write(features.encode_example(record))` of each
    record, over several full batches and a last partial one."""
    from datasets.arrow_writer import ArrowWriter

    rng = random.Random(6)
    examples = sample()
    if points == "float":
        examples[2] = with_float_points(examples[2])
    results = [graded(e, r, rng) for r in range(40) for e in examples]
    records = [results_record(r) for r in results if r.metrics is not None]
    assert len(records) > 2 * BATCH and len(records) % BATCH  # two full batches and a part
    integral = points == "int"
    write_results_records(tmp_path / "ours", records, integral)

    features = results_features(integral)
    expected = tmp_path / "record_by_record.arrow"
    with ArrowWriter(features=features, path=str(expected), writer_batch_size=BATCH) as writer:
        for record in records:
            writer.write(features.encode_example(record))
        writer.finalize()
    assert (tmp_path / "ours" / SHARD).read_bytes() == expected.read_bytes()
