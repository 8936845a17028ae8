"""A run stopped by its budget tells one story: the same counts in the progress bar, the table,
summary.json and W&B; PARTIAL and DEMO flags; a printed command that finishes it; and usage and
cost summed over every invocation.

End to end: `python -m healthbench_exp` in a subprocess, on the bundled sample and the built-in
endpoint (whose illustrative prices make a budget of $0.05 stop the demo after a few rows).
"""

from __future__ import annotations

import json
import re
import shlex
from datetime import UTC, datetime
from pathlib import Path

import pytest

from healthbench_exp.model.costs import USAGE_FIELDS
from healthbench_exp.model.invocations import cumulative_usage, record_invocation
from healthbench_exp.output.run_dir import RunDirectory
from tests.e2e.test_e2e import run_cli
from tests.output.test_tracking import offline_runs, wandb_env
from tests.wandb_log import read_run


def bar_counters(stderr: str) -> dict[str, int]:
    """The progress bar's counters as it last drew them."""
    last = [line for line in re.split(r"[\r\n]", stderr) if "examples:" in line][-1]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", last)}


def test_a_budget_stop_tells_one_story_and_its_printed_command_finishes_it(
    tmp_path: Path,
) -> None:
    env = wandb_env(tmp_path)
    uncapped_dir = tmp_path / "uncapped"
    uncapped = run_cli(
        "experiment=demo",
        "wandb=disabled",
        f"hydra.run.dir={uncapped_dir}",
        env={**env, "HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache-uncapped")},
    )
    assert uncapped.returncode == 0, uncapped.stderr
    run_dir = tmp_path / "run"
    stopped = run_cli("experiment=demo", "budget.max_usd=0.05", f"hydra.run.dir={run_dir}", env=env)
    assert stopped.returncode == 4, stopped.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    counts = summary["counts"]
    assert counts["rows_not_run"] > 0 and counts["rows_scored"] > 0
    assert counts["rows_failed"] == 0  # stopped rows are not failures
    # one story: the bar, the table, summary.json and W&B give the same counts
    assert bar_counters(stopped.stderr) | {"in_flight": 0} == {
        "scored": counts["rows_scored"],
        "failed": counts["rows_failed"],
        "not_run": counts["rows_not_run"],
        "ungraded_criteria": counts["ungraded_criteria"],
        "in_flight": 0,
    }
    assert (
        f"rows scored {counts['rows_scored']}/{counts['rows']}, failed {counts['rows_failed']}, "
        f"not run {counts['rows_not_run']};" in stopped.stdout
    )
    assert "PARTIAL: " in stopped.stdout and "DEMO: " in stopped.stdout
    assert summary["partial"] is True and summary["demo"] is True
    (wandb_run,) = offline_runs(tmp_path / "wandb_dir")
    logged = read_run(wandb_run).summary
    assert logged["partial"] is True and logged["demo"] is True
    assert logged["counts/rows_not_run"] == counts["rows_not_run"]
    assert logged["counts/rows_failed"] == counts["rows_failed"]

    # the printed command names a larger budget, not the one that stopped the run
    match = re.search(r"finish with: python -m healthbench_exp (.+?) \(", stopped.stderr)
    assert match, stopped.stderr
    arguments = shlex.split(match.group(1))
    assert arguments[0] == f"resume={run_dir}"
    (budget,) = [a for a in arguments if a.startswith("budget.max_usd=")]
    assert float(budget.split("=")[1]) > 0.05
    assert "budget.max_usd caps each invocation's new spend" in stopped.stderr

    resumed = run_cli(*arguments, env=env)  # exactly the printed command
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["partial"] is False and summary["counts"]["rows_not_run"] == 0
    assert "PARTIAL" not in resumed.stdout

    # usage and cost cover both invocations: together they paid what one uncapped run pays
    reference = json.loads((uncapped_dir / "summary.json").read_text())["usage"]
    usage = summary["usage"]
    invocations = usage["invocations"]
    assert [i["invocation"] for i in invocations] == [1, 2]
    assert invocations[0]["budget"]["stopped"] and not invocations[1]["budget"]["stopped"]
    for role in ("model", "judge"):
        for name in ("requests", "prompt_tokens", "completion_tokens"):
            assert usage[role][name] == reference[role][name], (role, name)
            assert usage[role][name] == sum(i[role][name] for i in invocations)
    assert usage["total_cost_usd"] == pytest.approx(reference["total_cost_usd"])
    assert usage["total_cost_usd"] == pytest.approx(sum(i["total_cost_usd"] for i in invocations))
    assert "over 2 invocations of this run" in resumed.stdout


