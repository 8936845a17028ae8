"""A sweep checks every job before the first starts: values, keys, files and retired models of
all its jobs, every problem named at once with its jobs' overrides, exit 2, no job run and no
request sent (issue 50: job 0 used to run in full, and be paid, before job 1 was refused).

End to end: `python -m healthbench_exp -m ...` in a subprocess, as a user runs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.test_e2e import run_cli
from tests.signal_runs import jobs_run, no_key_env, refused_sweep, run_sweep

MISSING_KEY = "HB_SWEEP_CHECK_UNSET_KEY"
TEMPERATURE_3 = "sampling.temperature must be in [0, 2] or null, got 3.0"
DEMO = ("experiment=demo", "wandb=disabled")


def test_a_value_out_of_range_in_job_1_refuses_the_sweep_before_job_0(tmp_path: Path) -> None:
    result = refused_sweep(tmp_path / "s", *DEMO, "sampling.temperature=0,3")
    error = (
        "error: sweep job 1 (experiment=demo wandb=disabled sampling.temperature=3): "
        f"{TEMPERATURE_3}; no job was started"
    )
    assert error in result.stderr, result.stderr
    assert "Launching" not in result.stdout + result.stderr


def test_a_job_without_its_key_refuses_the_sweep_and_nothing_is_sent(
    tmp_path: Path, loopback_server: Any
) -> None:
    """Job 0 talks to a real loopback server, job 1 lacks its API key: the server is sent
    nothing."""
    server = loopback_server()
    result = refused_sweep(
        tmp_path / "s", "model=openai_compatible", "model.name=m-1",
        f"model.base_url={server.base_url}", f"model.api_key_env=null,{MISSING_KEY}",
        "judge=offline", "difficulty=sample", "sampling.num_examples=2", "wandb=disabled",
        env=no_key_env(MISSING_KEY),
    )  # fmt: skip
    assert "error: sweep job 1 (" in result.stderr
    assert f"model.api_key_env={MISSING_KEY}" in result.stderr
    assert f"set the environment variable {MISSING_KEY}" in result.stderr
    assert server.stats().get("requests", 0) == 0


def test_the_issue_s_sweep_over_an_offline_and_a_keyed_model(tmp_path: Path) -> None:
    result = refused_sweep(
        tmp_path / "s", *DEMO, "model=offline,gpt41mini", env=no_key_env(MISSING_KEY)
    )
    assert "error: sweep job 1 (experiment=demo wandb=disabled model=gpt41mini): model: " in (
        result.stderr
    )
    assert "OPENAI_API_KEY" in result.stderr


def test_every_problem_of_every_job_is_named_at_once(tmp_path: Path) -> None:
    """2 x 2 jobs: a missing file (every job), a temperature (jobs 1, 3), a key (jobs 2, 3)."""
    missing = tmp_path / "absent.jsonl"
    result = refused_sweep(
        tmp_path / "s", *DEMO, "model=offline,gpt41mini", "sampling.temperature=0,3",
        f"dataset.path={missing}", env=no_key_env(MISSING_KEY),
    )  # fmt: skip
    lines = result.stderr.splitlines()
    assert "error: 3 problems in 4 of the sweep's 4 jobs; no job was started" in result.stderr
    assert f"  - every job: dataset.path={missing}: no such file" in lines
    assert f"  - jobs 1, 3: {TEMPERATURE_3}" in lines
    (key_line,) = [line for line in lines if "OPENAI_API_KEY" in line]
    assert key_line.startswith("  - jobs 2, 3: model: ")
    job_3 = "  job 3: experiment=demo wandb=disabled model=gpt41mini sampling.temperature=3"
    assert any(line.startswith(job_3) for line in lines), result.stderr


def test_a_range_sweep_is_expanded_as_hydra_expands_it(tmp_path: Path) -> None:
    """`range(0,4)`: temperatures 0, 1, 2, 3; only the last job is refused, by its number."""
    result = refused_sweep(tmp_path / "s", *DEMO, "sampling.temperature=range(0,4)")
    assert "error: sweep job 3 (" in result.stderr and "sampling.temperature=3)" in result.stderr
    assert TEMPERATURE_3 in result.stderr


def test_a_sweep_whose_jobs_all_pass_runs_every_job(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    result = run_sweep(
        sweep, *DEMO, "sampling.num_examples=2", "sampling.temperature=0,1", "dry_run=true"
    )
    assert result.returncode == 0, result.stderr
    assert [p.name for p in jobs_run(sweep)] == ["0", "1"]


SAMPLE = Path(__file__).parents[2] / "healthbench_exp" / "data" / "sample.jsonl"


def single_run_error(data: Path, tmp_path: Path) -> str:
    """The one line a single run refuses `data` with (before its first request)."""
    result = run_cli(*DEMO, f"dataset.path={data}", f"hydra.run.dir={tmp_path / 'single'}")
    assert result.returncode == 2, result.stderr
    return result.stderr.strip().splitlines()[-1].removeprefix("error: ")


def test_a_broken_data_file_of_job_1_refuses_the_sweep_before_job_0(tmp_path: Path) -> None:
    """Job 0 reads a good file, job 1 a copy with a broken JSON line and a row without
    `rubrics`: the sweep is refused before job 0, naming the line and id as a single run does."""
    rows = SAMPLE.read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*rows[:3], rows[3][:-40], *rows[4:]]) + "\n", encoding="utf-8")
    no_rubrics = tmp_path / "no_rubrics.jsonl"
    row = json.loads(rows[5])
    del row["rubrics"]
    no_rubrics.write_text("\n".join([*rows[:5], json.dumps(row), *rows[6:]]) + "\n")

    result = refused_sweep(
        tmp_path / "s", *DEMO, f"dataset.path={SAMPLE},{broken},{no_rubrics}"
    )  # jobs 1 and 2 refused: nothing of job 0 ran
    for number, data in ((1, broken), (2, no_rubrics)):
        said = single_run_error(data, tmp_path / str(number))
        assert "line" in said and (data.name in said or str(data) in said), said
        assert f"job {number}: {said}" in result.stderr or (
            f"sweep job {number} (" in result.stderr and said in result.stderr
        ), result.stderr
    assert row["prompt_id"] in result.stderr  # the row without rubrics, by its id
