"""`resume=<run dir>`: finish a run in its own directory, never change what it measured.

The run's own overrides (`.hydra/overrides.yaml`) are replayed with `hydra.run.dir=<run dir>`,
so the run recomposes its config and the response cache answers every call that finished
before it stopped; other `key=value` arguments replace the run's own value of that key.

Before anything runs (a Hydra job writes `.hydra/` and its log as it starts, so this is done
before the job), the config those arguments compose is compared with the run's saved one
(`.hydra/config.yaml`), key by key:

- a change to what is measured (model, judge, sampling, dataset, completions, task, scoring,
  anything that reaches a prompt or a metric) is refused, naming each key as `old -> new`, with
  the command that measures it in a new run directory instead;
- a change to how the run runs (`measured.HOW_IT_RUNS`: budget, concurrency, timeouts, retries,
  progress, HTTP client, cache, W&B, prices) is allowed;
- a completed run has nothing to resume: nothing is sent or written, and it says where the
  results are; the values given beside `resume=` are still checked as a fresh start checks
  them (`value_problems`): an invalid one is refused (exit 2), as it would be on a run with
  something left to resume, whose job checks them at its start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import DictConfig, ListConfig, OmegaConf

from healthbench_exp.cli.compose import to_config, with_jury
from healthbench_exp.config.checks import validate
from healthbench_exp.config.measured import flat_keys, measured_changes
from healthbench_exp.config.schema import Config, ConfigError
from healthbench_exp.core.resume_budget import budget_to_resume
from healthbench_exp.core.run_end import Status
from healthbench_exp.core.summary import RunSummary


@dataclass(frozen=True)
class ResumePlan:
    """What `resume=<run dir>` does: run Hydra with `arguments`, or nothing (`completed`)."""

    run_dir: Path
    arguments: list[str]  # the run's overrides, the user's replacements, hydra.run.dir
    completed: bool  # status.json says completed: nothing to resume

    def completed_message(self) -> str:
        summary = self.run_dir / "summary.json"
        score = ""
        try:
            metrics = json.loads(summary.read_text(encoding="utf-8")).get("metrics", {})
            if isinstance(metrics.get("overall_score"), float):
                score = f" (overall_score {metrics['overall_score']:.4f})"
        except (OSError, ValueError):
            pass
        return (
            f"{self.run_dir} is already complete{score}: nothing to resume, nothing sent, "
            f"nothing written. Its results: {summary}, {self.run_dir / 'report.html'}, "
            f"{self.run_dir / 'results'}"
        )


def resume_arguments(argv: list[str]) -> list[str]:
    """`resume=<run dir>` becomes that run's own overrides plus `hydra.run.dir=<run dir>`.

    Other `key=value` arguments replace the run's own value of that key (say, a larger
    `budget.max_usd`). Arguments without `resume=` are returned as they are.
    """
    resume = [a for a in argv if a.startswith("resume=")]
    if not resume:
        return argv
    extra = [a for a in argv if not a.startswith("resume=")]
    if len(resume) > 1 or any("=" not in a or a.startswith("-") for a in extra):
        raise ConfigError(
            "resume=<run dir> reruns that run's config; it takes only key=value overrides besides"
        )
    run_dir = _run_dir(resume[0])
    replaced = {_key(a) for a in extra} | {"hydra.run.dir"}
    overrides = [str(o) for o in OmegaConf.load(run_dir / ".hydra" / "overrides.yaml")]
    overrides += _searchpath(run_dir)  # where a jury's presets were found
    return [
        *(o for o in overrides if _key(o) not in replaced),
        *extra,
        f"hydra.run.dir={run_dir}",
    ]


def _searchpath(run_dir: Path) -> list[str]:
    """The run's own `hydra.searchpath=[...]` override (in `.hydra/hydra.yaml`), if it had one."""
    path = run_dir / ".hydra" / "hydra.yaml"
    if not path.is_file():
        return []
    given = OmegaConf.select(OmegaConf.load(path), "hydra.overrides.hydra", default=None) or []
    return [str(o) for o in given if _key(str(o)) == "hydra.searchpath"]


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _run_dir(argument: str) -> Path:
    run_dir = Path(argument.split("=", 1)[1]).expanduser()
    if (
        not (run_dir / ".hydra" / "overrides.yaml").is_file()
        or not (run_dir / ".hydra" / "config.yaml").is_file()
        or not (run_dir / "status.json").is_file()
    ):
        raise ConfigError(
            f"{run_dir} is not a healthbench-exp run directory (no .hydra/overrides.yaml, "
            ".hydra/config.yaml and status.json there)"
        )
    return run_dir


