"""The two OpenAI APIs an endpoint may speak (`<role>.api`), as request bodies and replies.

`chat`: `POST /chat/completions` with `messages`, the system message as a `system` message,
`temperature`, `max_tokens`, `reasoning_effort`. `responses`: `POST /responses` with the same
conversation as `input` messages, the system message as a `developer` message (as the
reference's `ResponsesSampler` sends it), `temperature`, `max_output_tokens`,
`reasoning={"effort": ...}`. Both take `service_tier`.

A reply of either is read into one `WireReply`: its text, why it ended in Chat Completions'
words (`stop`, `length`, `content_filter`: an `incomplete` response whose reason is
`max_output_tokens` is a `length` finish), its usage in Chat Completions' shape (`prompt_tokens`
with `prompt_tokens_details.cached_tokens`, `completion_tokens` with
`completion_tokens_details.reasoning_tokens`: the Responses API's `input_tokens`,
`input_tokens_details.cached_tokens`, `output_tokens`, `output_tokens_details.reasoning_tokens`)
and the service tier the provider reports having used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from healthbench_exp.config.endpoint import Api, EndpointConfig
from healthbench_exp.model.reply_json import choice_text, first_choice, json_map, tokens

PATHS = {Api.chat: "/chat/completions", Api.responses: "/responses"}
# what a reply's end is called when the Responses API gives no reason
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def system_role(api: Api) -> str:
    """The role the system message is sent under: `system` (chat), `developer` (responses)."""
    return "developer" if api is Api.responses else "system"


def request_body(
    config: EndpointConfig, temperature: float | None, max_tokens: int | None
) -> dict[str, Any]:  # engine/durations.py reads the reply length as an int
    """The request body but the messages; also what identifies the call in cache keys (so a
    change of reasoning effort, tier or API is never answered from the cache). A reasoning
    endpoint is sent no temperature or reply length; the reasoning effort and the service tier
    are sent whenever they are set. A responses body carries `"api": "responses"` only in the
    cache key (`cache_params`), never on the wire."""
    body: dict[str, Any] = {"model": config.name}
    responses = config.api is Api.responses
    if not config.reasoning:
        if temperature is not None:
            body["temperature"] = temperature
        if max_tokens is not None:
            body["max_output_tokens" if responses else "max_tokens"] = max_tokens
    if config.reasoning_effort is not None:
        if responses:
            body["reasoning"] = {"effort": config.reasoning_effort}
        else:
            body["reasoning_effort"] = config.reasoning_effort
    if config.service_tier is not None:
        body["service_tier"] = config.service_tier
    body.update(config.extra_body)
    return body


def cache_params(api: Api, body: Mapping[str, Any]) -> dict[str, Any]:
    """What names the request parameters in cache keys: the body, and the API when it is not
    chat (so a chat entry keeps its key, and a responses reply is never a chat one's)."""
    return dict(body) if api is Api.chat else {**body, "api": api.value}


def reply_limit(body: Mapping[str, Any]) -> int:
    """The reply length a body asks for at most (0: none asked)."""
    for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
        value = body.get(key)
        if isinstance(value, int):
            return value
    return 0


def with_messages(api: Api, body: Mapping[str, Any], sent: list[dict[str, str]]) -> dict[str, Any]:
    """The whole request: `body` with the conversation as `messages` (chat) or `input`."""
    return {**body, ("input" if api is Api.responses else "messages"): sent}


@dataclass(frozen=True)
class WireReply:
    """One reply of either API, in Chat Completions' words (see the module's docstring)."""

    text: str
    finish_reason: str
    usage: Mapping[str, object]
    service_tier: str | None


def read_reply(api: Api, reply: Mapping[str, object]) -> WireReply:
    """`reply` (the JSON of a chat completion or of a response) read field by field."""
    tier = reply.get("service_tier")
    tier = tier if isinstance(tier, str) else None
    if api is Api.chat:
        choice = first_choice(reply)
        reason = choice.get("finish_reason", "no choices")
        return WireReply(choice_text(choice), str(reason), json_map(reply.get("usage")), tier)
    return WireReply(output_text(reply), response_end(reply), chat_usage(reply), tier)


def output_text(response: Mapping[str, object]) -> str:
    """The response's text: every `output_text` part of its `message` items, joined (as the
    openai client's `Response.output_text`); "" when it has none."""
    parts: list[str] = []
    output = response.get("output")
    for item in output if isinstance(output, list) else []:
        item = json_map(item)
        if item.get("type") != "message":
            continue
        content = item.get("content")
        for part in content if isinstance(content, list) else []:
            part = json_map(part)
            text = part.get("text")
            if part.get("type") == "output_text" and isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def response_end(response: Mapping[str, object]) -> str:
    """Why a response ended, as a chat `finish_reason`: `stop` when completed, `length` when
    incomplete for `max_output_tokens`, `content_filter` when filtered; else its status."""
    status = response.get("status")
    if status == "completed":
        return "stop"
    if status == "incomplete":
        reason = json_map(response.get("incomplete_details")).get("reason")
        return _INCOMPLETE.get(str(reason), f"incomplete: {reason}")
    return str(status or "no status")


def chat_usage(response: Mapping[str, object]) -> dict[str, object]:
    """A response's `usage` in Chat Completions' shape (missing counts 0)."""
    usage = json_map(response.get("usage"))
    prompt = tokens(usage, "input_tokens")
    completion = tokens(usage, "output_tokens")
    return {
        "prompt_tokens": prompt,
        "prompt_tokens_details": {
            "cached_tokens": tokens(usage, "cached_tokens", "input_tokens_details")
        },
        "completion_tokens": completion,
        "completion_tokens_details": {
            "reasoning_tokens": tokens(usage, "reasoning_tokens", "output_tokens_details")
        },
        "total_tokens": prompt + completion,
    }
