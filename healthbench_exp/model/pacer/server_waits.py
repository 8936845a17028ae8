"""How long a server says to wait: its `Retry-After` headers (`retry_after_s`, the one reader
used by the HTTP retries of `model/http.py` and by the rate-limit waits of `refusals.py`) and
the durations OpenAI writes its resets and messages in (`parse_duration`)."""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping

MAX_RETRY_AFTER_S = 120.0  # a server's Retry-After is honoured up to this; longer: no retry
_INFINITY = ("inf", "+inf", "infinity", "+infinity")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(text: str) -> float | None:
    """Seconds in OpenAI's reset format ("20ms", "6s", "1m0s", "1h2m3.5s", "1.2 seconds")."""
    text = text.strip().lower()
    seconds_word = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(?:seconds?|secs?)", text)
    if seconds_word:
        return float(seconds_word.group(1))
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.replace(" ", ""):
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(number) * scale[unit] for number, unit in parts)


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait, read as the openai client reads them: `retry-after-ms`,
    else `retry-after` in seconds, else `retry-after` as an HTTP date (None: none readable).
    The first readable one is returned as it is, negative or not (a date past is negative):
    each caller decides what it honours. A number too large for a float ("1e999") is a wait
    past MAX_RETRY_AFTER_S, not an infinite one; "inf" written out is infinite."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        if delay == math.inf and value.strip().lower() not in _INFINITY:
            return MAX_RETRY_AFTER_S + 1
        return delay / divisor
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        date = email.utils.parsedate_tz(value)
        if date is None:
            return None
        return email.utils.mktime_tz(date) - time.time()
    except (TypeError, ValueError, OverflowError, OSError):
        return None
