"""A dataset's validated rows, held as references: each `Example` is built when it is asked for.

A run validates every row before its first request, exactly as `load_examples` does (a bad row or
a repeated id fails naming its line and id), but keeps of each row only where it is: its line of
the local JSONL file (the byte offsets of every line, and a CRC-32 of each row's text), or its
index in the Hugging Face dataset's table. `ExampleRows[i]` reads and parses row `i` again, when
its row starts (`tasks.eval.EvalTask.run_item`). So a run holds a few bytes per row instead of
the parsed rows (6 KB each for the benchmark's synthetic rows, 44 KB for real HealthBench rows
with their ideal completions), and its memory does not grow with the dataset.

The JSONL file stays open for the run, so a file replaced while it runs (an editor saving it)
still reads as it was validated; one rewritten in place fails the row that changed with a
DataError naming its line, never a different row graded in its place.
"""

from __future__ import annotations

import re
import weakref
import zlib
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, overload

from healthbench_exp.config.schema import DatasetConfig
from healthbench_exp.core.types import Example
from healthbench_exp.data.healthbench import (
    check_size,
    dataset_origin,
    decode_line,
    jsonl_lines,
    parse_row,
    table_rows,
    validated,
)
from healthbench_exp.data.rows import DataError

if TYPE_CHECKING:
    import datasets

BOM = b"\xef\xbb\xbf"
NEWLINE = re.compile(rb"\r\n|\r|\n")  # a line's end, as `datasets`' text builder reads a file


class RowSource(Protocol):
    """Where a dataset's rows are: every row once, in order, then any row again by its ref."""

    def rows(self) -> Iterator[tuple[int, str, object]]:
        """(ref, where, decoded row) of every row, in order."""
        ...

    def row(self, ref: int) -> tuple[str, object]:
        """(where, decoded row) of the row `rows` gave with `ref`, read again."""
        ...


def line_starts(path: Path, chunk_bytes: int = 1 << 20) -> array[int]:
    """The byte offset of every line's start in `path`, then the file's end (the end of its last
    line): lines end at "\\n", "\\r\\n" or "\\r", as Python's universal newlines (the `text`
    builder's) split them. Read a chunk at a time."""
    starts = array("q", [0])
    offset, after_cr = 0, False  # bytes before this chunk; the last one was a "\r"
    with open(path, "rb") as file:
        while chunk := file.read(chunk_bytes):
            for match in NEWLINE.finditer(chunk):
                if after_cr and match.start() == 0 and chunk[:1] == b"\n":
                    starts[-1] += 1  # the "\n" of a "\r\n" split between two chunks
                else:
                    starts.append(offset + match.end())
                after_cr = False
            after_cr = chunk.endswith(b"\r")
            offset += len(chunk)
    if offset > starts[-1]:  # a last line without a newline
        starts.append(offset)
    return starts


class JsonlLines:
    """A local JSONL file's rows (`data.healthbench.jsonl_lines`: through the `text` builder);
    ref: the row's line number, read again from the file by its byte offsets."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.starts = line_starts(path)
        self.checks = array("I", [0]) * (len(self.starts) - 1)  # each row's CRC-32
        self.file = open(path, "rb", buffering=0)  # noqa: SIM115 -- closed with this object
        weakref.finalize(self, self.file.close)

    def rows(self) -> Iterator[tuple[int, str, object]]:
        lines = len(self.starts) - 1
        for number, line in jsonl_lines(self.path):
            if number > lines:  # never: both read lines as universal newlines do
                raise DataError(f"{self.path.name}: line {number} is past the file's {lines}")
            self.checks[number - 1] = zlib.crc32(line.encode("utf-8"))
            where, row = decode_line(self.path.name, number, line)
            yield number, where, row

    def row(self, ref: int) -> tuple[str, object]:
        start, end = self.starts[ref - 1], self.starts[ref]
        self.file.seek(start)
        raw = self.file.read(end - start).rstrip(b"\r\n")
        if start == 0 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        if zlib.crc32(raw) != self.checks[ref - 1]:
            raise DataError(
                f"{self.path.name} line {ref} changed since the run validated it; "
                "leave the data file as it is while a run reads it"
            )
        return decode_line(self.path.name, ref, raw.decode("utf-8"))


class TableRows:
    """A Hugging Face dataset's rows (its memory-mapped table); ref: the row's index."""

    def __init__(self, table: datasets.Dataset, name: str) -> None:
        self.table, self.name = table, name

    def rows(self) -> Iterator[tuple[int, str, object]]:
        for index, (where, row) in enumerate(table_rows(self.table, self.name)):
            yield index, where, row

    def row(self, ref: int) -> tuple[str, object]:
        return f"{self.name} row {ref}", self.table[ref]


class ExampleRows(Sequence[Example]):
    """The validated examples of a dataset, in order; `rows[i]` builds example `i` from its
    source again (see the module docstring). Iterating builds one example at a time."""

    def __init__(self, source: RowSource, refs: array[int], criteria: array[int]) -> None:
        self.source = source
        self.refs = refs  # each row's ref in `source`
        self.criteria = criteria  # each row's number of criteria (the run's log line)

    @classmethod
    def validated(cls, source: RowSource) -> ExampleRows:
        """Every row of `source` parsed and checked as `load_examples` checks them (DataError
        naming the row; an id seen twice; no rows); only each row's ref is kept."""
        refs, criteria = array("q"), array("I")

        def rows() -> Iterator[tuple[str, object]]:
            for ref, where, row in source.rows():
                refs.append(ref)
                yield where, row

        for example in validated(rows()):  # each example is let go once counted
            criteria.append(len(example.rubrics))
        return cls(source, refs, criteria)

    def __len__(self) -> int:
        return len(self.refs)

    @overload
    def __getitem__(self, index: int) -> Example: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Example]: ...

    def __getitem__(self, index: int | slice) -> Example | Sequence[Example]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        where, row = self.source.row(self.refs[index])
        return parse_row(row, where)

    def __iter__(self) -> Iterator[Example]:
        for i in range(len(self)):
            yield self[i]


def load_rows(config: DatasetConfig) -> ExampleRows:
    """The configured dataset's examples, validated as `load_examples` validates them (and with
    its WARNING for an official set of another size), held as references."""
    origin, where = dataset_origin(config)
    if isinstance(origin, Path):
        source: RowSource = JsonlLines(origin)
    else:
        source = TableRows(origin, config.hf_repo)
    rows = ExampleRows.validated(source)
    check_size(config, len(rows), where)
    return rows
