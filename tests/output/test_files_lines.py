"""Each JSONL line is strict JSON, written as `strict_json.dumps` writes it."""

from __future__ import annotations

import json
from pathlib import Path

from healthbench_exp.core.strict_json import dumps, finite_or_null
from healthbench_exp.output.files import JsonlWriter, read_lines


def test_lines_are_strict_json_as_strict_json_writes_them(tmp_path: Path) -> None:
    rows = [
        {"prompt_id": "é-1", "score": 0.5, "tags": ["a", "b"], "error": None},
        {"prompt_id": "p2", "score": float("nan"), "nested": {"x": float("inf")}},
    ]
    for options in ({"ensure_ascii": False}, {"ensure_ascii": True}, {"indent": 2}):
        # the encoders strict_json keeps write what `json.dumps` writes, non-finite as null
        expected = [json.dumps(finite_or_null(r), allow_nan=False, **options) for r in rows]
        assert [dumps(r, **options) for r in rows] == expected
    with JsonlWriter(tmp_path / "rows.jsonl") as writer:
        first = writer.write_lines(rows)
        second = writer.write({"after": True})
    text = (tmp_path / "rows.jsonl").read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text and '"é-1"' in text  # not \u-escaped
    assert text.splitlines()[:2] == [dumps(r, ensure_ascii=False) for r in rows]
    parsed = [json.loads(line) for line in text.splitlines()]
    assert parsed[1] == {"prompt_id": "p2", "score": None, "nested": {"x": None}}
    with open(tmp_path / "rows.jsonl", "rb") as lines:
        assert read_lines(lines, first, 2)[0] == parsed[0]
        assert read_lines(lines, second, 1) == [{"after": True}]
