"""The direct aiohttp transport names and retries failures as the openai client does."""

from __future__ import annotations

import json

from healthbench_exp.model.http import retry_delay_s, should_retry, status_error


def test_errors_are_named_as_the_openai_client_names_them() -> None:
    body = json.dumps({"error": {"message": "boom", "type": "server_error"}}).encode()
    error = status_error(500, {}, body)
    assert error.name == "InternalServerError" and error.status == 500
    assert str(error).startswith("InternalServerError: Error code: 500 - {'error': ")
    assert error.body == {"message": "boom", "type": "server_error"}  # the `error` object
    assert status_error(401, {}, b"").name == "AuthenticationError"
    assert status_error(404, {}, b"not json").body == "not json"
    assert status_error(429, {}, b"{}").name == "RateLimitError"
    assert status_error(418, {}, b"").name == "APIStatusError"


def test_retries_follow_the_openai_client() -> None:
    assert should_retry(500, {}) and should_retry(503, {}) and should_retry(409, {})
    assert not should_retry(400, {}) and not should_retry(401, {})
    assert not should_retry(500, {"x-should-retry": "false"})
    assert should_retry(400, {"x-should-retry": "true"})
    assert retry_delay_s(0, {"retry-after-ms": "1500"}) == 1.5  # the server's word, up to 60 s
    assert 0.375 <= retry_delay_s(0, {}) <= 0.5  # else 0.5 s doubling, jitter 0.75 to 1
    assert 6.0 <= retry_delay_s(10, {"retry-after": "120"}) <= 8.0  # capped at 8 s
