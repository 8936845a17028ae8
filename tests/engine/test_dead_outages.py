"""An endpoint that fails in each plain way is declared dead fast, nothing more is paid after,
and the stop line says what it answered.

End to end: `python -m healthbench_exp` in a subprocess, the model a loopback server that
answers (its request count is what was paid), the judge a loopback server with the fault:
every call 500, every call 429 without rate-limit headers, its port closed (connections
refused; with both openai transports), never a reply, or an outage after some successes.
The time to dead is read from the stop line (the endpoint's own clock, from its first call),
not the whole run's wall time, so the bounds hold on a loaded machine.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from pathlib import Path

import pytest

from healthbench_exp.config.schema import EndpointConfig, HttpClient
from healthbench_exp.core.endpoint_errors import RequestFailed
from healthbench_exp.core.run_end import Exit
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.endpoint import ChatEndpoint, Shared
from healthbench_exp.model.health import BARE_429, REFUSED, SERVER_ERRORS, Halt, answer_failure
from healthbench_exp.model.transport import Transport
from tests.e2e.test_e2e import run_cli

ROWS_IN_FLIGHT = 4  # runner.max_concurrent: the rows whose model calls may precede the stop


def run_against(model_url: str, judge_url: str, run_dir: Path, *settings: str) -> tuple[str, str]:
    """Run the demo's rows against the two servers; (the stop line, stderr's last line)."""
    result = run_cli(
        "experiment=demo",
        "wandb=disabled",
        "runner.progress=false",
        f"runner.max_concurrent={ROWS_IN_FLIGHT}",
        "model.builtin=false",
        f"model.base_url={model_url}",
        "judge.builtin=false",
        f"judge.base_url={judge_url}",
        f"hydra.run.dir={run_dir}",
        *settings,
    )
    assert result.returncode == Exit.UNGRADED, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    return errors[0], result.stderr.strip().splitlines()[-1]


def dead_after_s(line: str) -> float:
    found = re.search(r"declared dead (\d+) s after its first call", line)
    assert found, line
    return float(found.group(1))


@pytest.mark.parametrize(
    ("fault", "transport", "answered", "bound_s"),
    [
        ({"fail_status": 500}, "aiohttp", "HTTP 5xx", 45),
        ({"fail_status": 429}, "aiohttp", "HTTP 429 without rate-limit headers", 75),
        ({"down_after": 1}, "aiohttp", "refused connections", 45),
        ({"down_after": 1}, "httpx", "refused connections", 45),
    ],
    ids=["500", "bare-429", "refused-aiohttp", "refused-httpx"],
)
def test_a_dead_judge_is_declared_fast_and_no_model_call_is_paid_after(
    loopback_server, tmp_path: Path, fault: dict[str, int], transport: str, answered: str,
    bound_s: float,
) -> None:  # fmt: skip
    model, judge = loopback_server(), loopback_server(**fault)
    run_dir = tmp_path / "run"
    line, last = run_against(
        model.base_url, judge.base_url, run_dir, f"runner.http_client={transport}"
    )
    assert f"the judge endpoint {judge.base_url} answered nothing usable" in line
    assert re.search(re.escape(answered) + r" \d+", line), line  # what it answered, counted
    if "refused" in answered:  # read as a refused connection, not a timeout
        assert "Connection refused" in line and "timed out" not in line, line
    assert dead_after_s(line) <= bound_s, line
    assert re.search(r"spent \S+ in this invocation \(model \d+ calls, judge \d+\); 2\d of 24 rows "
                     "not run", line), line  # fmt: skip
    assert last.endswith(f"python -m healthbench_exp resume={run_dir}"), last
    # nothing paid after the stop: only the rows in flight at the decision sent a model call
    # (before: every one of the 24 rows did, each started as one before it ended not run)
    paid = model.stats()["requests"]
    assert paid <= ROWS_IN_FLIGHT, paid
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["usage"]["model"]["requests"] == paid
    assert summary["counts"]["rows_not_run"] >= 24 - ROWS_IN_FLIGHT


def test_a_judge_that_never_replies_is_declared_dead_within_3_timeouts(
    loopback_server, tmp_path: Path
) -> None:
    model, judge = loopback_server(), loopback_server(silent=True)
    line, last = run_against(
        model.base_url, judge.base_url, tmp_path / "run", "runner.request_timeout_s=5"
    )
    assert "no reply (timed out)" in line, line
    assert dead_after_s(line) <= 3 * 5, line
    assert last.endswith(f"resume={tmp_path / 'run'}"), last


def test_an_outage_mid_run_is_declared_within_60_s_of_its_start(
    loopback_server, tmp_path: Path
) -> None:
    """The judge answers its first 40 calls, then 500 for ever; the model's replies take 12 s,
    so the run's rows go on for over a minute after the outage starts. The failure-fraction
    stop is off: it halts such a run sooner (tests/engine/test_fraction_stop.py), this is the
    dead-endpoint rule's own bound."""
    model = loopback_server(latency_ms=12_000)
    judge = loopback_server(fail_status=500, fail_after=40)
    line, _ = run_against(
        model.base_url, judge.base_url, tmp_path / "run", "runner.max_failure_fraction=1.0"
    )
    found = re.search(r"no success in the (\d+) s since its last success", line)
    assert found and float(found.group(1)) <= 60, line
    assert judge.stats()["requests"] == 40


