"""`python -m healthbench_exp` in a subprocess, exactly as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from healthbench_exp.config.schema import DatasetConfig, DataSource
from healthbench_exp.data.healthbench import load_examples
from tests import zygote
from tests.conftest import DemoRun

REPO = Path(__file__).resolve().parents[2]


def over_this_environment(env: dict[str, str] | None) -> dict[str, str]:
    """This process's environment with `env` laid over it: what `run_cli`, `run_module` and
    `run_python_m` run with. A whole environment (one with PATH: say, this one without
    OPENAI_API_KEY) is refused: laid over this one, the variables it left out would come back
    from the developer's shell; give it whole to `zygote.run` instead, or `monkeypatch.delenv`."""
    if env is not None and "PATH" in env:
        raise ValueError(
            "env is laid over this process's environment, so what a whole environment leaves "
            "out comes back: pass it to tests.zygote.run (whole), or delenv the variable"
        )
    return {**os.environ, **(env or {})}


def run_module(
    module: str,
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path = REPO,
    timeout: float = 300,
) -> subprocess.CompletedProcess:
    """`python -m <module> <args>` as a user runs it, in `cwd`, with `env` over this one's:
    forked from the zygote (tests/zygote.py), which has imported the package already."""
    return zygote.run(*args, env=over_this_environment(env), cwd=cwd, timeout=timeout,
                      module=module)  # fmt: skip


def run_python_m(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess:
    """`python -m healthbench_exp <args>`, a fresh interpreter: this module's own tests."""
    return subprocess.run(
        [sys.executable, "-m", "healthbench_exp", *args],
        capture_output=True, text=True, timeout=300, cwd=cwd,
        env=over_this_environment(env),
    )  # fmt: skip


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO, timeout: float = 300
) -> subprocess.CompletedProcess:
    """`python -m healthbench_exp <args>` in its own process, forked from one that has imported
    the package already (tests/zygote.py): the other modules' tests, without 3 s of imports each.
    `env` is laid over this process's environment (`over_this_environment`); a run still going
    after `timeout` seconds is killed and raises `subprocess.TimeoutExpired`."""
    return zygote.run(*args, env=over_this_environment(env), cwd=cwd, timeout=timeout)


