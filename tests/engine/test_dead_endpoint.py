"""A judge that answers nothing ends the run in minutes, not hours, and loses nothing paid.

End to end: `python -m healthbench_exp` in a subprocess; the model is the demo's built-in
endpoint, the judge a loopback endpoint that fails every call (a third HTTP 429, the rest
500/503) with `runner.max_retries=1`, over the 24 bundled rows.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from healthbench_exp.core.endpoint_errors import RequestFailed
from healthbench_exp.core.outcome import EXIT_UNGRADED
from healthbench_exp.model.health import EndpointHealth
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
    assert elapsed < 120, elapsed
    assert result.returncode == EXIT_UNGRADED, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    line = errors[0]
    assert f"the judge endpoint {judge.base_url} answered nothing usable" in line
    assert "HTTP 429 answers" in line and "injected 50" in line  # its last errors
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


class Stats:
    rate_limited = 0


def test_an_endpoint_that_also_answers_is_never_given_up_on() -> None:
    now = [0.0]
    stats = Stats()
    health = EndpointHealth("judge", "http://j", stats, 5, 60.0, clock=lambda: now[0])
    health.since = 0.0
    for _ in range(20):  # 429s and failures, but a success among every few of them
        stats.rate_limited += 2
        health.failed(RequestFailed("HTTP 500"))
        health.succeeded()
        now[0] += 30.0
    assert not health.check()
    # no success in the first 5 answers (failed calls and 429s together): given up
    fresh = EndpointHealth("judge", "http://j", Stats(), 5, 0.0, clock=lambda: now[0])
    fresh.stats.rate_limited = 3
    fresh.failed(RequestFailed("HTTP 503"))
    assert not fresh.dead
    fresh.failed(RequestFailed("HTTP 500: boom"))
    assert fresh.dead and "none of its first 5 answers" in fresh.reason()
    assert "HTTP 500: boom" in fresh.reason()
    # failures and no success for dead_after_s since the last success: given up
    health.succeeded()
    health.failed(RequestFailed("timeout"))
    now[0] += 59.0
    assert not health.check()
    now[0] += 1.0
    assert health.check() and "no success in the 60 s since its last success" in health.reason()


@pytest.mark.parametrize("setting", ["runner.dead_endpoint_calls=-1", "runner.dead_endpoint_s=-5"])
def test_the_settings_are_checked(setting: str, tmp_path: Path) -> None:
    result = run_cli("experiment=demo", setting, f"hydra.run.dir={tmp_path / 'r'}")
    assert result.returncode == 2 and setting.split("=")[0] in result.stderr
