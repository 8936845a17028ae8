"""An OpenAI chat-completions reply as decoded JSON (`object`), read field by field.

A field that is missing or of another type reads as empty: no usage counts 0 tokens, no
choices give no text (the caller then reports an empty reply).
"""

from __future__ import annotations

from collections.abc import Mapping


def json_map(value: object) -> Mapping[str, object]:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def tokens(usage: Mapping[str, object], key: str, part: str | None = None) -> int:
    """`usage[key]`, or `usage[part][key]`, as a count (0: missing, null or not an integer)."""
    value = (json_map(usage.get(part)) if part is not None else usage).get(key)
    return value if isinstance(value, int) else 0


def first_choice(reply: Mapping[str, object]) -> Mapping[str, object]:
    """The reply's first choice (empty when it has none)."""
    choices = reply.get("choices")
    return json_map(choices[0]) if isinstance(choices, list) and choices else {}


def choice_text(choice: Mapping[str, object]) -> str:
    """The text of a choice's message ("" when it has none, or no string)."""
    content = json_map(choice.get("message")).get("content")
    return content if isinstance(content, str) else ""
