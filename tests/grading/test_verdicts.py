"""Ungraded is not completed: a judge that gives no verdicts ends a run with status `ungraded`
and exit 5, an always-unparseable judge is stopped early, and empty verdicts are resampled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from healthbench_exp.builtin_endpoint.server import server_args
from healthbench_exp.core.outcome import Tally, run_outcome
from tests.e2e.test_e2e import run_cli
from tests.engine.test_runner import read_jsonl
from tests.zygote import ForkedServer

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")
DEMO_CRITERIA = 106  # the bundled sample's criteria (24 examples)


def status_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "status.json").read_text())


def test_a_judge_that_fails_every_call_is_not_completed(tmp_path: Path) -> None:
    result = run_cli(
        *DEMO, "offline_server.judge_error_rate=1.0", "runner.max_retries=0",
        # the dead-endpoint watch and the failure-fraction stop off (tests/engine/
        # test_dead_endpoint.py and test_fraction_stop.py have them on): every criterion is
        # asked and fails, and the run still ends ungraded, never "not met"
        "runner.dead_endpoint_calls=0", "runner.dead_endpoint_s=0",
        "runner.max_failure_fraction=1.0",
        f"hydra.run.dir={tmp_path}",
    )  # fmt: skip
    assert result.returncode == 5, result.stderr
    status = status_of(tmp_path)
    assert status["status"] == "ungraded"
    assert status["error"].startswith("no example could be scored: 106 of 106 criteria")
    assert "no example could be scored" in result.stderr.splitlines()[-1]
    summary = json.loads((tmp_path / "summary.json").read_text())  # everything is still written
    assert summary["counts"]["ungraded_criteria"] == DEMO_CRITERIA
    assert summary["counts"]["rows_failed"] == 0 and summary["metrics"] == {}


def test_ungraded_criteria_count_toward_max_failure_fraction(tmp_path: Path) -> None:
    args = [*DEMO, "offline_server.malformed_rate=0.5", "judge.max_parse_retries=0"]
    strict = run_cli(*args, f"hydra.run.dir={tmp_path / 'strict'}")
    assert strict.returncode == 5, strict.stderr
    summary = json.loads((tmp_path / "strict" / "summary.json").read_text())
    counts = summary["counts"]
    assert 0 < counts["ungraded_criteria"] < DEMO_CRITERIA and counts["rows_failed"] == 0
    assert summary["metrics"]["overall_score:n_samples"] > 0  # the rest is scored
    message = status_of(tmp_path / "strict")["error"]
    # stopped once more than 0.01 of the run's criteria were certain to go ungraded
    assert message.startswith("stopped early: "), message
    assert f"of all {DEMO_CRITERIA} criteria got no valid verdict" in message
    assert "more than runner.max_failure_fraction=0.01" in message and message in strict.stderr
    lenient = run_cli(
        *args, "runner.max_failure_fraction=1.0", f"hydra.run.dir={tmp_path / 'lenient'}"
    )
    assert lenient.returncode == 0, lenient.stderr
    assert status_of(tmp_path / "lenient")["status"] == "completed"


def judge_requests(base_url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats") as response:
        return json.loads(response.read())["judge_requests"]


def test_a_judge_that_fences_without_json_is_stopped_early(tmp_path: Path) -> None:
    with ForkedServer(server_args(fenced_rate=1.0)) as server:
        result = run_cli(
            *DEMO, "judge=openai_compatible", "judge.name=j", f"judge.base_url={server.base_url}",
            "judge.early_stop_unparseable=20",
            f"hydra.run.dir={tmp_path}",
        )  # fmt: skip
        paid = judge_requests(server.base_url)
    assert result.returncode == 5, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(
        "error: stopped early: the judge's first 20 replies were all unparseable"
    )
    assert '\'```\\n{\\n  "explanation"' in line  # one raw reply, quoted
    assert "judge.early_stop_unparseable=0" in line
    assert status_of(tmp_path)["status"] == "ungraded"
    # until a verdict parses at most 20 calls are sent: 20, not 4 for each of the 106 criteria
    assert paid == 20


def test_the_early_stop_can_be_turned_off(tmp_path: Path) -> None:
    result = run_cli(
        *DEMO, "offline_server.fenced_rate=1.0", "judge.early_stop_unparseable=0",
        "judge.max_parse_retries=0", "runner.max_failure_fraction=1.0",  # every one asked
        f"hydra.run.dir={tmp_path}",
    )  # fmt: skip
    assert result.returncode == 5, result.stderr
    rows = read_jsonl(tmp_path / "per_criterion.jsonl")
    assert len(rows) == DEMO_CRITERIA and all(r["criteria_met"] is None for r in rows)
    assert all(r["error"].startswith("no valid verdict in 1 judge replies") for r in rows)


def test_meta_eval_with_an_unparseable_judge_stops_early(tmp_path: Path) -> None:
    result = run_cli(
        *DEMO, "task=meta_eval", "offline_server.fenced_rate=1.0", f"hydra.run.dir={tmp_path}"
    )
    assert result.returncode == 5, result.stderr
    assert "stopped early" in result.stderr and status_of(tmp_path)["status"] == "ungraded"


def test_empty_judge_replies_are_resampled(tmp_path: Path) -> None:
    args = [*DEMO, "judge.max_parse_retries=10"]  # 11 empty replies in a row: p = 0.3**11
    clean = run_cli(*args, f"hydra.run.dir={tmp_path / 'clean'}")
    assert clean.returncode == 0, clean.stderr
    empty = run_cli(
        *args, "offline_server.judge_empty_rate=0.3", f"hydra.run.dir={tmp_path / 'empty'}"
    )
    assert empty.returncode == 0, empty.stderr
    a = json.loads((tmp_path / "clean" / "summary.json").read_text())
    b = json.loads((tmp_path / "empty" / "summary.json").read_text())
    assert b["counts"]["ungraded_criteria"] == 0
    # the built-in judge answers a prompt the same way every time: the resamples change nothing
    assert b["metrics"] == a["metrics"]
    assert a["counts"]["judge_replies"] == DEMO_CRITERIA
    assert b["counts"]["judge_replies"] > DEMO_CRITERIA + 10  # about 30% more: the resamples
    assert b["counts"]["request_errors"]["judge"].get("EmptyReply", 0) > 10


@pytest.mark.parametrize(
    ("tally", "fraction", "expected"),
    [
        (Tally(10, 10, 0, 100, 0), 0.01, ("completed", 0)),
        (Tally(10, 10, 0, 100, 1), 0.01, ("completed", 0)),  # 1%: not more than 1%
        (Tally(10, 10, 0, 100, 2), 0.01, ("ungraded", 5)),
        (Tally(10, 9, 1, 90, 0), 0.01, ("failed", 3)),
        (Tally(10, 9, 1, 90, 30), 0.01, ("failed", 3)),  # both: failed rows weigh more
        (Tally(10, 0, 0, 100, 100), 1.0, ("ungraded", 5)),  # nothing scored: never completed
        (Tally(10, 0, 10, 0, 0), 1.0, ("failed", 3)),
        (Tally(10, 9, 0, 100, 100), 1.0, ("completed", 0)),
    ],
)
def test_run_outcome(tally: Tally, fraction: float, expected: tuple[str, int]) -> None:
    outcome = run_outcome(tally, fraction, "/runs/x")
    assert (outcome.status, outcome.exit_code) == expected
    assert (outcome.message is None) == (expected[0] == "completed")
