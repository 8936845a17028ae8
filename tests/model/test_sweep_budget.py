"""A sweep's budget is the sweep's (issue 50): `budget.max_usd` on `-m` caps what all its jobs
spend together (two jobs under `budget.max_usd=0.1` spent $0.1978: each job had its own cap);
`budget.max_usd_per_job` caps each job.

End to end: `python -m healthbench_exp -m ...` in a subprocess with the built-in endpoint, whose
illustrative prices make the demo cost about $0.22 a job on a fresh response cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from healthbench_exp.model import sweep_budget
from healthbench_exp.model.sweep_budget import LEDGER_FILE, SweepLedger, read_ledger
from tests.e2e.test_e2e import REPO, run_cli

DEMO = ("experiment=demo", "wandb=disabled")
# an invocation may pass its cap by its last requests' cost beyond their estimate (a few
# thousandths of a dollar here), as a single run may
OVER_ESTIMATE_USD = 0.002


def job_costs(sweep: Path) -> dict[str, float]:
    """Each job's cost as its summary.json records it, by job directory name."""
    return {
        job.name: json.loads((job / "summary.json").read_text())["usage"]["total_cost_usd"]
        for job in sorted(sweep.iterdir())
        if (job / "summary.json").is_file()
    }


def test_the_sweep_s_spend_stays_under_its_cap(tmp_path: Path) -> None:
    """The issue's sweep: job 0 stops at the cap; job 1 counts job 0's spend and stops too."""
    sweep = tmp_path / "s"
    result = run_cli(
        "-m", *DEMO, "sampling.temperature=0,1", "budget.max_usd=0.1", f"hydra.sweep.dir={sweep}"
    )
    assert result.returncode != 0, result.stderr  # jobs ended partial
    costs = job_costs(sweep)
    assert set(costs) == {"0", "1"}
    assert sum(costs.values()) <= 0.1 + OVER_ESTIMATE_USD, costs  # was $0.1978
    assert costs["0"] > 0.09  # job 0 spent (almost) all of it
    for job in ("0", "1"):
        status = json.loads((sweep / job / "status.json").read_text())
        assert status["status"] == "partial"
    budget = json.loads((sweep / "1" / "summary.json").read_text())["budget"]
    assert budget["max_usd"] == 0.1 and budget["stopped_by"] == "max_usd"
    assert budget["sweep_jobs_usd"] == pytest.approx({"0": costs["0"]})
    # the stop line of job 1 names each job's spend and the command that finishes it
    lines = result.stderr.splitlines()
    (line,) = [x for x in lines if x.startswith("error:") and f"resume={sweep}/1 " in x]
    assert line.startswith("error: budget.max_usd=0.1 (the sweep's, over all its jobs) reached")
    assert f"(0: ${costs['0']:.4f}, 1: ${costs['1']:.4f} (this one))" in line
    assert f"finish with: python -m healthbench_exp resume={sweep}/1 budget.max_usd=" in line


def test_a_later_job_spends_what_the_earlier_ones_left(tmp_path: Path) -> None:
    """$0.30 over two jobs of about $0.22: job 0 completes, job 1 stops at the rest."""
    sweep = tmp_path / "s"
    result = run_cli(
        "-m", *DEMO, "sampling.temperature=0,1", "budget.max_usd=0.3", f"hydra.sweep.dir={sweep}"
    )
    assert result.returncode != 0, result.stderr  # jobs ended partial
    costs = job_costs(sweep)
    assert json.loads((sweep / "0" / "status.json").read_text())["status"] == "completed"
    assert json.loads((sweep / "1" / "status.json").read_text())["status"] == "partial"
    assert costs["1"] > 0.03  # job 1 ran on what job 0 left
    assert sum(costs.values()) <= 0.3 + OVER_ESTIMATE_USD, costs