def test_usage_sums_only_the_invocations_that_measured_the_same_thing(tmp_path: Path) -> None:
    def usage(cost: float) -> dict:
        role = {name: 1 for name in USAGE_FIELDS} | {"cost_usd": cost / 2, "price": {}}
        return {"model": role, "judge": role, "total_cost_usd": cost}

    now = datetime.now(UTC)
    assert len(record_invocation(RunDirectory(tmp_path), usage(1.0), None, now, "a")) == 1
    assert len(record_invocation(RunDirectory(tmp_path), usage(2.0), None, now, "a")) == 2
    # the directory reused for another config: its sum starts afresh, the lines stay
    (only,) = record_invocation(RunDirectory(tmp_path), usage(4.0), None, now, "b")
    assert only["invocation"] == 3
    total = cumulative_usage(record_invocation(RunDirectory(tmp_path), usage(8.0), None, now, "b"))
    assert total["total_cost_usd"] == 12.0 and total["judge"]["requests"] == 2
    assert [i["invocation"] for i in total["invocations"]] == [3, 4]
    assert len((tmp_path / "invocations.jsonl").read_text().splitlines()) == 4


def test_a_sweep_of_budget_stopped_jobs_says_partial_not_failed(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    result = run_cli(
        "-m", "experiment=demo", "wandb=disabled", "budget.max_usd=0.05",
        "sampling.temperature=0.2,0.4", f"hydra.sweep.dir={sweep}",
        env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")},
    )  # fmt: skip
    assert result.returncode == 1
    # the sweep's line, then the command that finishes each job, last
    *_, told, job0, job1 = result.stderr.strip().splitlines()
    assert told.startswith("error: 2 of 2 jobs ended partial (0, 1); see "), told
    assert "failed" not in told
    finishes = {}
    for job, line in (("0", job0), ("1", job1)):
        # the resume carries a budget above the one that stopped it, which would stop it again
        finish = re.search(r"partial; finish with: (.+)$", line)
        assert finish is not None, line
        arguments = shlex.split(finish[1])
        assert arguments[:4] == ["python", "-m", "healthbench_exp", f"resume={sweep / job}"]
        (budget,) = arguments[4:]
        assert budget.startswith("budget.max_usd=") and float(budget.split("=")[1]) > 0.05, line
        finishes[job] = arguments[3:]
    jobs = json.loads((sweep / "sweep_summary.json").read_text())["jobs"]
    assert [j["status"] for j in jobs] == ["partial", "partial"]
    resumed = run_cli(*finishes["0"], env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")})
    assert resumed.returncode == 0, resumed.stderr  # as printed, it finishes the job
    assert json.loads((sweep / "0" / "status.json").read_text())["status"] == "completed"


def test_a_budget_stop_before_any_row_finished_suggests_at_least_the_runs_estimate(
    tmp_path: Path,
) -> None:
    """With no row finished there is no cost per row to extrapolate from: the budget printed
    for the resume is at least the run's own estimated cost (the dry run's), and finishes it."""
    env = {"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")}
    dry = run_cli("experiment=demo", "dry_run=true", f"hydra.run.dir={tmp_path / 'dry'}", env=env)
    assert dry.returncode == 0, dry.stderr
    estimated = re.search(r"estimated cost \$(\d+\.\d+)", dry.stdout)
    assert estimated is not None and float(estimated[1]) > 0, dry.stdout
    run_dir = tmp_path / "run"
    stopped = run_cli(
        "experiment=demo", "wandb=disabled", "runner.progress=false", "budget.max_usd=0.0001",
        f"hydra.run.dir={run_dir}", env=env,
    )  # fmt: skip
    assert stopped.returncode == 4, stopped.stderr
    counts = json.loads((run_dir / "summary.json").read_text())["counts"]
    assert counts["rows_not_run"] == counts["rows"]  # no row finished
    last = stopped.stderr.strip().splitlines()[-1]
    assert f"the run's estimated cost is ${estimated[1]}" in last, last
    match = re.search(r"finish with: python -m healthbench_exp (.+?) \(", last)
    assert match, last
    arguments = shlex.split(match[1])
    (budget,) = [a for a in arguments if a.startswith("budget.max_usd=")]
    assert float(budget.split("=")[1]) >= float(estimated[1]), last
    resumed = run_cli(*arguments, env=env)  # exactly the printed command
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
