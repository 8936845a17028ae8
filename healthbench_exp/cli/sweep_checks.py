"""A sweep checks every job's models before the first job starts (`model.retired`).

Hydra calls `on_multirun_start` once, before any job: each job's overrides are expanded as the
basic sweeper expands them, each job's config composed, and the shutdown dates of the endpoints
it talks to checked (each server asked, as the job would; a dry-run job asks none). A retired
model stops the sweep there, naming the job: one line, exit status 2, nothing sent. Where a job
cannot be composed here (another sweeper, a config error) it is left to check itself.

Jobs whose model is a reasoning model (`model.reasoning: true`: no temperature and no
max_tokens is sent) and whose configs differ only in `sampling.temperature` or
`sampling.max_tokens` would send the same requests: one warning line per such set of jobs,
before the first starts (the sweep still runs).
"""

from __future__ import annotations

import sys
from dataclasses import replace

from hydra import compose
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from healthbench_exp.cli.compose import to_config, translate_dry_run
from healthbench_exp.cli.startup import check_models
from healthbench_exp.config.schema import Config
from healthbench_exp.model.retired import ModelRetired


def job_overrides(overrides: list[str]) -> list[list[str]]:
    """Each job's overrides, as the basic sweeper expands `a=x,y b=z` (ValueError-like errors
    from Hydra's parser when the sweep uses another syntax)."""
    parsed = OverridesParser.create().parse_overrides(translate_dry_run(overrides))
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


class RetiredModelsCallback(Callback):
    """Before a sweep's first job: warns of jobs that a reasoning model makes identical, and
    refuses the sweep when any job's model or judge is retired."""

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        try:
            jobs = job_overrides(list(config.hydra.overrides.task))
        except Exception:  # not feasible here: each job checks itself when it starts
            return
        composed: list[tuple[int, list[str], Config]] = []
        for number, overrides in enumerate(jobs):
            try:
                job_config, _ = to_config(compose(config_name="config", overrides=overrides))
            except Exception:  # the job reports its own config error when it runs
                continue
            composed.append((number, overrides, job_config))
        for line in identical_reasoning_jobs([(n, c) for n, _, c in composed]):
            print(f"warning: {line}", file=sys.stderr)
        for number, overrides, job_config in composed:
            try:
                check_models(job_config, job_config.dry_run.requested, warn=False)
            except ModelRetired as exc:
                print(
                    f"error: sweep job {number} ({' '.join(overrides)}): {exc}; no job was started",
                    file=sys.stderr,
                )
                raise SystemExit(2) from None


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
