"""The least time a run's paid calls take under an account's known rate limits (`dry_run`).

Where an endpoint's account limits are configured (`model.rate_limit.requests_per_minute` /
`tokens_per_minute`, the same under `judge`), they become the least time its calls can take:
the calls to pay over requests per minute, and their tokens over tokens per minute, counting
each call's prompt plus the completion it reserves (its `max_tokens` when one is sent, as
OpenAI counts it, else its expected length). The run takes at least the longest of these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, TypedDict

from healthbench_exp.config.schema import RateLimitConfig
from healthbench_exp.model.roles import Role
from healthbench_exp.model.wire import reply_limit, request_body


class PaidCalls(Protocol):
    """A role's estimated calls (`engine.estimate.CallEstimate`), as far as durations read it."""

    calls: int
    cached_calls: int
    prompt_tokens: int


class LimitedDuration(TypedDict):
    """A role's least time under its limits (estimate.json's `rate_limited_duration.<role>`)."""

    seconds: float
    requests: int  # the paid calls
    tokens: int  # their prompts plus the completions they reserve
    requests_per_minute: float | None
    tokens_per_minute: float | None


def limited_duration(
    usage: PaidCalls, reserved_tokens: int, limits: RateLimitConfig
) -> LimitedDuration | None:
    """The least seconds `usage`'s paid calls take under `limits`, and why (None: no limits);
    each call counts its prompt plus `reserved_tokens` against a tokens limit."""
    paid = usage.calls - usage.cached_calls
    tokens = usage.prompt_tokens + paid * reserved_tokens
    bounds = {}
    if limits.requests_per_minute:
        bounds["requests"] = 60.0 * paid / limits.requests_per_minute
    if limits.tokens_per_minute:
        bounds["tokens"] = 60.0 * tokens / limits.tokens_per_minute
    if not bounds:
        return None
    return {  # the fields in this order, as estimate.json writes them
        "seconds": max(bounds.values()),
        "requests": paid,
        "tokens": tokens,
        "requests_per_minute": limits.requests_per_minute,
        "tokens_per_minute": limits.tokens_per_minute,
    }


def expected_durations(
    needed: dict[str, Role], usage: Mapping[str, PaidCalls]
) -> dict[str, LimitedDuration | float] | None:
    """Per needed role with configured limits, `limited_duration` (a batched role, `batch: true`,
    has none: the Batch API is outside the per-minute limits); `seconds`: the longest."""
    durations: dict[str, LimitedDuration] = {}
    for name, role in needed.items():
        if role.batch:  # through the Batch API: outside the per-minute limits
            continue
        endpoint = role.endpoint
        sent_max = reply_limit(request_body(endpoint, role.temperature, role.max_tokens))
        reserved = sent_max or endpoint.expected_completion_tokens
        duration = limited_duration(usage[name], reserved, endpoint.rate_limit)
        if duration is not None:
            durations[name] = duration
    if not durations:
        return None
    return {**durations, "seconds": max(d["seconds"] for d in durations.values())}
