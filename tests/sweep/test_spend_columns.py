"""A comparison shows each job's spend as one set of numbers: tokens, wall time, cost and the
estimate of what it abandoned in flight all cover the same invocations (every one of the run's),
in `sweep_summary.json`, `.csv`, `.md` and `report.html`; a job that paid and scored nothing
shows what it paid; a sweep's total includes what its jobs abandoned, as a labelled estimate.

End to end: real runs (`python -m healthbench_exp`) against a loopback endpoint, stopped by a
budget or a Ctrl-C and resumed, then `python -m healthbench_exp.aggregate` over them.
"""

from __future__ import annotations

import csv
import json
import signal
from pathlib import Path

import pytest

from tests import zygote
from tests.e2e.test_e2e import run_cli
from tests.engine.test_resume_records import endpoint_args
from tests.engine.test_stop_in_flight import started

ROLES = ("model", "judge")


def usage_tokens(usage: dict) -> int:
    return sum(usage[r]["prompt_tokens"] + usage[r]["completion_tokens"] for r in ROLES)


def aggregate(tmp_path: Path, *runs: Path) -> tuple[dict, str, str, list[dict]]:
    """`python -m healthbench_exp.aggregate <runs> --out`: its json, md, html and csv rows."""
    out = tmp_path / "comparison"
    zygote.run(*map(str, runs), "--out", str(out), module="healthbench_exp.aggregate")
    data = json.loads((out / "sweep_summary.json").read_text(encoding="utf-8"))
    with (out / "sweep_summary.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    md = (out / "sweep_summary.md").read_text(encoding="utf-8")
    return data, md, (out / "report.html").read_text(encoding="utf-8"), rows


def stopped_by_budget(loopback_server, tmp_path: Path, max_usd: float) -> Path:
    """A run against a loopback endpoint stopped by `budget.max_usd` (exit 4): its directory."""
    server = loopback_server()
    run_dir = tmp_path / "run"
    args = [*endpoint_args(server.base_url), f"cache.dir={tmp_path / 'cache'}"]
    stopped = run_cli(*args, f"budget.max_usd={max_usd}", f"hydra.run.dir={run_dir}")
    assert stopped.returncode == 4, stopped.stderr
    return run_dir


def test_a_resumed_jobs_tokens_wall_time_and_cost_cover_all_its_invocations(
    loopback_server, tmp_path: Path
) -> None:
    run_dir = stopped_by_budget(loopback_server, tmp_path, 0.05)
    resumed = run_cli(f"resume={run_dir}", "budget.max_usd=null")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    usage, counts = summary["usage"], summary["counts"]
    invocations = usage["invocations"]
    assert len(invocations) == 2
    tokens = sum(usage_tokens(i) for i in invocations)
    wall = sum(i["wall_time_s"] for i in invocations)
    # the last invocation's own counts are not the run's: the comparison must not take them
    last_tokens = sum(counts[f"{r}_{k}_tokens"] for r in ROLES for k in ("prompt", "completion"))
    assert last_tokens < tokens and counts["wall_time_s"] < wall
    # the run's own report: its wall time over both invocations, as its cost
    report = (run_dir / "report.html").read_text(encoding="utf-8")
    assert f"wall time {usage['wall_time_s']:.1f} s over 2 invocations" in report

    data, md, _html, rows = aggregate(tmp_path, run_dir)
    (job,) = data["jobs"]
    assert job["tokens"] == tokens == usage_tokens(usage)
    assert job["wall_time_s"] == pytest.approx(wall)
    assert job["cost_usd"] == pytest.approx(usage["total_cost_usd"])
    assert int(rows[0]["tokens"]) == tokens
    assert f"| {tokens} | ${usage['total_cost_usd']:.4f} |" in md
    assert f"{wall:.1f}" in md


def test_a_job_that_paid_and_scored_nothing_is_never_shown_as_free(
    loopback_server, tmp_path: Path
) -> None:
    run_dir = stopped_by_budget(loopback_server, tmp_path, 0.002)
    usage = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))["usage"]
    assert usage["total_cost_usd"] > 0 and usage_tokens(usage) > 0

    data, md, _html, _rows = aggregate(tmp_path, run_dir)
    (job,) = data["jobs"]
    assert job.get("overall_score") is None  # nothing scored
    assert job["tokens"] == usage_tokens(usage) and job["cost_usd"] == usage["total_cost_usd"]
    row = next(line for line in md.splitlines() if line.startswith(f"| {job['job']} "))
    assert f"| {usage_tokens(usage)} | ${usage['total_cost_usd']:.4f} |" in row


def test_a_sweeps_total_includes_what_its_interrupted_jobs_abandoned(
    loopback_server, tmp_path: Path
) -> None:
    server = loopback_server(latency_ms=1000)
    cut = tmp_path / "cut"
    process = zygote.spawn(
        *endpoint_args(server.base_url), "runner.max_concurrent=2", "runner.stop_grace_s=0",
        f"cache.dir={tmp_path / 'cache'}", f"hydra.run.dir={cut}",
    )  # fmt: skip
    started(server, 2)
    process.send_signal(signal.SIGINT)  # no grace: the requests in flight are abandoned
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    recorded = [json.loads(line) for line in (cut / "invocations.jsonl").read_text().splitlines()]
    abandoned = sum(recorded[0]["usage"][r].get("abandoned_in_flight", 0) for r in ROLES)
    estimate = recorded[0]["usage"]["abandoned_cost_usd"]
    assert abandoned >= 2 and estimate > 0

    data, md, html, _rows = aggregate(tmp_path, cut)
    (job,) = data["jobs"]
    assert job["abandoned_in_flight"] == abandoned
    assert job["abandoned_cost_usd"] == pytest.approx(estimate)
    assert data["cost_with_abandoned_usd"] == pytest.approx(data["cost_usd"] + estimate)
    labelled = f"about ${estimate:.4f} for {abandoned} requests abandoned in flight (estimated"
    total = next(line for line in md.splitlines() if line.startswith("Cost of the sweep: "))
    assert labelled in total and f"about ${data['cost_with_abandoned_usd']:.4f} in all" in total
    assert labelled in html
