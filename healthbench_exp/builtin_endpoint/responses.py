"""The built-in endpoint's Responses API: a `POST /v1/responses` body read as the chat completion
it stands for, and the chat completion's reply written back as a response.

So the same replies and verdicts come through either API: the `input` messages are the chat
messages, `reasoning.effort` is `reasoning_effort`, `max_output_tokens` is `max_tokens`; the
reply's text becomes one `message` output item (after a `reasoning` item when the request
reasoned), its usage `input_tokens` / `output_tokens` with their cached and reasoning details.
A reply longer than `max_output_tokens` (4 characters a token) is cut there and the response is
`incomplete` with reason `max_output_tokens`; a refused one is `incomplete` with reason
`content_filter`.

A developer message counts as the system message it stands for (`as_system`): in the messages
and in the conversation a grader prompt shows, so a run through either API, whose system message
goes as `system` or `developer`, is answered alike (the harness renders, as the reference does,
the conversation as it was sent).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_DEVELOPER_LINE = re.compile(r"(^|\n)developer: ")


def as_system(messages: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """`messages` with each `developer` message, and each `developer: ` line of a rendered
    conversation in a message's text, as the `system` one it stands for."""
    normal = []
    for message in messages:
        content = message.get("content")
        role = message.get("role")
        normal.append(
            {
                **message,
                "role": "system" if role == "developer" else role,
                "content": (
                    _DEVELOPER_LINE.sub(r"\1system: ", content)
                    if isinstance(content, str)
                    else content
                ),
            }
        )
    return normal


def _text(content: object) -> str:
    """A message's content: a string, or its `input_text` / `output_text` parts joined."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and "text" in p)


def chat_request(body: Mapping[str, object]) -> tuple[dict[str, object], list[dict[str, object]]]:
    """(the chat completion body, its messages) a Responses API body stands for; KeyError or
    TypeError when it has no `input` or `model`."""
    raw = body["input"]
    if isinstance(raw, str):
        messages: list[dict[str, object]] = [{"role": "user", "content": raw}]
    elif isinstance(raw, list):
        messages = [{"role": m["role"], "content": _text(m.get("content"))} for m in raw]
    else:
        raise TypeError("input is neither a string nor a list of messages")
    if not isinstance(body["model"], str):
        raise TypeError("model is not a string")
    chat: dict[str, object] = {
        k: v for k, v in body.items() if k not in ("input", "reasoning", "max_output_tokens")
    }
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort"):
        chat["reasoning_effort"] = reasoning["effort"]
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    return {**chat, "messages": messages}, messages


def response_reply(
    completion: Mapping[str, object], max_output_tokens: object
) -> dict[str, object]:
    """The chat `completion` (a 200 reply's JSON) as a Responses API response."""
    choice = completion["choices"][0]  # type: ignore[index]
    text = str(choice["message"]["content"] or "")
    usage = completion["usage"]
    assert isinstance(usage, dict)
    reasoning = int(usage["completion_tokens_details"]["reasoning_tokens"])
    output_tokens = int(usage["completion_tokens"])
    status, reason = "completed", None
    if choice["finish_reason"] == "content_filter":
        status, reason = "incomplete", "content_filter"
    if isinstance(max_output_tokens, int) and len(text) // 4 > max_output_tokens:
        text = text[: 4 * max_output_tokens]
        output_tokens = len(text) // 4 + reasoning
        status, reason = "incomplete", "max_output_tokens"
    name = str(completion["id"]).replace("offline-", "")
    output: list[dict[str, object]] = []
    if reasoning:
        output.append({"type": "reasoning", "id": f"rs_{name}", "summary": []})
    output.append(
        {
            "type": "message",
            "id": f"msg_{name}",
            "status": "completed" if status == "completed" else "incomplete",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    )
    return {
        "id": f"resp_{name}",
        "object": "response",
        "created_at": 0,
        "status": status,
        "incomplete_details": None if reason is None else {"reason": reason},
        "model": completion["model"],
        "output": output,
        "max_output_tokens": max_output_tokens,
        "service_tier": completion.get("service_tier"),
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "input_tokens_details": {
                "cached_tokens": usage["prompt_tokens_details"]["cached_tokens"]
            },
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": int(usage["prompt_tokens"]) + output_tokens,
        },
    }
