"""The failure-fraction stop pays nothing more: once a run's ungraded criteria (or failed rows)
are certain to pass `runner.max_failure_fraction`, no row starts and no call is sent.

End to end: `python -m healthbench_exp` in a subprocess against two loopback servers, the
judge's answering its first calls, then HTTP 500 for ever, with the dead-endpoint rule off (so
the fraction, not a dead endpoint, stops the run). What each server received is what was paid.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from healthbench_exp.config.schema import DatasetConfig, DataSource
from healthbench_exp.core.outcome import Tally, certainly_over, run_outcome
from healthbench_exp.core.run_end import Exit
from healthbench_exp.data.healthbench import load_examples
from healthbench_exp.model.health import SERVER_ERRORS
from tests.e2e.test_e2e import run_cli

ROWS_IN_FLIGHT = 2  # runner.max_concurrent
JUDGE_SUCCESSES = 10  # the judge's calls answered before its outage
FRACTION = 0.1


def run_with_outage(tmp_path: Path, loopback_server, fraction: float):  # type: ignore[no-untyped-def]
    model = loopback_server()
    judge = loopback_server(fail_status=500, fail_after=JUDGE_SUCCESSES)
    run_dir = tmp_path / "run"
    result = run_cli(
        "experiment=demo",
        "wandb=disabled",
        "runner.progress=false",
        f"runner.max_concurrent={ROWS_IN_FLIGHT}",
        "runner.max_retries=0",  # one attempt a criterion: each request is one criterion tried
        "runner.dead_endpoint_calls=0",  # the dead-endpoint rule off: the fraction stops it
        "runner.dead_endpoint_s=0",
        f"runner.max_failure_fraction={fraction}",
        "model.builtin=false",
        f"model.base_url={model.base_url}",
        "judge.builtin=false",
        f"judge.base_url={judge.base_url}",
        f"hydra.run.dir={run_dir}",
    )
    return result, model, judge, run_dir


def test_the_failure_fraction_stops_the_run_once_certain_and_nothing_more_is_sent(
    loopback_server, tmp_path: Path
) -> None:
    sample = load_examples(DatasetConfig(source=DataSource.bundled))
    criteria = sum(len(e.rubrics) for e in sample)  # 106 over 24 rows
    most = max(len(e.rubrics) for e in sample)
    result, model, judge, run_dir = run_with_outage(tmp_path, loopback_server, FRACTION)
    assert result.returncode == Exit.UNGRADED, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    counts = summary["counts"]
    # nothing sent after the stop but the calls of the rows in flight: the stop came when a row
    # brought the ungraded criteria past FRACTION x criteria (at most `most` past it), and the
    # other rows in flight had at most `most` criteria each (before: all 106 were tried)
    sent = judge.stats()["chat_requests"]  # received, answered or not
    assert sent == counts["criteria_graded"] + counts["ungraded_criteria"]  # none sent and lost
    assert sent <= JUDGE_SUCCESSES + int(FRACTION * criteria) + most * ROWS_IN_FLIGHT, sent
    assert counts["rows_not_run"] >= 24 - 10, counts
    # a row not run sent no model call, but the rows in flight at the stop
    assert model.stats()["chat_requests"] <= 24 - counts["rows_not_run"] + ROWS_IN_FLIGHT - 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    line, last = errors[0], result.stderr.strip().splitlines()[-1]
    over = f"criteria got no valid verdict, more than runner.max_failure_fraction={FRACTION}"
    assert over in line, line
    ungraded = re.search(r"stopped early: (\d+) of all 106 criteria got no valid verdict", line)
    assert ungraded is not None, line
    assert int(ungraded[1]) == counts["ungraded_criteria"], (line, counts)  # the end's count
    assert f"the judge endpoint {judge.base_url} answered {JUDGE_SUCCESSES} successes" in line
    assert re.search(re.escape(SERVER_ERRORS) + r" \d+", line), line  # what it answered, counted
    assert re.search(r"spent \S+ in this invocation \(model \d+ calls, judge \d+\); \d+ of 24 "
                     "rows not run", line), line  # fmt: skip
    assert last.endswith(f"python -m healthbench_exp resume={run_dir}"), last
    assert json.loads((run_dir / "status.json").read_text())["status"] == "ungraded"
    assert summary["partial"] is True
    # the partial table the docs promise, and where the outputs are, before the stop's line
    scored = f"{counts['rows_scored']} of 24 examples scored ({counts['rows_not_run']} not run"
    assert f"  PARTIAL: {scored}" in result.stdout, result.stdout
    assert result.stdout.strip().splitlines()[-1] == f"outputs: {run_dir}"


def test_failed_rows_past_the_fraction_stop_the_run_naming_the_model(
    loopback_server, tmp_path: Path
) -> None:
    """The model answers its first 4 calls, then 500: the run is `failed` (exit 3) once more
    than 0.1 x 24 rows failed, and no row starts after that."""
    model = loopback_server(fail_status=500, fail_after=4)
    judge = loopback_server()
    run_dir = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "wandb=disabled", "runner.progress=false",
        f"runner.max_concurrent={ROWS_IN_FLIGHT}", "runner.max_retries=0",
        "runner.dead_endpoint_calls=0", "runner.dead_endpoint_s=0",
        f"runner.max_failure_fraction={FRACTION}",
        "model.builtin=false", f"model.base_url={model.base_url}",
        "judge.builtin=false", f"judge.base_url={judge.base_url}", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == Exit.FAILED, result.stderr
    counts = json.loads((run_dir / "summary.json").read_text())["counts"]
    # 3 failed rows (> 2.4) stop it; the other row in flight may have sent its call (before: 24)
    assert model.stats()["chat_requests"] <= 4 + 3 + ROWS_IN_FLIGHT - 1
    assert counts["rows_failed"] >= 3 and counts["rows_not_run"] >= 24 - 4 - 3 - 1, counts
    line = next(x for x in result.stderr.splitlines() if x.startswith("error:"))
    assert f"of all 24 rows failed, more than runner.max_failure_fraction={FRACTION}" in line
    assert f"the model endpoint {model.base_url} answered 4 successes" in line, line
    assert result.stderr.strip().splitlines()[-1].endswith(f"resume={run_dir}")
    assert json.loads((run_dir / "status.json").read_text())["status"] == "failed"


def test_a_fraction_of_1_never_stops_the_run(loopback_server, tmp_path: Path) -> None:
    result, _, judge, _ = run_with_outage(tmp_path, loopback_server, 1.0)
    assert result.returncode == 0, result.stderr
    assert judge.stats()["chat_requests"] == 106  # every criterion tried


@pytest.mark.parametrize("seed", range(200))
def test_certainly_over_is_over_at_the_end_whatever_the_rest_gives(seed: int) -> None:
    """`certainly_over` on the rows finished so far implies `run_outcome` is not completed, for
    any way the rows not finished end (judged, ungraded, failed or not run)."""
    rng = random.Random(seed)
    fraction = rng.choice([0.0, 0.01, 0.1, 0.5, 0.99, 1.0])
    rows = [rng.randint(1, 6) for _ in range(rng.randint(1, 12))]  # criteria of each row
    finished = rng.randint(0, len(rows))

    def tally_of(outcomes: list[tuple[str, int]]) -> Tally:  # (state, ungraded) of each row
        failed = sum(state == "failed" for state, _ in outcomes)
        judged = [(c, u) for (state, u), c in zip(outcomes, rows, strict=False)
                  if state == "judged"]  # fmt: skip
        return Tally(
            rows=len(rows),
            rows_scored=sum(u < c for c, u in judged),
            rows_failed=failed,
            criteria_judged=sum(c for c, _ in judged),
            criteria_ungraded=sum(u for _, u in judged),
        )

    def draw(criteria: int) -> tuple[str, int]:
        state = rng.choice(["judged", "judged", "failed", "not_run"])
        return state, rng.randint(0, criteria) if state == "judged" else 0

    done = [draw(c) for c in rows[:finished]]
    if not certainly_over(tally_of(done), sum(rows), fraction):
        return
    for _ in range(20):
        end = done + [draw(c) for c in rows[finished:]]
        assert run_outcome(tally_of(end), fraction, "run").status != "completed"
