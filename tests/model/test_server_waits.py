"""The one Retry-After reader (`model/pacer/server_waits.py`) and what each of its users makes of
its edge cases: the HTTP retries (`model/http.py`, as the openai client) and the pause after a
rate-limit 429 (`model/pacer/refusals.py`)."""

from __future__ import annotations

import email.utils
import time

import pytest

from healthbench_exp.model.http import retry_delay_s, should_retry
from healthbench_exp.model.pacer.refusals import DEFAULT_WAIT_S, MAX_WAIT_S, wait_from_429
from healthbench_exp.model.pacer.server_waits import MAX_RETRY_AFTER_S, retry_after_s


def test_seconds_milliseconds_and_dates_are_read_milliseconds_first() -> None:
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after": " 2.5 "}) == 2.5
    assert retry_after_s({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_s({"retry-after-ms": "soon", "retry-after": "9"}) == 9.0
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert retry_after_s({"retry-after": later}) == pytest.approx(30, abs=2)
    assert retry_after_s({}) is None and retry_after_s({"retry-after": "soon"}) is None


def test_negative_past_huge_and_infinite_waits() -> None:
    """Read as they are (a number too large for a float is a long wait, "inf" an infinite
    one); the retries honour none of them, the pause after a 429 falls back to its default
    for the negative and the infinite and waits the most it trusts for the huge."""
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    cases = {
        "-5": -5.0,
        past: pytest.approx(-30, abs=2),
        "1e999": MAX_RETRY_AFTER_S + 1,
        "inf": float("inf"),
    }
    for value, read in cases.items():
        assert retry_after_s({"retry-after": value}) == read, value
    assert wait_from_429({"retry-after": "-5"}, "", None) == DEFAULT_WAIT_S
    assert wait_from_429({"retry-after": past}, "", None) == DEFAULT_WAIT_S
    assert wait_from_429({"retry-after": "inf"}, "", None) == DEFAULT_WAIT_S
    assert wait_from_429({"retry-after": "1e999"}, "", None) == MAX_RETRY_AFTER_S + 1
    assert wait_from_429({"retry-after": "99999"}, "", None) == MAX_WAIT_S
    assert wait_from_429({"retry-after": "garbage"}, "try again in 2s", None) == 2.0
    assert not should_retry(500, {"retry-after": "1e999"})  # past the client's limit
    assert 0 < retry_delay_s(0, {"retry-after": "-5"}) <= 0.5  # backoff instead
