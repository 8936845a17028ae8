"""What the SLURM launcher (hydra_plugins/healthbench_exp_launcher) records for a job SLURM ended:
the job folder as the sweep summary reads it. The sweeps themselves run in tests/slurm."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="the `launchers` extra")

from healthbench_exp.core.run_end import Status
from healthbench_exp.output.files import write_status
from healthbench_exp.sweep.aggregate import summarize
from hydra_plugins.healthbench_exp_launcher._jobs import (
    SlurmState,
    expand_ids,
    record_failure,
)

OVERRIDES = ["experiment=demo", "sampling.temperature=0.7"]


def test_pending_array_ranges_are_expanded_to_their_tasks() -> None:
    assert expand_ids("123_[0-2,5%4]") == ["123_0", "123_1", "123_2", "123_5"]
    assert expand_ids("123_[7]") == ["123_7"]
    assert expand_ids("123_4") == ["123_4"] and expand_ids("99") == ["99"]


def test_a_slurm_state_says_whether_the_job_ended() -> None:
    assert SlurmState("TIMEOUT", "0:15").final and str(SlurmState("TIMEOUT", "0:15")) == (
        "TIMEOUT (exit code 0:15)"
    )
    assert not SlurmState("RUNNING").final and not SlurmState("PENDING").final


def test_a_job_that_never_started_is_listed_failed_by_its_overrides(tmp_path) -> None:
    sweep = tmp_path / "sweep"
    (sweep / "0").mkdir(parents=True)
    write_status(sweep / "0", Status.COMPLETED)
    assert record_failure(sweep / "1", OVERRIDES, "SLURM ended it: FAILED") == "failed"
    status = json.loads((sweep / "1" / "status.json").read_text())
    assert status == {"status": "failed", "error": "SLURM ended it: FAILED"}  # nothing to resume
    rows = {row["job"]: row for row in summarize([sweep])["jobs"]}
    assert rows["1"]["status"] == "failed"
    assert rows["1"]["overrides"] == " ".join(OVERRIDES)


def test_a_started_job_killed_mid_run_is_failed_with_the_resume_command(tmp_path) -> None:
    job = tmp_path / "1"
    job.mkdir()
    write_status(job, Status.RUNNING)
    (job / "examples.jsonl").write_text("")
    assert record_failure(job, OVERRIDES, "SLURM ended it: OUT_OF_MEMORY") == "failed"
    error = json.loads((job / "status.json").read_text())["error"]
    assert error == (
        f"SLURM ended it: OUT_OF_MEMORY; finish with: python -m healthbench_exp resume={job}"
    )


def test_a_job_that_recorded_its_own_end_keeps_it(tmp_path) -> None:
    """The time-limit signal: the job wrote `interrupted` with its resume command itself."""
    job = tmp_path / "1"
    job.mkdir()
    write_status(job, Status.INTERRUPTED, "interrupted by SIGUSR2; finish with: ...")
    assert record_failure(job, OVERRIDES, "SLURM ended it: FAILED") == "interrupted"
    status = json.loads((job / "status.json").read_text())
    assert status["status"] == "interrupted" and "SIGUSR2" in status["error"]
