"""What both row formats share: the error type, the message list, the rubric list.

A row is one decoded JSON object of a data file (the 2025 HealthBench schema or the HealthBench
Professional schema, SPEC sections 1 and 6); `label` in the messages below is where it is
("data.jsonl line 3 (prompt_id ...)"), so every error names the row a user has to fix.
"""

from __future__ import annotations

import math
from pathlib import Path


class DataError(ValueError):
    """A row that does not follow the HealthBench schema; the message names where."""


def data_file_problem(key: str, value: str) -> str | None:
    """What is wrong with `value` (`~` expanded) as the data file the config key `key` names:
    missing, or a directory; None for a file."""
    path = Path(value).expanduser()
    if path.is_dir():
        return f"{key}={value}: a directory, not a file; name the JSONL file in it"
    if not path.is_file():
        return f"{key}={value}: no such file"
    return None


def json_object(row: object, where: str) -> dict[str, object]:
    """A decoded row as the JSON object it must be; DataError naming `where` otherwise."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    return row


def row_id(row: object, where: str, key: str) -> tuple[str, str]:
    """(the row's id under `key`, "where (key id)"); DataError if it has none."""
    value = json_object(row, where).get(key)
    if not isinstance(value, str) or not value:
        raise DataError(f"{where}: missing or empty '{key}'")
    return value, f"{where} ({key} {value})"


def row_label(row: object, where: str) -> tuple[str, str]:
    """(prompt_id, "where (prompt_id ...)") of a decoded row; DataError if it has no prompt_id."""
    return row_id(row, where, "prompt_id")


def parse_messages(value: object, label: str, key: str = "prompt") -> tuple[dict[str, str], ...]:
    """A non-empty list of {role, content} strings, as plain dicts; DataError naming `label`."""
    if not isinstance(value, list) or not value:
        raise DataError(f"{label}: '{key}' must be a non-empty list of {{role, content}} messages")
    for i, message in enumerate(value):
        if not (
            isinstance(message, dict)
            and isinstance(message.get("role"), str)
            and isinstance(message.get("content"), str)
        ):
            raise DataError(
                f"{label}: {key}[{i}] must be an object with string 'role' and 'content'"
            )
    return tuple({"role": m["role"], "content": m["content"]} for m in value)


def rubric_items(
    value: object, label: str, key: str, text_key: str
) -> list[tuple[dict[str, object], str, int | float]]:
    """(item, criterion text, points) of each object of a row's non-empty rubric list `key`
    (text under `text_key`, points a finite number, not a bool); at least one item must have
    positive points. DataError naming `label`, the item and the key that is wrong."""
    if not isinstance(value, list) or not value:
        raise DataError(f"{label}: '{key}' is missing or empty")
    items = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise DataError(f"{label}: {key}[{i}] must be an object")
        text, points = item.get(text_key), item.get("points")
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{label}: {key}[{i}] has no '{text_key}' text")
        if isinstance(points, bool) or not isinstance(points, int | float):
            raise DataError(f"{label}: {key}[{i}] 'points' must be a number, got {points!r}")
        if not math.isfinite(points):  # Python's json reads NaN and Infinity
            raise DataError(f"{label}: {key}[{i}] 'points' must be a finite number, got {points!r}")
        items.append((item, text, points))
    if not any(points > 0 for _, _, points in items):
        raise DataError(f"{label}: no criterion has positive points, so the score is undefined")
    return items
