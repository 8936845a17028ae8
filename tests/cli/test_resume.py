"""`resume=<run dir>` never changes what a run measured, and leaves a completed run untouched.

End to end: `python -m healthbench_exp` in a subprocess, on the bundled sample and the built-in
endpoint.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from healthbench_exp.config.measured import HOW_IT_RUNS, how_it_runs
from healthbench_exp.config.schema import unknown_option
from tests.e2e.test_e2e import REPO, run_cli


def file_hashes(run_dir: Path) -> dict[str, str]:
    """Every file under `run_dir` with the sha256 of its bytes and its modification time."""
    return {
        str(p.relative_to(run_dir)): f"{hashlib.sha256(p.read_bytes()).hexdigest()} "
        f"{p.stat().st_mtime_ns}"
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def completed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("resume") / "run"
    result = run_cli(
        "experiment=demo", "wandb=disabled", "runner.progress=false", f"hydra.run.dir={run_dir}"
    )
    assert result.returncode == 0, result.stderr
    return run_dir


def test_a_change_to_what_is_measured_is_refused_before_anything_is_written(
    completed_run: Path,
) -> None:
    before = file_hashes(completed_run)
    result = run_cli(
        f"resume={completed_run}", "sampling.temperature=0.9", "model=gpt41", "budget.max_usd=5"
    )
    assert result.returncode == 2
    message = result.stderr
    assert "would change what that run measured" in message
    assert "sampling.temperature: 0.5 -> 0.9" in message
    assert "model.name: offline-model -> gpt-4.1-2025-04-14" in message
    assert "budget" not in message.split("would change")[1].split(". A resume")[0]
    assert "start a new run in a new directory" in message
    assert "hydra.run.dir=<new dir>" in message and "sampling.temperature=0.9" in message
    assert file_hashes(completed_run) == before  # status, logs, results: all as they were
    assert json.loads((completed_run / "status.json").read_text())["status"] == "completed"


def test_resuming_a_completed_run_sends_and_writes_nothing(loopback_server, tmp_path) -> None:
    server = loopback_server()
    run_dir = tmp_path / "run"
    endpoints = (
        "model=openai_compatible", "model.name=offline-model", f"model.base_url={server.base_url}",
        "judge=openai_compatible", "judge.name=judge-a", f"judge.base_url={server.base_url}",
    )  # fmt: skip
    result = run_cli(
        "experiment=demo", "wandb=disabled", "runner.progress=false", "sampling.num_examples=3",
        *endpoints, f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert server.stats()["model_requests"] == 3 and server.stats()["judge_requests"] > 0
    server.reset()
    before = file_hashes(run_dir)
    # how it runs may change (here: no response cache to answer from); it still has nothing to do
    result = run_cli(
        f"resume={run_dir}", "runner.max_concurrent=3", "wandb=offline", "cache.enabled=false"
    )
    assert result.returncode == 0, result.stderr
    assert f"{run_dir} is already complete" in result.stdout
    assert str(run_dir / "summary.json") in result.stdout
    assert server.stats()["requests"] == 0  # the server was sent nothing
    assert file_hashes(run_dir) == before


def test_resume_is_documented_in_help_and_readme() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    assert "resume=<run dir>" in result.stdout
    # the run directory's owner and the exit codes, as docs/outputs.md gives them
    assert "belongs to that run: a new run into it is" in result.stdout
    assert "Exit codes: 0 completed, 2 a configuration error or a refused start" in result.stdout
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "| `resume` |" in readme


def test_how_it_runs_names_real_keys_and_nothing_measured() -> None:
    for entry in HOW_IT_RUNS:
        assert unknown_option(entry.rstrip(".")) is None, entry
    for key in (
        "sampling.temperature",
        "model.name",
        "model.system_message",
        "judge.temperature",
        "judge.prompt_order",
        "dataset.source",
        "completions.path",
        "task.kind",
        "scoring.length_penalty_per_500_chars",
        "runner.bootstrap_samples",
        "offline_server.malformed_rate",
    ):
        assert not how_it_runs(key), key
    assert how_it_runs("budget.max_usd") and how_it_runs("runner.max_concurrent")


def test_a_mistyped_key_beside_resume_names_the_valid_ones(completed_run: Path) -> None:
    before = file_hashes(completed_run)
    result = run_cli(f"resume={completed_run}", "runner.concurrency=3")
    assert result.returncode == 2
    assert "unknown config option 'runner.concurrency'" in result.stderr
    assert "Did you mean 'max_concurrent'?" in result.stderr
    assert file_hashes(completed_run) == before


def test_an_invalid_value_beside_resume_of_a_completed_run_is_refused_as_a_fresh_start_is(
    completed_run: Path, tmp_path: Path
) -> None:
    """A completed run's resume has nothing to run, but the values given beside it are checked
    as a fresh start checks them: one `error:` line, exit 2, nothing in the run changed."""
    before = file_hashes(completed_run)
    fresh = run_cli(
        "experiment=demo", "wandb=disabled", "budget.max_usd=-1", f"hydra.run.dir={tmp_path / 'x'}"
    )
    assert fresh.returncode == 2
    problem = "budget.max_usd must be > 0 or null, got -1.0"
    assert problem in fresh.stderr
    result = run_cli(f"resume={completed_run}", "budget.max_usd=-1")
    assert result.returncode == 2, result.stdout
    assert result.stdout == ""  # not "nothing to resume"
    assert result.stderr.splitlines() == [
        f"error: {problem}; nothing in {completed_run} was changed"
    ]
    assert file_hashes(completed_run) == before


def test_an_invalid_value_and_a_change_to_what_is_measured_are_both_named(
    completed_run: Path,
) -> None:
    before = file_hashes(completed_run)
    result = run_cli(
        f"resume={completed_run}", "runner.max_concurrent=0", "sampling.temperature=0.9"
    )
    assert result.returncode == 2, result.stdout
    lines = result.stderr.splitlines()
    assert lines[0] == f"error: 2 problems, nothing in {completed_run} was changed:"
    assert lines[1] == "  - runner.max_concurrent must be >= 1, got 0"
    assert lines[2].startswith(f"  - resume={completed_run} would change what that run measured")
    assert "sampling.temperature: 0.5 -> 0.9" in lines[2] and len(lines) == 3
    assert file_hashes(completed_run) == before
