"""What a rate-limit 429 means (`classify_429`): a quota error that stops the run, a request too
large ever to pass, or a wait, read from what the server said (`wait_from_429`); and whether it
is brief (`brief_refusal`): an overloaded provider's short refusal, not a limit's. The pacer
(`pace.py`) acts on the `Refusal`; the endpoint raises `RateLimited` to send the request again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from healthbench_exp.model.pacer.server_waits import parse_duration, retry_after_s

DEFAULT_WAIT_S = 1.0  # a 429 that says nothing about when to come back
MAX_WAIT_S = 600.0  # never trust a single wait longer than this (re-checked afterwards)
# a 429 that asks to come back within this many seconds (its Retry-After) and carries no
# x-ratelimit-* header is brief: the server overloaded for a moment (a flaky provider), not a
# limit; it delays the request refused and neither pauses nor slows the endpoint (unless such
# refusals grow common: `pace.BRIEF_SHARE_MAX`)
BRIEF_WAIT_S = 0.5

_TRY_AGAIN = re.compile(
    r"try again in\s+((?:\d+(?:\.\d+)?(?:ms|h|m|s))+|\d+(?:\.\d+)?\s*(?:seconds?|secs?))",
    re.IGNORECASE,
)
_QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"}


def wait_from_429(headers: Mapping[str, str], message: str, limit_type: str | None) -> float:
    """Seconds to wait after a rate-limit 429, from what the server said, most exact first:
    its Retry-After (`server_waits.retry_after_s`: `retry-after-ms`, else `retry-after` in
    seconds or as an HTTP date) when it is a wait of 0 s or more, "try again in Xs" in the
    message, then the `x-ratelimit-reset-*` of the exhausted limit (`limit_type`
    "requests"/"tokens", else of the one with nothing remaining, else the longer), at most
    MAX_WAIT_S. DEFAULT_WAIT_S when it said nothing usable (no header, a negative or infinite
    wait, a date past)."""
    candidates: list[float | None] = [retry_after_s(headers)]
    found = _TRY_AGAIN.search(message or "")
    if found:
        candidates.append(parse_duration(found.group(1)))
    for wait in candidates:
        if wait is not None and math.isfinite(wait) and wait >= 0:
            return min(wait, MAX_WAIT_S)
    resets = {
        kind: parse_duration(headers.get(f"x-ratelimit-reset-{kind}", ""))
        for kind in ("requests", "tokens")
    }
    if limit_type in resets and resets[limit_type] is not None:
        return min(resets[limit_type] or 0.0, MAX_WAIT_S)
    known = {kind: reset for kind, reset in resets.items() if reset is not None}
    exhausted = [
        reset
        for kind, reset in known.items()
        if headers.get(f"x-ratelimit-remaining-{kind}", "").strip() == "0"
    ]
    waits = exhausted or list(known.values())
    return min(max(waits), MAX_WAIT_S) if waits else DEFAULT_WAIT_S


def brief_refusal(headers: Mapping[str, str]) -> bool:
    """A 429 with these headers is brief: its Retry-After asks to come back within
    BRIEF_WAIT_S and it carries no `x-ratelimit-*` header (an overloaded provider's refusal,
    not a limit's; see `EndpointPacer.refused`)."""
    told = retry_after_s(headers)
    if told is None or not 0 <= told <= BRIEF_WAIT_S:
        return False
    return not any(name.lower().startswith("x-ratelimit-") for name in headers)


class RateLimited(Exception):
    """A rate-limit 429 (`refusal`): the request is sent again after its wait (not a failure)."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(f"rate limited; wait {refusal.wait_s:.3f} s")
        self.refusal = refusal


@dataclass(frozen=True)
class Refusal:
    """What a 429 means: `quota` (stop the run), `too_large` (can never pass: fail this request),
    else a rate limit to wait out for `wait_s` seconds; `brief` (`brief_refusal`): the server
    asked for a short wait without telling of a limit."""

    quota: bool
    too_large: bool
    wait_s: float
    message: str
    brief: bool = False


def classify_429(headers: Mapping[str, str], body: object) -> Refusal:
    """Read a 429's headers and error body (OpenAI's `{"error": {message, type, code}}`)."""
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    message = str(error.get("message") or "")
    code = str(error.get("code") or "")
    kind = str(error.get("type") or "")
    quota = code in _QUOTA_CODES or kind in _QUOTA_CODES
    too_large = message.lower().startswith("request too large")
    limit_type = kind if kind in ("requests", "tokens") else None
    wait_s = wait_from_429(headers, message, limit_type)
    return Refusal(quota, too_large, wait_s, message, brief_refusal(headers))
