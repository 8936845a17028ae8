"""A judge that answers nothing ends the run in minutes, not hours, and loses nothing paid.

End to end: `python -m healthbench_exp` in a subprocess; the model is the demo's built-in
endpoint, the judge a loopback endpoint that fails every call (a third HTTP 429, the rest
500/503) with `runner.max_retries=1`, over the 24 bundled rows.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import pytest

from healthbench_exp.core.completer import Reply
from healthbench_exp.core.endpoint_errors import RequestFailed
from healthbench_exp.core.run_end import Exit
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.health import (
    BARE_429,
    NO_REPLY,
    REFUSED,
    SERVER_ERRORS,
    EndpointHealth,
    EndpointStopped,
)
from tests.e2e.test_e2e import run_cli


def test_a_judge_that_fails_every_call_ends_the_run_in_minutes(
    loopback_server, tmp_path: Path
) -> None:
    judge = loopback_server(error_rate=1.0, seed=7)
    run_dir = tmp_path / "run"
    started = time.monotonic()
    result = run_cli(
        "experiment=demo",
        "wandb=disabled",
        "runner.progress=false",
        "runner.max_retries=1",
        "judge.builtin=false",
        f"judge.base_url={judge.base_url}",
        f"hydra.run.dir={run_dir}",
    )
    elapsed = time.monotonic() - started
    # every failed attempt counts (the client's retries too): declared within seconds of the
    # first call (the time to dead per fault is asserted from the stop line in
    # test_dead_outages.py); this bound is the whole run's wall time, loose for a loaded machine
    assert elapsed < 180, elapsed
    assert result.returncode == Exit.UNGRADED, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    line = errors[0]
    assert f"the judge endpoint {judge.base_url} answered nothing usable" in line
    # what it answered, and its last errors: the server's text where a call failed for good
    # before the endpoint was declared dead, else the attempts' statuses (under load the 30th
    # failed attempt can come first)
    assert "HTTP 5xx" in line and re.search(r"last errors: [^)]*(injected 50|HTTP 50\d)", line)
    assert line.endswith(f"finish with: python -m healthbench_exp resume={run_dir}")
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "ungraded" and status["error"] in line
    # nothing paid is lost: every model reply the run got is recorded for the resume
    examples = [json.loads(row) for row in (run_dir / "examples.jsonl").open()]
    assert len(examples) == 24 and all(e["completion"] for e in examples)
    summary = json.loads((run_dir / "summary.json").read_text())
    counts = summary["counts"]
    assert counts["rows_not_run"] > 0 and counts["rows_scored"] == counts["criteria_graded"] == 0
    assert summary["usage"]["model"]["requests"] == 24
    invocations = (run_dir / "invocations.jsonl").read_text().splitlines()
    assert len(invocations) == 1  # its spend is on record
    # the partial table the docs promise, and where the outputs are, before the stop's line
    assert "  PARTIAL: 0 of 24 examples scored" in result.stdout, result.stdout
    assert result.stdout.strip().splitlines()[-1] == f"outputs: {run_dir}"


def test_an_endpoint_that_also_answers_is_never_given_up_on() -> None:
    now = [0.0]
    health = EndpointHealth("judge", "http://j", 5, 60.0, clock=lambda: now[0])
    health.since = 0.0
    for _ in range(20):  # failed attempts, but a success among every few of them
        health.attempt_failed(BARE_429)
        health.attempt_failed(SERVER_ERRORS, "HTTP 500")
        health.succeeded()
        now[0] += 30.0
    assert not health.check()
    # no success in the first 5 attempts (of any kind, counted together): given up
    fresh = EndpointHealth("judge", "http://j", 5, 0.0, clock=lambda: now[0])
    for _ in range(3):
        fresh.attempt_failed(BARE_429)
    fresh.attempt_failed(REFUSED, "APIConnectionError: Connection refused")
    assert not fresh.dead
    fresh.attempt_failed(SERVER_ERRORS, "HTTP 500: boom")
    assert fresh.dead and "none of its first 5 attempts" in fresh.reason()
    assert "HTTP 500: boom" in fresh.reason() and fresh.halt.reason == fresh.reason()
    assert "refused connections 1, HTTP 5xx 1, HTTP 429 without rate-limit headers 3" in (
        fresh.reason()
    )
    # failed attempts (at least 3) and no success for dead_after_s since the last one: dead
    health.succeeded()
    for _ in range(3):
        health.attempt_failed(NO_REPLY, "APITimeoutError: Request timed out.")
    now[0] += 59.0
    assert not health.check()
    now[0] += 1.0
    assert health.check() and "no success in the 60 s since its last success" in health.reason()
    # one failed attempt and a slow reply after it: a living endpoint
    slow = EndpointHealth("judge", "http://j", 30, 60.0, clock=lambda: now[0])
    slow.succeeded()
    slow.attempt_failed(SERVER_ERRORS)
    now[0] += 600.0
    assert not slow.check()


def test_calls_waiting_on_an_endpoint_declared_dead_end_not_run_and_their_tasks_go_on() -> None:
    """`guard` awaits the call in the caller's task; declaring the endpoint dead ends the calls
    waiting on it with EndpointStopped, and the tasks themselves are not left cancelled: they
    record the row and go on. A task also cancelled from elsewhere stays cancelled."""

    async def scenario() -> tuple[list[str], list[int], bool]:
        health = EndpointHealth("judge", "http://j", 3, 0.0, clock=SYSTEM_CLOCK.now)
        forever = asyncio.Event()

        async def silent() -> Reply:
            await forever.wait()
            return Reply("never")

        async def failing() -> Reply:
            await asyncio.sleep(0)
            health.attempt_failed(SERVER_ERRORS)  # as the endpoint reports it
            raise RequestFailed("HTTP 500")

        async def one(call: object) -> str:
            try:
                reply = await health.guard(call)  # type: ignore[arg-type]
            except EndpointStopped:
                await asyncio.sleep(0)  # not cancelled: the row is recorded, the task goes on
                return "stopped"
            except RequestFailed:
                await asyncio.sleep(0)
                return "failed"
            return reply.text

        waiting = [asyncio.create_task(one(silent())) for _ in range(2)]
        cancelled_too = asyncio.create_task(one(silent()))
        await asyncio.sleep(0.01)
        cancelled_too.cancel()  # cancelled from elsewhere in the same pass as the stop
        failures = [asyncio.create_task(one(failing())) for _ in range(3)]  # the third: dead
        done = await asyncio.gather(*waiting, *failures)
        await asyncio.gather(cancelled_too, return_exceptions=True)
        tasks = [*waiting, *failures]
        return done, [t.cancelling() for t in tasks], cancelled_too.cancelled()

    done, cancelling, cancelled = asyncio.run(scenario())
    assert done == ["stopped", "stopped", "failed", "failed", "failed"]
    assert cancelling == [0] * 5 and cancelled


@pytest.mark.parametrize("setting", ["runner.dead_endpoint_calls=-1", "runner.dead_endpoint_s=-5"])
def test_the_settings_are_checked(setting: str, tmp_path: Path) -> None:
    result = run_cli("experiment=demo", setting, f"hydra.run.dir={tmp_path / 'r'}")
    assert result.returncode == 2 and setting.split("=")[0] in result.stderr