def plan_resume(argv: list[str], config_dir: str) -> ResumePlan | None:
    """The resume `argv` asks for, checked against the run's saved config; None without one.

    Raises ConfigError naming every changed key of what is measured, and, for a completed run
    (whose job never starts to check them), every invalid value given beside `resume=`.
    Writes nothing.
    """
    if not any(a.startswith("resume=") for a in argv):
        return None
    arguments = resume_arguments(argv)
    run_dir = _run_dir(next(a for a in argv if a.startswith("resume=")))
    saved = flat_keys(_plain(OmegaConf.load(run_dir / ".hydra" / "config.yaml")))
    cfg = compose(config_dir, arguments)
    composed = flat_keys(_plain(cfg))
    changes = measured_changes(saved, composed, flat_keys(_plain(OmegaConf.structured(Config))))
    completed = _status(run_dir) == Status.COMPLETED
    given = [a for a in argv if not a.startswith("resume=")]
    problems = value_problems(config_dir, cfg, arguments) if completed and given else []
    if changes:
        fresh = " ".join(a for a in arguments if not a.startswith("hydra.run.dir="))
        problems.append(
            f"resume={run_dir} would change what that run measured: "
            + "; ".join(map(str, changes))
            + ". A resume may change only how a run runs (budget, runner, cache, wandb, prices). "
            f"To measure this, start a new run in a new directory: python -m healthbench_exp "
            f"{fresh} hydra.run.dir=<new dir>"
        )
    if len(problems) == 1 and changes:
        raise ConfigError(problems[0])
    if len(problems) == 1:
        raise ConfigError(f"{problems[0]}; nothing in {run_dir} was changed")
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(f"{len(problems)} problems, nothing in {run_dir} was changed:\n{listed}")
    return ResumePlan(run_dir, arguments, completed=completed)


def value_problems(config_dir: str, cfg: DictConfig, arguments: list[str]) -> list[str]:
    """What a fresh start's option checks (`to_config`, `config.checks.validate`) find wrong in
    the config `arguments` composed (`cfg`): one line each, none when every value is valid."""
    searchpath = [
        part.strip()
        for arg in arguments
        if _key(arg) == "hydra.searchpath"
        for part in arg.split("=", 1)[1].strip("[]").split(",")
        if part.strip()
    ]
    try:
        with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
            config, _ = to_config(with_jury(cfg, searchpath), arguments)
        validate(config)
    except ConfigError as exc:
        return [str(exc)]
    return []


def compose(config_dir: str, arguments: list[str]) -> DictConfig:
    """The job config `arguments` compose (Hydra's own overrides left out)."""
    job_overrides = [a for a in arguments if not _key(a).startswith(("hydra.", "hydra/"))]
    try:
        with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
            return hydra_compose(config_name="config", overrides=job_overrides)
    except Exception as exc:  # Hydra's errors name the bad override
        raise ConfigError(f"resume: {exc}") from None


def _plain(cfg: DictConfig | ListConfig) -> dict[str, object]:
    try:
        data = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    except Exception:  # an interpolation only Hydra's job context resolves
        data = OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items() if k != "hydra"}


def _status(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / "status.json").read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        return None


def finish_command(run_dir: Path, summary: RunSummary, estimate_usd: float | None = None) -> str:
    """What a run stopped by its budget says: how many rows are left and the command that
    finishes them, with the `budget.max_usd` to raise to (never the one that stopped it); a
    job of a sweep stopped by the sweep's cap also says what each job of the sweep spent.
    `estimate_usd`: the run's estimated cost (with no row finished, the budget is at least it)."""
    counts, budget = summary.counts, summary.budget
    assert counts is not None and budget is not None, "a budget stop's"
    left, rows = counts.rows_not_run, counts.rows
    option, stopped_at = budget.binding()
    cap, per_row = budget_to_resume(summary, estimate_usd)
    reached = f"{option}={stopped_at:g} reached"
    if budget.sweep_wide and budget.sweep_jobs_usd is not None:
        jobs = {**budget.sweep_jobs_usd, run_dir.name: budget.spent_usd}
        each = ", ".join(
            f"{name}: ${usd:.4f}{' (this one)' * (name == run_dir.name)}"
            for name, usd in sorted(jobs.items(), key=lambda item: _job_order(item[0]))
        )
        reached = (
            f"budget.max_usd={stopped_at:g} (the sweep's, over all its jobs) reached: the "
            f"sweep's jobs spent ${sum(jobs.values()):.4f} ({each})"
        )
    return (
        f"{reached}: {left} of {rows} rows not run; finish "
        f"with: python -m healthbench_exp resume={run_dir} budget.max_usd={cap:g} "
        f"(budget.max_usd caps each invocation's new spend; {per_row}; "
        "budget.max_usd=null removes the cap; finished calls are not paid again)"
    )


def _job_order(name: str) -> tuple[int, str]:
    """Sweep jobs in their numbers' order (`hydra.job.num`), other names after them."""
    return (int(name), "") if name.isdigit() else (1 << 30, name)
