"""HealthBench Professional rows (SPEC section 6) as the harness's `Example`.

A Professional row: `id`, `conversation` = `{"messages": [{role, content}, ...]}`,
`rubric_items` = `[{"criterion_text", "points"}, ...]` (points may be negative; no tags), the
slice labels `use_case`, `type`, `difficulty`, `specialty`, `physician_response` and
`canary_string`. It becomes the same `Example` as a 2025 row: `prompt_id` = `id`, the messages
as the prompt, the rubric items as criteria without tags, and one example tag `<slice>:<label>`
per slice label, which scoring treats exactly as a `theme:` tag (each slice gets its score, n and
bootstrap std). Every slice key must be present; a null label gives no tag. A Professional row
has no theme.

A file may hold rows of both formats; `is_professional` tells them apart per row by their keys.
"""

from __future__ import annotations

from healthbench_exp.core.types import Criterion, Example
from healthbench_exp.data.rows import DataError, json_object, parse_messages, row_id, rubric_items

SLICE_KEYS = ("use_case", "type", "difficulty", "specialty")  # example tags `<key>:<label>`
PROFESSIONAL_KEYS = ("conversation", "rubric_items")  # only a Professional row has these
HEALTHBENCH_KEYS = ("prompt", "rubrics")  # only a 2025 HealthBench row has these


def is_professional(row: object, where: str) -> bool:
    """Whether a decoded row is in the Professional format: it has `conversation` or
    `rubric_items` (or, having neither format's keys, an `id` and no `prompt_id`). A row with
    keys of both formats is a DataError naming them."""
    if not isinstance(row, dict):
        return False
    professional = [k for k in PROFESSIONAL_KEYS if k in row]
    healthbench = [k for k in HEALTHBENCH_KEYS if k in row]
    if professional and healthbench:
        raise DataError(
            f"{where}: has keys of both formats, HealthBench {healthbench} and HealthBench "
            f"Professional {professional}; a row is in one of them"
        )
    if professional or healthbench:
        return bool(professional)
    return "id" in row and "prompt_id" not in row


def parse_professional(decoded: object, where: str) -> Example:
    """Validate one decoded Professional row; raise DataError naming `where`, the id and the key
    that is wrong."""
    prompt_id, label = row_id(decoded, where, "id")
    row = json_object(decoded, where)

    def fail(message: str) -> DataError:
        return DataError(f"{label}: {message}")

    conversation = row.get("conversation")
    if not isinstance(conversation, dict):
        raise fail("'conversation' must be an object with a 'messages' list")
    prompt = parse_messages(conversation.get("messages"), label, "conversation.messages")

    criteria = [
        Criterion(text=text, points=points, tags=())
        for _, text, points in rubric_items(
            row.get("rubric_items"), label, "rubric_items", "criterion_text"
        )
    ]

    tags = []
    for key in SLICE_KEYS:
        if key not in row:
            raise fail(f"no '{key}' (a slice label: a string, or null when the row has none)")
        value = row[key]
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise fail(f"'{key}' must be a non-empty string (a slice label) or null, got {value!r}")
        tags.append(f"{key}:{value}")

    physician_response = row.get("physician_response")
    if physician_response is not None and not isinstance(physician_response, str):
        raise fail(f"'physician_response' must be a string or null, got {physician_response!r}")
    return Example(
        prompt_id=prompt_id,
        prompt=prompt,
        rubrics=tuple(criteria),
        example_tags=tuple(tags),
        ideal_completions_data=None,
        where=where,
        physician_response=physician_response,
        professional=True,
    )
