"""The JSONL check reads a file a chunk at a time: a bad byte is named by its line wherever the
chunks split the file, a character split between two chunks is no error, and rows read back in
batches keep their line numbers; the lines are streamed from the `text` builder, as its prepared
load gives them, leaving no copy of the file in the HF cache."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest

from healthbench_exp.data.healthbench import check_jsonl_file, jsonl_lines, jsonl_rows
from healthbench_exp.data.rows import DataError


def test_a_bad_byte_is_named_by_its_line_whatever_the_chunk_size(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": "\xc3\xa9"}\n{"b": "\xc3\xbc\xe2\x82\xac"}\n{"c": "\xff"}\n')
    for chunk in (1, 2, 3, 5, 7, 1 << 20):
        with pytest.raises(DataError, match=r"rows.jsonl line 3 is not UTF-8 \(byte 0xff\)"):
            check_jsonl_file(path, chunk_bytes=chunk)


def test_characters_split_between_chunks_are_valid(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": "é€😀"}\n' * 5, encoding="utf-8")
    for chunk in (1, 2, 3, 4, 1 << 20):
        check_jsonl_file(path, chunk_bytes=chunk)  # no error
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n  \n\n", encoding="utf-8")
    with pytest.raises(DataError, match="is empty"):
        check_jsonl_file(blank, chunk_bytes=2)


def test_rows_read_in_batches_keep_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"n": 1}\n\n{"n": 2}\n{"n": 3}\n\n{"n": 4}\n{"n": 5}\n', encoding="utf-8")
    rows = list(jsonl_rows(path, rows_per_batch=2))
    assert rows == [
        ("rows.jsonl line 1", {"n": 1}),
        ("rows.jsonl line 3", {"n": 2}),
        ("rows.jsonl line 4", {"n": 3}),
        ("rows.jsonl line 6", {"n": 4}),
        ("rows.jsonl line 7", {"n": 5}),
    ]
    path.write_text('{"n": 1}\n{"n": 2}\n{"n": 3}\n{"n": \n', encoding="utf-8")
    with pytest.raises(DataError, match=r"rows\.jsonl line 4: not valid JSON"):
        list(jsonl_rows(path, rows_per_batch=2))


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("bom", [False, True])
def test_streamed_lines_are_the_prepared_builders_and_leave_no_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, newline: str, bom: bool
) -> None:
    """`jsonl_lines` streams the `text` builder: the same lines as the prepared (Arrow) load,
    separators inside JSON strings kept, and no Arrow copy of the file in the user's HF cache."""
    texts = ['{"a": "x\u2028y\u0085z"}', "", '{"b": "é€😀"}', "  ", '{"c": 1}', '{"d": 2}']
    path = tmp_path / "rows.jsonl"
    body = newline.join(texts).encode("utf-8")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + body + newline.encode())
    user_cache = tmp_path / "user-hf-cache"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(user_cache))
    streamed = list(jsonl_lines(path, rows_per_batch=2))
    assert not list(user_cache.rglob("*.arrow"))  # nothing of the file's was written
    prepared = datasets.load_dataset(
        "text", data_files=str(path), split="train", encoding="utf-8-sig",
        cache_dir=str(tmp_path / "prepared"),
    )  # fmt: skip
    expected = [(n, t) for n, t in enumerate(prepared["text"], 1) if t.strip()]
    assert streamed == expected == [(1, texts[0]), (3, texts[2]), (5, texts[4]), (6, texts[5])]
