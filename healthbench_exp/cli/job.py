"""One job from a `Config`: check it, build the task and the sinks, run the engine.

This is what `python -m healthbench_exp` does once Hydra has composed the config (`cli.app`),
and what `healthbench_exp.run` / `healthbench_exp.dry_run` do for a caller with a `Config` in
hand. It sees the whole config and hands each part its sections: the task gets the sections it
reads, the sinks get the run directory (and W&B its plan), the engine's entry the rest.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from healthbench_exp.cli import startup
from healthbench_exp.config.schema import CompletionSource, Config, ConfigError, TaskKind
from healthbench_exp.core.sink import Sink
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.engine import run as engine
from healthbench_exp.engine.estimate import estimate_run
from healthbench_exp.output.run_dir import RunDirectory
from healthbench_exp.output.sinks import local_files
from healthbench_exp.output.wandb import tracker as tracking
from healthbench_exp.output.wandb.mode import Readiness
from healthbench_exp.output.wandb.sink import WandbSink
from healthbench_exp.tasks.base import Task
from healthbench_exp.tasks.eval import EvalTask
from healthbench_exp.tasks.meta_eval import MetaEvalTask

JobContext = tracking.JobContext


def plain_config(config: Config) -> dict[str, object]:
    """`config` as plain data, as the CLI records its resolved config (enums as their values):
    summary.json's `config` and W&B's run config."""

    def plain(value: object) -> object:
        if isinstance(value, enum.Enum):
            return value.value
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value

    return {k: plain(v) for k, v in asdict(config).items()}


def build_task(config: Config, config_dict: dict[str, object]) -> Task[Any, Any]:
    """The task `config.task.kind` names, built from the sections it reads."""
    if config.task.kind is TaskKind.meta_eval:
        return MetaEvalTask(
            config.dataset, config.task, config.sampling, config.judge, config.runner, config_dict,
            jury_members=config.jury_members,
        )  # fmt: skip
    return EvalTask(
        config.dataset,
        config.completions,
        config.sampling,
        config.model,
        config.judge,
        config.runner,
        config.scoring,
        config_dict,
        calibration=config.calibration,
        jury_members=config.jury_members,
        bridge=config.bridge,
    )


def run_label(config: Config) -> str:
    """The run's W&B name unless `wandb.name` sets one: replies, judge, data, temperature."""
    if config.task.kind is TaskKind.meta_eval:
        return f"meta_eval|judge={config.judge.name}|{config.dataset.difficulty}"
    temperature = "default" if config.sampling.temperature is None else config.sampling.temperature
    source = config.completions.source
    if source is CompletionSource.model:
        replies = config.model.name
    elif source is CompletionSource.file:
        replies = f"file:{Path(config.completions.path or '').name}"
    else:
        group = config.completions.group  # None: Professional's physician_response
        replies = source.value if group is None else f"{source.value}:group{group}"
    return f"{replies}|judge={config.judge.name}|{config.dataset.difficulty}|T={temperature}"


def build_sinks(
    config: Config,
    config_dict: dict[str, object],
    output_dir: Path,
    job: tracking.JobContext,
    readiness: Readiness,
) -> list[Sink]:
    """The run's sinks in finishing order: the local files, then W&B (opened with the first
    result, finished after every local output is written; its failures only warn)."""
    tracker = tracking.start(
        config.wandb,
        run_label(config),
        config.task.kind.value,
        config_dict,
        output_dir,
        job,
        readiness,
    )
    return [local_files(config.task.kind, output_dir), WandbSink(tracker, output_dir)]


def run_job(
    config: Config,
    run_dir: RunDirectory,
    config_dict: dict[str, object],
    job: tracking.JobContext | None = None,
    readiness: Readiness | None = None,
) -> RunSummary:
    """Run the configured task, write every output into `run_dir`, return the summary.

    The outputs are the CLI's: the JSONL files, `summary.json`, `invocations.jsonl`, the
    `results/` dataset, `report.html` and the W&B run (`config.wandb`); the CLI's own job
    bookkeeping (`status.json`, the run lock, exit codes) is not done here. `config_dict` is
    the resolved config as plain data, written as the summary's `config` and W&B's; `job`
    carries what Hydra knows (overrides, sweep directory). Every start-up problem is reported
    at once (ConfigError) before any data load or request; raises ConfigError / DataError /
    FatalEndpointError before or instead of a partial result. `readiness`: what
    `startup.check(config)` returned, when the caller already checked.
    """
    if readiness is None:
        readiness = startup.check(config)  # every problem found without a network, at once
    job = job or tracking.JobContext()
    if job.sweep_dir is not None:  # budget.max_usd is the sweep's, over all its jobs' spend
        config = replace(config, budget=replace(config.budget, sweep_dir=str(job.sweep_dir)))
    task = build_task(config, config_dict)
    sinks = build_sinks(config, config_dict, run_dir.directory, job, readiness)
    return engine.run(task, engine.RunSettings(config, run_dir, config_dict), sinks)


def run(
    config: Config,
    output_dir: Path | str,
    config_dict: dict[str, object] | None = None,
    job: tracking.JobContext | None = None,
) -> dict[str, object]:
    """`run_job` for a caller with a `Config`: the same outputs; returns the summary as
    summary.json holds it (`RunSummary.from_dict` reads it typed). `config_dict` defaults to
    `plain_config(config)`. A config with `dry_run` set is refused: call `dry_run`."""
    if config.dry_run.requested:
        raise ConfigError("dry_run is set: call healthbench_exp.dry_run for the estimate")
    config_dict = plain_config(config) if config_dict is None else config_dict
    return run_job(config, RunDirectory(Path(output_dir)), config_dict, job).to_dict()


def dry_run(
    config: Config,
    output_dir: Path | str,
    config_dict: dict[str, object] | None = None,
) -> dict[str, object]:
    """Estimate the run's calls, tokens and cost into `output_dir/estimate.json`; send nothing
    (unless a role's `rate_limit.probe` asks for one request, or `dry_run.pilot=N` for the
    first N rows: then the keys are checked first); return the estimate."""
    config_dict = plain_config(config) if config_dict is None else config_dict
    startup.check(config, dry_run=True)  # a pilot's keys are read when it starts
    return estimate_job(config, RunDirectory(Path(output_dir)), config_dict)


def estimated_cost_usd(config: Config, config_dict: dict[str, object]) -> float | None:
    """The run's estimated cost as the dry run gives it from the config alone (no pilot, no
    probe: nothing is sent); None without a price."""
    task = build_task(config, config_dict)
    estimate = estimate_run(task, engine.roles_of(config), config.judge, config.cache)
    total = estimate.get("total_cost_usd")
    return float(total) if isinstance(total, int | float) else None


def estimate_job(
    config: Config, run_dir: RunDirectory, config_dict: dict[str, object]
) -> dict[str, object]:
    """`dry_run` for a caller that checked the config: the estimate, also written to
    `run_dir`'s `estimate.json` with the config beside it."""
    estimate = engine.estimate(build_task(config, config_dict), engine.RunSettings(config, run_dir))
    run_dir.write_estimate({**estimate, "config": config_dict})
    return estimate