def test_a_slow_living_judge_is_never_declared_dead(loopback_server, tmp_path: Path) -> None:
    """The judge's account allows 20 requests per 5 s (the run is paced to it) and a third of
    its answers are 500s: it is paced and retried, never given up on."""
    model = loopback_server()
    judge = loopback_server(
        rate_limit_requests=20, rate_limit_window_s=5.0, judge_error_rate=0.3, seed=5
    )
    run_dir = tmp_path / "run"
    result = run_cli(
        "experiment=demo",
        "wandb=disabled",
        "runner.progress=false",
        "model.builtin=false",
        f"model.base_url={model.base_url}",
        "judge.builtin=false",
        f"judge.base_url={judge.base_url}",
        f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr
    assert "answered nothing usable" not in result.stderr
    stats = judge.stats()
    assert stats["judge_errors_injected"] > 30, stats


def test_a_429_with_rate_limit_headers_is_a_living_endpoint_pacing_the_run() -> None:
    headers = {"x-ratelimit-remaining-requests": "0", "retry-after": "1"}
    assert answer_failure(429, headers) == ""  # counts neither way
    assert answer_failure(429, {"retry-after": "1"}) == BARE_429
    assert answer_failure(503, {}) == SERVER_ERRORS and answer_failure(200, {}) == ""


@pytest.mark.parametrize("http_client", list(HttpClient))
def test_each_refused_attempt_is_seen_and_read_as_a_refusal(http_client: HttpClient) -> None:
    """Through each transport (the openai client over aiohttp or httpx, or the direct poster),
    every attempt of a call, the client's retries included, reaches the endpoint's health as a
    refused connection; the error says so, and a refusal is not a silence (the stall watch's
    clock moves)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"  # nothing listens there

    async def scenario() -> tuple[list[str], str, bool]:
        seen: list[str] = []
        endpoint = ChatEndpoint(
            "judge",
            EndpointConfig(name="judge", base_url=url, api_key_env=None),
            base_url=url,
            api_key="k",
            temperature=None,
            max_tokens=None,
            transport=Transport(max_retries=2, timeout_s=30.0, http_client=http_client),
            shared=Shared(halt=Halt(), clock=SYSTEM_CLOCK),
            on_attempt_failed=lambda kind, error: seen.append(kind),
        )
        before = endpoint.last_reply_at
        try:
            await endpoint.complete([{"role": "user", "content": "hi"}])
        except RequestFailed as exc:
            error = str(exc)
        finally:
            await endpoint.close()
        return seen, error, endpoint.last_reply_at > before

    seen, error, heard = asyncio.run(scenario())
    assert seen == [REFUSED] * 3, seen  # the first attempt and its 2 retries
    assert "Connection refused" in error and "timed out" not in error, error
    assert heard
