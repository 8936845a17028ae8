"""A sweep checks every job's models before the first job starts (`model.retired`).

Hydra calls `on_multirun_start` once, before any job: each job's overrides are expanded as the
basic sweeper expands them, each job's config composed, and the shutdown dates of the endpoints
it talks to checked (each server asked, as the job would; a dry-run job asks none). A retired
model stops the sweep there, naming the job: one line, exit status 2, nothing sent. Where a job
cannot be composed here (another sweeper, a config error) it is left to check itself.
"""

from __future__ import annotations

import sys

from hydra import compose
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from healthbench_exp.cli.compose import to_config, translate_dry_run
from healthbench_exp.cli.startup import check_models
from healthbench_exp.model.retired import ModelRetired


def job_overrides(overrides: list[str]) -> list[list[str]]:
    """Each job's overrides, as the basic sweeper expands `a=x,y b=z` (ValueError-like errors
    from Hydra's parser when the sweep uses another syntax)."""
    parsed = OverridesParser.create().parse_overrides(translate_dry_run(overrides))
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


class RetiredModelsCallback(Callback):
    """Refuses a sweep, before its first job, when any job's model or judge is retired."""

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        try:
            jobs = job_overrides(list(config.hydra.overrides.task))
        except Exception:  # not feasible here: each job checks itself when it starts
            return
        for number, overrides in enumerate(jobs):
            try:
                job_config, _ = to_config(compose(config_name="config", overrides=overrides))
            except Exception:  # the job reports its own config error when it runs
                continue
            try:
                check_models(job_config, job_config.dry_run.requested, warn=False)
            except ModelRetired as exc:
                print(
                    f"error: sweep job {number} ({' '.join(overrides)}): {exc}; no job was started",
                    file=sys.stderr,
                )
                raise SystemExit(2) from None
