"""A sweep whose jobs a reasoning model makes identical is warned about before its first job.

End to end: `python -m healthbench_exp -m ...` in a subprocess, as a user runs it; dry runs of the
bundled sample (nothing sent).
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_e2e import run_cli

DRY = ("judge=offline", "difficulty=sample", "dataset.source=bundled", "wandb=disabled")
SAME_RUN = "they are the same run; vary model.reasoning_effort instead"
IGNORES = "which gpt-5.4-2026-03-05 ignores (model.reasoning: true sends no temperature"


def test_a_temperature_sweep_over_a_reasoning_preset_warns_once(tmp_path: Path) -> None:
    result = run_cli(
        "-m", "model=gpt54", *DRY, "dry_run=true", "sampling.temperature=0,0.7,1",
        f"hydra.sweep.dir={tmp_path / 's'}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    warning = f"warning: sweep jobs 0, 1, 2 differ only in sampling.temperature, {IGNORES}"
    assert result.stderr.count(warning) == 1, result.stderr
    assert result.stderr.count(SAME_RUN) == 1


def test_the_warning_comes_before_any_job_starts(tmp_path: Path) -> None:
    """The same sweep with a judge past its shutdown date: refused before its first job, and
    the warning was already given."""
    result = run_cli(
        "-m", "model=gpt54", *DRY, "judge.shutdown_date=2020-01-01",
        "sampling.temperature=0,0.7", f"hydra.sweep.dir={tmp_path / 's'}",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"warning: sweep jobs 0, 1 differ only in sampling.temperature, {IGNORES}" in (
        result.stderr
    )
    assert "no job was started" in result.stderr
    assert "Launching" not in result.stdout + result.stderr


def test_a_sweep_over_temperature_and_seed_names_each_identical_pair(tmp_path: Path) -> None:
    """Jobs (T, seed): 0 (0, 0), 1 (0, 1), 2 (0.7, 0), 3 (0.7, 1); those of one seed are the
    same run."""
    result = run_cli(
        "-m", "model=gpt54", *DRY, "dry_run=true", "sampling.temperature=0,0.7",
        "sampling.seed=0,1", f"hydra.sweep.dir={tmp_path / 's'}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "warning: sweep jobs 0, 2 differ only in sampling.temperature" in result.stderr
    assert "warning: sweep jobs 1, 3 differ only in sampling.temperature" in result.stderr
    assert result.stderr.count(SAME_RUN) == 2


def test_a_temperature_sweep_over_a_model_that_reads_it_is_not_warned_about(
    tmp_path: Path,
) -> None:
    result = run_cli(
        "-m", "model=gpt41mini", *DRY, "dry_run=true", "sampling.temperature=0,0.7",
        f"hydra.sweep.dir={tmp_path / 's'}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert SAME_RUN not in result.stdout + result.stderr
