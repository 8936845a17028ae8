"""The built-in server's account faults: rate limits as OpenAI's, quota, over HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from healthbench_exp.builtin_endpoint.limits import AccountLimits, format_duration
from healthbench_exp.builtin_endpoint.replies import JUDGE_MARKER
from healthbench_exp.config.schema import OfflineServerConfig
from healthbench_exp.model.pacer import classify_429
from healthbench_exp.testing.fake_clock import FakeClock


def test_the_server_limits_as_openai_does() -> None:
    limits = AccountLimits(
        OfflineServerConfig(
            rate_limit_requests=2,
            rate_limit_tokens=1000,
            rate_limit_window_s=6.0,
            limited_role="judge",
        ),
        FakeClock().now,
    )
    assert limits.applies(is_judge=True) and not limits.applies(is_judge=False)
    headers, refusal = limits.admit("m", 400)
    assert refusal is None and headers["x-ratelimit-limit-requests"] == "20"  # per minute
    assert headers["x-ratelimit-remaining-requests"] == "1"
    assert headers["x-ratelimit-remaining-tokens"] == "600"
    headers, refusal = limits.admit("m", 700)  # 600 tokens left: refused, nothing taken
    assert refusal is not None
    status, body, refused_headers = refusal
    error = body["error"]
    assert status == 429 and error["code"] == "rate_limit_exceeded" and error["type"] == "tokens"
    assert "Please try again in" in error["message"]
    wait = int(refused_headers["retry-after-ms"]) / 1000
    assert 0.6 <= wait <= 0.601  # 100 tokens at 1000 per 6 s, in ms rounded up
    assert classify_429(refused_headers, body).wait_s == pytest.approx(wait)
    assert format_duration(0.02) == "20ms" and format_duration(6) == "6s"
    assert format_duration(60) == "1m0s" and format_duration(1.2) == "1.2s"
    status, body, _ = limits.quota_error()
    assert status == 429 and classify_429({}, body).quota


def test_the_server_answers_429_over_http(loopback_server) -> None:
    server = loopback_server(
        rate_limit_requests=1, rate_limit_window_s=60, limited_role="judge", seed=0
    )
    judge_prompt = [{"role": "user", "content": JUDGE_MARKER + " ..."}]
    body = json.dumps({"model": "j", "messages": judge_prompt}).encode()

    def post() -> tuple[int, dict[str, str], dict]:
        request = urllib.request.Request(
            server.base_url + "/chat/completions",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request) as response:
                return response.status, dict(response.headers), json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), json.loads(exc.read())

    status, headers, _ = post()
    assert status == 200 and headers["x-ratelimit-remaining-requests"] == "0"
    status, headers, payload = post()
    assert status == 429 and payload["error"]["type"] == "requests"
    assert 59 <= float(headers["retry-after"]) <= 60 and headers["x-ratelimit-reset-requests"]
    assert server.stats()["rate_limited"] == 1 and server.stats()["requests"] == 1


def test_each_model_has_its_own_limits_as_openai_limits_each_model() -> None:
    limits = AccountLimits(
        OfflineServerConfig(rate_limit_requests=2, rate_limit_window_s=60.0), FakeClock().now
    )
    for _ in range(2):
        assert limits.admit("gpt-x", 10)[1] is None
    headers, refusal = limits.admit("gpt-x", 10)  # its two are spent
    assert refusal is not None and headers["x-ratelimit-remaining-requests"] == "0"
    headers, refusal = limits.admit("gpt-y", 10)  # another model: its own two
    assert refusal is None and headers["x-ratelimit-remaining-requests"] == "1"
    stats = limits.limit_stats()
    assert stats["limited_requests"] == 3 and stats["limit_requests_capacity"] == 2
    models = stats["limit_models"]
    assert isinstance(models, dict)
    assert models["gpt-x"]["limited_requests"] == 2 and models["gpt-y"]["limited_tokens"] == 10
    assert models["gpt-x"]["limit_requests_level"] < 0.01 < models["gpt-y"]["limit_requests_level"]
