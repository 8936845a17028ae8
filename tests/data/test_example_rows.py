"""A run's rows held as references (issue 29, memory): every row is validated up front as
`load_examples` validates it, only where each row is stays, and `ExampleRows[i]` builds the same
example again, for every source and every line ending; a file changed under a run fails the row
that changed, naming its line."""

from __future__ import annotations

import gc
import itertools
import json
import os
from pathlib import Path

import pytest

from healthbench_exp.config.schema import (
    CompletionsConfig,
    CompletionSource,
    DatasetConfig,
    DataSource,
    SamplingConfig,
)
from healthbench_exp.core.types import Example
from healthbench_exp.data.completions import row_items, work_items
from healthbench_exp.data.example_rows import ExampleRows, line_starts, load_rows
from healthbench_exp.data.healthbench import DataError, bundled_sample_path, load_examples
from tests.conftest import make_row
from tests.data.test_professional import pro_row


def live_examples() -> int:
    gc.collect()
    return sum(isinstance(o, Example) for o in gc.get_objects())


def write_lines(path: Path, lines: list[str], newline: str, bom: bool = False) -> Path:
    body = newline.join(lines).encode("utf-8")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + body)
    return path


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("bom", [False, True])
def test_line_starts_split_lines_as_universal_newlines_do(tmp_path, newline, bom) -> None:
    lines = ['{"a": "é"}', "", '{"b": "€😀"}', "  ", '{"c": 1}']
    path = write_lines(tmp_path / "rows.jsonl", [*lines, ""], newline, bom)  # ends with one
    with open(path, encoding="utf-8-sig") as file:  # the `text` builder's reading
        expected = file.read().splitlines()
    for chunk in (1, 2, 3, 5, 1 << 20):  # "\r\n" split between chunks included
        starts = line_starts(path, chunk_bytes=chunk)
        raw = path.read_bytes()
        got = [raw[a:b].rstrip(b"\r\n") for a, b in itertools.pairwise(starts)]
        got[0] = got[0].removeprefix(b"\xef\xbb\xbf")
        assert [g.decode() for g in got] == expected == lines
    path.write_bytes(path.read_bytes().rstrip(b"\r\n"))  # no newline after the last line
    assert len(line_starts(path, chunk_bytes=2)) == len(lines) + 1


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_rows_build_the_examples_load_examples_reads(tmp_path, newline) -> None:
    rows = [
        json.dumps(make_row("a")),
        "",
        json.dumps(pro_row("pro-1")),
        json.dumps(make_row("b", example_tags=["theme:global_health"])),
    ]
    path = write_lines(tmp_path / "mixed.jsonl", rows, newline, bom=True)
    config = DatasetConfig(path=str(path))
    held = load_rows(config)
    assert list(held) == load_examples(config)
    assert [e.where for e in held] == [
        "mixed.jsonl line 1",
        "mixed.jsonl line 3",
        "mixed.jsonl line 4",
    ]
    assert list(held.refs) == [1, 3, 4]  # line numbers: what the run holds of each row
    assert held[2] == held[2] and held[2] is not held[2]  # built again on each ask
    assert list(held.criteria) == [len(e.rubrics) for e in held]


def test_rows_hold_no_examples(tmp_path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(make_row(f"r{i}")) + "\n" for i in range(200)))
    before = live_examples()
    held = load_rows(DatasetConfig(path=str(path)))
    assert len(held) == 200 and live_examples() == before
    first = held[0]
    assert first.prompt_id == "r0" and live_examples() == before + 1


def test_every_source_gives_its_rows_as_references(tmp_path) -> None:
    repo = tmp_path / "mirror"  # the HF code path, on a folder laid out like a dataset repo
    repo.mkdir()
    rows = [make_row("m1"), make_row("m2", example_tags=["theme:global_health"])]
    (repo / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    body = json.dumps(make_row("official")) + "\n"
    (tmp_path / "hard.jsonl").write_text(body)  # the official file, already in the cache
    configs = [
        DatasetConfig(source=DataSource.hf, hf_repo=str(repo), hf_split="test"),
        DatasetConfig(
            source=DataSource.openai, openai_file="hard.jsonl", sha256=None, cache_dir=str(tmp_path)
        ),
        DatasetConfig(source=DataSource.bundled),
    ]
    for config in configs:
        held = load_rows(config)
        assert list(held) == load_examples(config)
    assert held[23].where == "sample.jsonl line 24"
    hf = load_rows(configs[0])
    assert list(hf.refs) == [0, 1] and hf[1].where.endswith("row 1")


@pytest.mark.parametrize("loader", [load_rows, load_examples])
def test_a_bad_or_repeated_row_fails_the_load_naming_line_and_id(write_jsonl, loader) -> None:
    good = [make_row(f"g{i}") for i in range(5)]
    bad = write_jsonl([*good, make_row("x", rubrics=[{"criterion": "c", "points": "5"}])])
    with pytest.raises(
        DataError, match=r"data\.jsonl line 6 \(prompt_id x\): rubrics\[0\] 'points'"
    ):
        loader(DatasetConfig(path=str(bad)))
    twice = write_jsonl([*good, make_row("g1")], "twice.jsonl")
    with pytest.raises(
        DataError,
        match=r"twice\.jsonl line 6: duplicate prompt_id g1 \(first at twice\.jsonl line 2\)",
    ):
        loader(DatasetConfig(path=str(twice)))
    broken = write_jsonl([*good, '{"prompt_id": '], "broken.jsonl")
    with pytest.raises(DataError, match=r"broken\.jsonl line 6: not valid JSON"):
        loader(DatasetConfig(path=str(broken)))


@pytest.mark.parametrize("num_examples", [None, 5, 17])
@pytest.mark.parametrize(
    "completions",
    [
        CompletionsConfig(),
        CompletionsConfig(source=CompletionSource.physician, group=1),
        CompletionsConfig(source=CompletionSource.physician_references, group=2),
    ],
)
def test_rows_pick_the_same_items_in_the_same_order(num_examples, completions) -> None:
    config = DatasetConfig(path=str(bundled_sample_path()))
    sampling = SamplingConfig(num_examples=num_examples, seed=3, rollouts_per_example=2)
    listed, info = work_items(load_examples(config), completions, sampling, system_message=None)
    held = load_rows(config)
    items, held_info = row_items(held, completions, sampling, system_message=None)
    assert [item.work_item(held) for item in items] == listed and held_info == info
    assert all(isinstance(item.position, int) for item in items)


def test_a_file_rewritten_under_a_run_fails_the_changed_row(tmp_path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(make_row(f"r{i}")) + "\n" for i in range(3)))
    held = load_rows(DatasetConfig(path=str(path)))
    lines = path.read_text().splitlines()
    lines[1] = lines[1].replace("headache", "backache")  # the same length, another row
    with open(path, "r+") as file:  # in place: the run's open file sees it
        file.write("\n".join(lines) + "\n")
    assert held[0].prompt_id == "r0"
    with pytest.raises(DataError, match=r"rows\.jsonl line 2 changed since the run validated it"):
        held[1]
    # an editor's save (a new file renamed over it) leaves the rows the run validated
    replaced = tmp_path / "new.jsonl"
    replaced.write_text(json.dumps(make_row("other")) + "\n")
    os.replace(replaced, path)
    assert held[2].prompt_id == "r2"


def test_an_empty_dataset_is_an_error(write_jsonl) -> None:
    with pytest.raises(DataError, match="is empty"):
        load_rows(DatasetConfig(path=str(write_jsonl(["", "  "]))))
    assert isinstance(load_rows(DatasetConfig(path=str(write_jsonl([make_row()])))), ExampleRows)
