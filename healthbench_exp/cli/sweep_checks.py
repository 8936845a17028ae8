"""A sweep checks every job before the first job starts: nothing is paid for a sweep that
cannot finish.

Hydra calls `on_multirun_start` once, before any job (in the process that launches them, with
any launcher): each job's overrides are expanded as the basic sweeper expands them (with
Hydra's parser: `a=x,y`, `range(...)`, `choice(...)`, `glob(...)`, and `hydra.sweeper.params`),
each job's config composed as the launcher composes it, and the single run's start-up checks
run on it without a network (`startup.problems_found_offline`: values, files, keys, W&B login,
a strict protocol, retired presets), then its data read as the run reads it before its first
request (`data_problem`: a broken JSON line or a row without `rubrics`, named by line and id;
each distinct data set once). Every problem of every job is named at once, each with
its job's number and overrides: exit status 2, no job started, no request sent. When every job
passes, the shutdown dates of the endpoints each job talks to are asked of their servers (a
dry-run job asks none), as the job would; a retired model refuses the sweep the same way. W&B's
server is asked by each job as it starts. Where the jobs cannot be expanded here (another
sweeper's syntax) each job checks itself when it starts.

Jobs whose model is a reasoning model (`model.reasoning: true`: no temperature and no
max_tokens is sent) and whose configs differ only in `sampling.temperature` or
`sampling.max_tokens` would send the same requests: one warning line per such set of jobs,
before the first starts (the sweep still runs).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict

from healthbench_exp.cli.compose import to_config, translate_dry_run, with_jury
from healthbench_exp.cli.hydra_errors import composition_error
from healthbench_exp.cli.job import build_task
from healthbench_exp.cli.startup import check_models, problems_found_offline, retired_presets
from healthbench_exp.config.schema import Config, ConfigError
from healthbench_exp.core.run_end import Exit
from healthbench_exp.data.rows import DataError
from healthbench_exp.model.retired import ModelRetired

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def job_overrides(
    overrides: list[str], params: Mapping[str, str] | None = None, expand_globs: bool = False
) -> list[list[str]]:
    """Each job's overrides, as the basic sweeper expands `hydra.sweeper.params` (`params`)
    followed by `a=x,y b=z` (Hydra's errors when the sweep uses another syntax); `glob(...)`
    of a group is expanded with the running Hydra's config loader (`expand_globs`)."""
    arguments = [f"{key}={value}" for key, value in (params or {}).items()]
    loader = GlobalHydra.instance().config_loader() if expand_globs else None
    parser = OverridesParser.create(config_loader=loader)
    parsed = parser.parse_overrides(translate_dry_run([*arguments, *overrides]))
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


@dataclass(frozen=True)
class SweepJob:
    """One job of a sweep, before it starts: its number, overrides and composed config."""

    number: int
    overrides: list[str]
    config: Config


@dataclass(frozen=True)
class JobProblem:
    """What would refuse a sweep's job at its start: the job's number and overrides, one line."""

    number: int
    overrides: list[str]
    problem: str


def compose_job(sweep: DictConfig, overrides: list[str]) -> Config:
    """The typed config of the sweep job that `overrides` makes, composed as the launcher
    composes it (the command line's `hydra.*` overrides included, a jury's presets from the
    sweep's search path); Hydra's and the schema's errors are raised as they are."""
    loader = GlobalHydra.instance().config_loader()
    composed = loader.load_sweep_config(sweep, list(overrides))
    searchpath = [str(entry) for entry in composed.hydra.get("searchpath") or []]
    with open_dict(composed):
        del composed["hydra"]
    config, _ = to_config(with_jury(composed, searchpath), overrides)
    return config


def job_problems(
    job: SweepJob, data_checked: dict[str, str | None] | None = None
) -> list[JobProblem]:
    """What would refuse `job` at its start, found without a network, then (when nothing
    else does) its data as the run reads it before its first request (`data_problem`; each
    distinct data set read once, its verdict kept in `data_checked`)."""
    dry_run = job.config.dry_run.requested
    found = problems_found_offline(job.config, dry_run) + retired_presets(job.config)
    if not found:
        checked = {} if data_checked is None else data_checked
        key = data_key(job.config)
        if key not in checked:
            checked[key] = data_problem(job.config)
        found += [problem] if (problem := checked[key]) is not None else []
    return [JobProblem(job.number, job.overrides, problem) for problem in found]


def data_key(config: Config) -> str:
    """What decides a job's rows: its data, replies, task, sampling and system message."""
    parts = (config.dataset, config.completions, config.task, config.sampling)
    return repr((*parts, config.model.system_message))


def data_problem(config: Config) -> str | None:
    """Why the run of `config` would refuse its data before its first request, as the run
    says it (a broken JSON line, a row without `rubrics`, a replies file that does not match:
    the line and the id named); None when its rows load. The task's own `items`, as the run
    calls it."""
    try:
        build_task(config, {}).items()
    except (DataError, ConfigError) as exc:
        return str(exc)
    return None


def refusal(problems: Sequence[JobProblem], jobs: int) -> str:
    """The error that refuses a sweep: each problem once, with the numbers of the jobs it
    refuses ("every job" when all), then the overrides of each job named by number."""
    numbers: dict[str, list[int]] = {}
    overrides: dict[int, list[str]] = {}
    for found in problems:
        numbers.setdefault(found.problem, []).append(found.number)
        overrides[found.number] = found.overrides
    if len(numbers) == 1 and len(overrides) == 1:
        (number, job), (problem,) = next(iter(overrides.items())), numbers
        return f"sweep job {number} ({' '.join(job)}): {problem}; no job was started"

    def which(refused: list[int]) -> str:
        if len(refused) == jobs and jobs > 1:
            return "every job"
        return f"job{'s' * (len(refused) > 1)} {', '.join(str(n) for n in refused)}"

    listed = [f"  - {which(refused)}: {problem}" for problem, refused in numbers.items()]
    some = {n for refused in numbers.values() if which(refused) != "every job" for n in refused}
    named = [f"  job {n}: {' '.join(job)}" for n, job in sorted(overrides.items()) if n in some]
    return "\n".join(
        [
            f"{len(numbers)} problem{'s' * (len(numbers) > 1)} in {len(overrides)} of the "
            f"sweep's {jobs} jobs; no job was started, nothing was sent:",
            *listed,
            *(["the jobs' overrides:", *named] if named else []),
        ]
    )


def refuse(problems: Sequence[JobProblem], jobs: int) -> None:
    """Print the error that refuses the sweep (`refusal`) and exit 2."""
    print(f"error: {refusal(problems, jobs)}", file=sys.stderr)
    raise SystemExit(Exit.REFUSED)


class SweepChecksCallback(Callback):
    """Before a sweep's first job: warns of jobs that a reasoning model makes identical, and
    refuses the sweep (every problem of every job named, exit 2) when any job would refuse to
    start."""

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        sweeper = config.hydra.get("sweeper") or {}
        if sweeper.get("_target_", BASIC_SWEEPER) != BASIC_SWEEPER:
            return  # another sweeper's jobs: each checks itself when it starts
        declared = sweeper.get("params")
        params = OmegaConf.to_container(declared, resolve=False) if declared else {}
        assert isinstance(params, dict)
        try:
            task = [str(arg) for arg in config.hydra.overrides.task]
            jobs = job_overrides(task, {str(k): str(v) for k, v in params.items()}, True)
        except Exception:  # not feasible here: each job checks itself when it starts
            return
        composed: list[SweepJob] = []
        problems: list[JobProblem] = []
        data_checked: dict[str, str | None] = {}  # each distinct data set read once
        for number, overrides in enumerate(jobs):
            try:
                job = SweepJob(number, overrides, compose_job(config, overrides))
            except ConfigError as exc:
                problems.append(JobProblem(number, overrides, str(exc)))
                continue
            except Exception as exc:  # Hydra's composition error, in one line
                worded = composition_error(exc, overrides)
                if worded is not None:
                    problems.append(JobProblem(number, overrides, str(worded)))
                continue  # anything else: the job reports its own error when it runs
            composed.append(job)
            problems += job_problems(job, data_checked)
        for line in identical_reasoning_jobs([(job.number, job.config) for job in composed]):
            print(f"warning: {line}", file=sys.stderr)
        if problems:
            refuse(problems, len(jobs))
        for job in composed:  # every job passed: the servers are asked for shutdown dates
            try:
                check_models(job.config, job.config.dry_run.requested, warn=False)
            except ModelRetired as exc:
                problems.append(JobProblem(job.number, job.overrides, str(exc)))
        if problems:
            refuse(problems, len(jobs))


def identical_reasoning_jobs(jobs: list[tuple[int, Config]]) -> list[str]:
    """One line per set of sweep jobs (numbered) that differ only in the sampling keys a
    reasoning model ignores (`sampling.temperature`, `sampling.max_tokens`): the same run."""
    groups: list[tuple[Config, list[tuple[int, Config]]]] = []
    for number, config in jobs:
        if not config.model.reasoning:
            continue
        unsent = replace(
            config, sampling=replace(config.sampling, temperature=None, max_tokens=None)
        )
        for key, members in groups:
            if key == unsent:
                members.append((number, config))
                break
        else:
            groups.append((unsent, [(number, config)]))
    lines = []
    for _, members in groups:
        if len(members) < 2:
            continue
        varied = [
            f"sampling.{name}"
            for name in ("temperature", "max_tokens")
            if len({getattr(c.sampling, name) for _, c in members}) > 1
        ]
        numbers = ", ".join(str(number) for number, _ in members)
        model = members[0][1].model.name
        lines.append(
            f"sweep jobs {numbers} differ only in {' and '.join(varied)}, which {model} ignores "
            "(model.reasoning: true sends no temperature and no max_tokens): they are the same "
            "run; vary model.reasoning_effort instead"
        )
    return lines
