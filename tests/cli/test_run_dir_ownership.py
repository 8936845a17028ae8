"""A run directory belongs to its run: a new run into it is refused before anything is written,
a refused start or resume changes no file, and `resume=` continues with the run's own config.

End to end: `python -m healthbench_exp` in a subprocess, on the bundled sample and the built-in
endpoint; every file of the run is hashed (bytes and modification time) before and after.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.test_resume import file_hashes
from tests.e2e.test_e2e import run_cli

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")
UNSET = "HBX_TEST_KEY_NEVER_SET"


@pytest.fixture(scope="module")
def completed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("owned") / "run"
    result = run_cli(*DEMO, f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr
    return run_dir


@pytest.mark.parametrize(
    "start",
    [
        ("sampling.temperature=0.9",),  # would have replaced T=0.5's results, exit 0
        ("protocol.strict=true",),  # refused by the protocol check: rewrote status, report, log
        ("model=gpt41mini", f"model.api_key_env={UNSET}"),  # refused for a missing key
    ],
    ids=["other-temperature", "strict", "unset-key"],
)
def test_a_new_run_into_a_finished_run_is_refused_and_changes_nothing(
    completed_run: Path, start: tuple[str, ...]
) -> None:
    before = file_hashes(completed_run)
    result = run_cli(*DEMO, *start, f"hydra.run.dir={completed_run}")
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert f"{completed_run} holds a run (model offline-model, judge offline-judge, set " in line
    assert "status completed" in line and "hydra.run.dir=<new dir>" in line
    assert "resume=" not in line  # a completed run has nothing to finish
    assert file_hashes(completed_run) == before  # .hydra/, log, status, report: all as they were
    # the run's own resume is still what it was: complete, nothing written
    resumed = run_cli(f"resume={completed_run}")
    assert resumed.returncode == 0, resumed.stderr
    assert "already complete (overall_score 0.2879)" in resumed.stdout
    assert file_hashes(completed_run) == before


def test_an_unfinished_run_is_finished_only_by_its_resume_with_its_own_config(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    stopped = run_cli(
        *DEMO, "cache.enabled=false", "budget.max_usd=0.05", f"hydra.run.dir={run_dir}"
    )
    assert stopped.returncode == 4, stopped.stderr
    before = file_hashes(run_dir)

    # another model into the same directory: refused, naming the run and its resume
    other = run_cli(*DEMO, "model=gpt41", f"model.api_key_env={UNSET}", f"hydra.run.dir={run_dir}")
    assert other.returncode == 2, other.stderr
    assert "status partial" in other.stderr
    assert f"finish it with: python -m healthbench_exp resume={run_dir}" in other.stderr
    assert file_hashes(run_dir) == before

    # a resume refused by its start-up checks: status, log and .hydra/ as they were
    strict = run_cli(f"resume={run_dir}", "protocol.strict=true")
    assert strict.returncode == 2, strict.stderr
    assert "protocol.strict=true" in strict.stderr
    assert f"nothing in {run_dir} was changed" in strict.stderr
    assert file_hashes(run_dir) == before

    # the resume continues with the run's own config (not the refused starts'): the demo's score
    resumed = run_cli(f"resume={run_dir}", "budget.max_usd=null")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["config"]["model"]["name"] == "offline-model"
    assert summary["config"]["protocol"]["strict"] is False
    assert summary["metrics"]["overall_score"] == pytest.approx(0.2879, abs=5e-5)
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
    overrides = (run_dir / ".hydra" / "overrides.yaml").read_text()
    assert "budget.max_usd=null" in overrides and "strict" not in overrides


def test_a_directory_with_only_a_refused_starts_log_is_free(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    refused = run_cli(*DEMO, "protocol.strict=true", f"hydra.run.dir={run_dir}")
    assert refused.returncode == 2, refused.stderr
    assert [p.name for p in run_dir.iterdir()] == ["healthbench.log"]
    result = run_cli(*DEMO, "sampling.num_examples=2", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr


def test_a_sweep_into_a_sweep_directory_holding_runs_is_refused(
    completed_run: Path, tmp_path: Path
) -> None:
    """A sweep writes its jobs into `<sweep dir>/<job num>`: started again into a sweep directory
    whose job 0 holds a finished run, it is refused before its first job, changing nothing."""
    sweep_dir = tmp_path / "sweep"
    shutil.copytree(completed_run, sweep_dir / "0")
    before = file_hashes(sweep_dir)
    result = run_cli("-m", *DEMO, "sampling.temperature=0.5,0.9", f"hydra.sweep.dir={sweep_dir}")
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert f"{sweep_dir} holds a sweep's runs (0: model offline-model, judge offline-judge" in line
    assert "hydra.sweep.dir=<new dir>" in line
    assert file_hashes(sweep_dir) == before
    assert sorted(p.name for p in sweep_dir.iterdir()) == ["0"]