def test_a_per_job_cap_caps_each_job(tmp_path: Path) -> None:
    """`budget.max_usd_per_job=0.1`: each job stops at $0.1 of its own (the old meaning)."""
    sweep = tmp_path / "s"
    result = run_cli(
        "-m", *DEMO, "sampling.temperature=0,1", "budget.max_usd_per_job=0.1",
        f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode != 0, result.stderr  # jobs ended partial
    costs = job_costs(sweep)
    for job in ("0", "1"):
        assert 0.05 < costs[job] <= 0.1 + OVER_ESTIMATE_USD, costs
        budget = json.loads((sweep / job / "summary.json").read_text())["budget"]
        assert budget["max_usd_per_job"] == 0.1 and budget["stopped_by"] == "max_usd_per_job"
    assert "budget.max_usd_per_job=0.1 reached" in result.stderr


def test_the_parallel_launcher_s_jobs_share_the_cap(tmp_path: Path) -> None:
    """Two jobs at once (`hydra/launcher=parallel`), each sending dozens of requests at a time:
    the ledger's lock keeps their total under the cap."""
    sweep = tmp_path / "s"
    result = run_cli(
        "-m", *DEMO, "sampling.temperature=0,1", "budget.max_usd=0.1", "hydra/launcher=parallel",
        "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode != 0, result.stderr  # jobs ended partial
    costs = job_costs(sweep)
    assert set(costs) == {"0", "1"}, result.stderr
    assert sum(costs.values()) <= 0.1 + OVER_ESTIMATE_USD, costs  # each job alone: $0.1
    ledger = json.loads((sweep / LEDGER_FILE).read_text())
    assert ledger == pytest.approx(costs)  # nothing left in flight


def test_a_job_s_claim_counts_what_the_others_committed(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    first, second = (SweepLedger(0.1, sweep, sweep / job) for job in ("0", "1"))
    assert first.claim(0.06) is None  # claimed with a tranche: min(0.1/50, (0.1 - 0.06)/8)
    assert read_ledger(sweep) == pytest.approx({"0": 0.062})
    assert second.claim(0.05) == pytest.approx(0.062)  # refused: the ledger is left as it was
    assert read_ledger(sweep) == pytest.approx({"0": 0.062})
    assert second.claim(0.0375) is None  # its tranche: (0.1 - 0.062 - 0.0375) / 8
    assert read_ledger(sweep) == pytest.approx({"0": 0.062, "1": 0.0375 + 0.0005 / 8})
    first.close(0.03)  # its request cost less than its estimate; its claim is released
    assert second.claim(0.07) is None
    assert read_ledger(sweep) == pytest.approx({"0": 0.03, "1": 0.07})
    assert dict(second.others()) == pytest.approx({"0": 0.03})
    second.close(0.07)


def test_requests_within_a_claim_leave_the_file_alone(tmp_path: Path) -> None:
    """One read and write of the ledger per tranche (by the worker), not two per request."""
    sweep = tmp_path / "s"
    ledger = SweepLedger(10.0, sweep, sweep / "0")
    assert ledger.claim(0.001) is None  # the first claim: 0.001 + $0.2 (10/50)
    written = (sweep / LEDGER_FILE).stat().st_mtime_ns
    for n in range(2, 50):  # $0.049 in all: within the claim
        assert ledger.claim(n * 0.001) is None
        ledger.record(n * 0.001 - 0.0002)
    assert (sweep / LEDGER_FILE).stat().st_mtime_ns == written
    assert read_ledger(sweep) == pytest.approx({"0": 0.201})
    ledger.close(0.0488)
    assert read_ledger(sweep) == pytest.approx({"0": 0.0488})  # exact once it is over


def test_a_failure_of_the_worker_is_raised_on_the_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's claim ahead failing (the file system's error) is not lost: the job's next
    call raises it."""
    sweep = tmp_path / "s"
    ledger = SweepLedger(1.0, sweep, sweep / "0")
    assert ledger.claim(0.001) is None  # claimed: 0.001 + $0.02

    def unreadable(folder: Path) -> dict[str, float]:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(sweep_budget, "read_ledger", unreadable)
    assert ledger.claim(0.015) is None  # within the claim, less than half a tranche left
    pending = ledger._pending
    assert pending is not None
    pending.result(timeout=30)
    with pytest.raises(OSError, match="Input/output error"):
        ledger.record(0.015)


JOB = """
import sys
from pathlib import Path
from healthbench_exp.model.costs import Budget, BudgetExhausted
from healthbench_exp.model.sweep_budget import SweepLedger
sweep, job, cap = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
budget = Budget(None, None, SweepLedger(cap, sweep, sweep / job))
print("ready", flush=True)
sys.stdin.readline()  # both start together
try:
    while True:
        budget.reserve(0.001)
        budget.settle(0.001, 0.001)
except BudgetExhausted:
    pass
budget.close()
print(f"{budget.spent:.6f}", flush=True)
"""


def test_two_processes_spend_the_cap_exactly(tmp_path: Path) -> None:
    """Two jobs at once, each as fast as it can: together they spend the sweep's cap to within
    one request (each request's cost is its estimate), and the ledger ends with each one's
    spend."""
    sweep = tmp_path / "s"
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", JOB, str(sweep)]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    jobs = [subprocess.Popen([*command, job, "0.3"], env=environment, **pipes) for job in "01"]
    for job in jobs:
        assert job.stdout is not None and job.stdout.readline() == "ready\n"
    for job in jobs:
        assert job.stdin is not None
        job.stdin.write("go\n")
        job.stdin.flush()
    spent = {n: float(job.communicate(timeout=120)[0]) for n, job in zip("01", jobs, strict=True)}
    assert all(job.returncode == 0 for job in jobs)
    assert 0.3 - 0.001 - 1e-9 <= sum(spent.values()) <= 0.3 + 1e-9, spent
    assert min(spent.values()) > 0.01, spent  # both ran at once
    assert read_ledger(sweep) == pytest.approx(spent)


def test_the_sweep_directory_of_the_budget_is_not_set_by_hand(tmp_path: Path) -> None:
    """`budget.sweep_dir` is set by a sweep for its jobs: on the command line it is refused."""
    result = run_cli(*DEMO, "dry_run=true", "budget.sweep_dir=x", f"hydra.run.dir={tmp_path}")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "error: budget.sweep_dir=x: budget.sweep_dir is set by a sweep (-m) for each of its "
        "jobs, not on the command line; drop it"
    )