def test_demo_runs_offline_and_writes_every_output(demo_run: DemoRun) -> None:
    result, run_dir = demo_run, demo_run.directory
    assert result.returncode == 0, result.stderr
    assert "overall_score" in result.stdout and "by theme:" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert set(summary) >= {"metrics", "config", "counts"}
    sample = load_examples(DatasetConfig(source=DataSource.bundled))
    n_criteria = sum(len(e.rubrics) for e in sample)
    assert summary["counts"]["criteria"] == n_criteria
    assert summary["metrics"]["overall_score:n_samples"] == len(sample)
    assert round(summary["metrics"]["overall_score"], 4) == 0.2879  # the README's figure
    assert summary["config"]["model"]["builtin"] is True
    per_criterion = (run_dir / "per_criterion.jsonl").read_text().splitlines()
    assert len(per_criterion) == n_criteria
    assert len((run_dir / "examples.jsonl").read_text().splitlines()) == len(sample)
    results = datasets.load_from_disk(str(run_dir / "results"))
    assert len(results) == len(sample)
    assert sum(len(r["performance_by_rubric"]) for r in results) == n_criteria
    log = (run_dir / "healthbench.log").read_text()
    assert "24 examples x 1 rollouts" in log
    assert "HTTP Request" not in log  # openai/httpx request logs stay at WARNING
    # W&B wrote an offline run under the output directory
    runs = list((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(runs) == 1


def test_api_key_never_lands_on_disk(tmp_path) -> None:
    from healthbench_exp.builtin_endpoint.server import ServerProcess

    secret = "sk-test-4f9c2e-never-write-me"
    with ServerProcess([]) as server:
        result = run_python_m(
            "experiment=demo",
            "model=openai_compatible",
            "model.name=my-model",
            f"model.base_url={server.base_url}",
            "model.api_key_env=HB_E2E_SECRET",
            "judge=openai_compatible",
            "judge.name=my-judge",
            f"judge.base_url={server.base_url}",
            "judge.api_key_env=HB_E2E_SECRET",
            "sampling.num_examples=4",
            f"hydra.run.dir={tmp_path}",
            env={"HB_E2E_SECRET": secret},
        )
    assert result.returncode == 0, result.stderr
    assert secret not in result.stdout + result.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file()]  # the response cache lives here too
    assert any(p.name == "config.yaml" for p in files) and any(p.suffix == ".wandb" for p in files)
    assert any(p.name == "responses.sqlite" for p in files)
    for path in files:
        assert secret.encode() not in path.read_bytes(), path
    assert "HB_E2E_SECRET" in (tmp_path / ".hydra" / "config.yaml").read_text()


def test_bad_input_gets_one_clear_line(tmp_path) -> None:
    typo = run_cli("experiment=demo", "sampling.temprature=0.7")
    assert typo.returncode == 2 and "Did you mean 'temperature'?" in typo.stderr
    bad = tmp_path / "bad.jsonl"
    row = {"prompt_id": "x1", "prompt": [{"role": "user", "content": "hi"}], "rubrics": []}
    bad.write_text(json.dumps({**row, "example_tags": ["theme:hedging"]}) + "\n")
    data = run_cli("experiment=demo", f"dataset.path={bad}", f"hydra.run.dir={tmp_path / 'out'}")
    assert data.returncode == 2
    assert "bad.jsonl line 1 (prompt_id x1): 'rubrics' is missing or empty" in data.stderr
    key = run_cli(
        "difficulty=sample",
        "wandb=disabled",
        f"hydra.run.dir={tmp_path / 'out2'}",
        env={"OPENAI_API_KEY": ""},
    )
    assert key.returncode == 2 and "set the environment variable OPENAI_API_KEY" in key.stderr
    assert "Traceback" not in typo.stderr + data.stderr + key.stderr


def test_multirun_runs_every_job(tmp_path) -> None:
    result = run_python_m(
        "-m",
        "experiment=demo",
        "wandb=disabled",
        "sampling.temperature=0,0.7",
        "sampling.num_examples=6",
        f"hydra.sweep.dir={tmp_path}",
    )
    assert result.returncode == 0, result.stderr
    summaries = [json.loads((tmp_path / str(job) / "summary.json").read_text()) for job in (0, 1)]
    assert [s["config"]["sampling"]["temperature"] for s in summaries] == [0.0, 0.7]
    assert all(s["counts"]["rows_scored"] == 6 for s in summaries)
    # different temperatures give different offline replies, hence different verdicts
    per_job = [(tmp_path / str(job) / "examples.jsonl").read_text() for job in (0, 1)]
    assert per_job[0] != per_job[1]
    assert (tmp_path / "0" / "healthbench.log").exists()


def test_physician_and_meta_eval_modes_from_the_command_line(tmp_path) -> None:
    result = run_cli(
        "experiment=demo", "completions=physician", "completions.group=3", "wandb=disabled",
        f"hydra.run.dir={tmp_path / 'physician'}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "physician" / "summary.json").read_text())
    assert summary["completions"]["source"] == "physician" and summary["counts"]["rows"] == 2
    assert summary["counts"]["model_requests"] == 0
    assert "physician completions, Group 3" in (tmp_path / "physician" / "report.html").read_text()

    result = run_cli("experiment=demo", "completions=physician", f"hydra.run.dir={tmp_path / 'x'}")
    assert result.returncode == 2
    assert "error: completions=physician needs completions.group=1 or 2 or 3" in result.stderr

    result = run_cli(
        "experiment=demo", "task=meta_eval", "wandb=disabled", f"hydra.run.dir={tmp_path / 'm'}"
    )
    assert result.returncode == 0, result.stderr
    assert "pairwise_model_f1_balanced" in result.stdout and "by category:" in result.stdout
    assert json.loads((tmp_path / "m" / "status.json").read_text())["status"] == "completed"


def test_an_environment_without_a_variable_is_refused_where_it_would_be_laid_over_this_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`run_cli(env=<this environment without OPENAI_API_KEY>)` ran with the developer's key:
    the overlay brought it back. Such a whole environment is refused, before any process."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-developers-shell")
    without_key = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    for run in (run_cli, run_python_m):
        with pytest.raises(ValueError, match="laid over this process's environment"):
            run("--help", env=without_key)
    laid_over = over_this_environment({"HB_ONLY_THIS": "1"})  # an overlay, as meant
    assert laid_over["OPENAI_API_KEY"] == "sk-from-the-developers-shell"
    assert laid_over["HB_ONLY_THIS"] == "1"
