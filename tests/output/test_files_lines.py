"""Each JSONL line is strict JSON, written as `strict_json.dumps` writes it."""

from __future__ import annotations

import json
from pathlib import Path

from healthbench_exp.core.strict_json import dumps
from healthbench_exp.output.files import JsonlWriter, jsonl_line, read_lines


def test_lines_are_strict_json_as_strict_json_writes_them(tmp_path: Path) -> None:
    rows = [
        {"prompt_id": "é-1", "score": 0.5, "tags": ["a", "b"], "error": None},
        {"prompt_id": "p2", "score": float("nan"), "nested": {"x": float("inf")}},
    ]
    assert [jsonl_line(r) for r in rows] == [dumps(r, ensure_ascii=False) for r in rows]
    with JsonlWriter(tmp_path / "rows.jsonl") as writer:
        first = writer.write_lines(rows)
        second = writer.write({"after": True})
    text = (tmp_path / "rows.jsonl").read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text and '"é-1"' in text  # not \u-escaped
    parsed = [json.loads(line) for line in text.splitlines()]
    assert parsed[1] == {"prompt_id": "p2", "score": None, "nested": {"x": None}}
    with open(tmp_path / "rows.jsonl", "rb") as lines:
        assert read_lines(lines, first, 2)[0] == parsed[0]
        assert read_lines(lines, second, 1) == [{"after": True}]
