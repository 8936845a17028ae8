"""A sweep checks every job before the first starts: values, keys, files and retired models of
all its jobs, every problem named at once with its jobs' overrides, exit 2, no job run and no
request sent (issue 50: job 0 used to run in full, and be paid, before job 1 was refused).

End to end: `python -m healthbench_exp -m ...` in a subprocess, as a user runs it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.e2e.test_e2e import run_cli

MISSING_KEY = "HB_SWEEP_CHECK_UNSET_KEY"
TEMPERATURE_3 = "sampling.temperature must be in [0, 2] or null, got 3.0"


def no_key_env() -> dict[str, str]:
    """The environment without OpenAI's key, nor the variable the tests name as unset."""
    return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", MISSING_KEY)}


def jobs_run(sweep_dir: Path) -> list[Path]:
    """The job directories a sweep made (none when no job started)."""
    return sorted(p for p in sweep_dir.glob("*") if p.is_dir()) if sweep_dir.exists() else []


def test_a_value_out_of_range_in_job_1_refuses_the_sweep_before_job_0(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    result = run_cli(
        "-m", "experiment=demo", "wandb=disabled", "sampling.temperature=0,3",
        f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    error = (
        "error: sweep job 1 (experiment=demo wandb=disabled sampling.temperature=3): "
        f"{TEMPERATURE_3}; no job was started"
    )
    assert error in result.stderr, result.stderr
    assert "Launching" not in result.stdout + result.stderr
    assert jobs_run(sweep) == []


def test_a_job_without_its_key_refuses_the_sweep_and_nothing_is_sent(
    tmp_path: Path, loopback_server: Any
) -> None:
    """Job 0 talks to a real loopback server, job 1 lacks its API key: the server is sent
    nothing."""
    server = loopback_server()
    sweep = tmp_path / "s"
    result = run_cli(
        "-m", "model=openai_compatible", "model.name=m-1", f"model.base_url={server.base_url}",
        f"model.api_key_env=null,{MISSING_KEY}", "judge=offline", "difficulty=sample",
        "sampling.num_examples=2", "wandb=disabled", f"hydra.sweep.dir={sweep}",
        env=no_key_env(),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "error: sweep job 1 (" in result.stderr
    assert f"model.api_key_env={MISSING_KEY}" in result.stderr
    assert f"set the environment variable {MISSING_KEY}" in result.stderr
    assert server.stats().get("requests", 0) == 0
    assert jobs_run(sweep) == []


def test_the_issue_s_sweep_over_an_offline_and_a_keyed_model(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    result = run_cli(
        "-m", "experiment=demo", "wandb=disabled", "model=offline,gpt41mini",
        f"hydra.sweep.dir={sweep}", env=no_key_env(),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "error: sweep job 1 (experiment=demo wandb=disabled model=gpt41mini): model: " in (
        result.stderr
    )
    assert "OPENAI_API_KEY" in result.stderr
    assert jobs_run(sweep) == []


def test_every_problem_of_every_job_is_named_at_once(tmp_path: Path) -> None:
    """2 x 2 jobs: a missing file (every job), a temperature (jobs 1, 3), a key (jobs 2, 3)."""
    sweep = tmp_path / "s"
    missing = tmp_path / "absent.jsonl"
    result = run_cli(
        "-m", "experiment=demo", "wandb=disabled", "model=offline,gpt41mini",
        "sampling.temperature=0,3", f"dataset.path={missing}", f"hydra.sweep.dir={sweep}",
        env=no_key_env(),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert "error: 3 problems in 4 of the sweep's 4 jobs; no job was started" in result.stderr
    assert f"  - every job: dataset.path={missing}: no such file" in lines
    assert f"  - jobs 1, 3: {TEMPERATURE_3}" in lines
    (key_line,) = [line for line in lines if "OPENAI_API_KEY" in line]
    assert key_line.startswith("  - jobs 2, 3: model: ")
    job_3 = "  job 3: experiment=demo wandb=disabled model=gpt41mini sampling.temperature=3"
    assert any(line.startswith(job_3) for line in lines), result.stderr
    assert jobs_run(sweep) == []


def test_a_range_sweep_is_expanded_as_hydra_expands_it(tmp_path: Path) -> None:
    """`range(0,4)`: temperatures 0, 1, 2, 3; only the last job is refused, by its number."""
    sweep = tmp_path / "s"
    result = run_cli(
        "-m", "experiment=demo", "wandb=disabled", "sampling.temperature=range(0,4)",
        f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "error: sweep job 3 (" in result.stderr and "sampling.temperature=3)" in result.stderr
    assert TEMPERATURE_3 in result.stderr
    assert jobs_run(sweep) == []


def test_a_sweep_whose_jobs_all_pass_runs_every_job(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    result = run_cli(
        "-m", "experiment=demo", "wandb=disabled", "sampling.num_examples=2",
        "sampling.temperature=0,1", "dry_run=true", f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [p.name for p in jobs_run(sweep)] == ["0", "1"]
