"""A sweep's jobs as Hydra planned them, and the command that finishes each unfinished one.

Hydra's multirun writes `multirun.yaml` into the sweep directory before its first job: the
sweep's overrides (`hydra.overrides.task`, e.g. `sampling.temperature=0,0.5`) and the sweeper's
`params`. `planned_jobs` expands them as Hydra's basic sweeper does (the cartesian product, in
its order: job `i` is the i-th), so a sweep that was stopped (Ctrl-C, a closed terminal, a
launcher's crash) still knows the jobs that never started, and `planned_config` their configs
(a swept config group's composed as the launcher would have). Nothing here writes.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.config_search_path_impl import ConfigSearchPathImpl
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.plugins import Plugins
from omegaconf import DictConfig, ListConfig, OmegaConf

from healthbench_exp.config.schema import Config
from healthbench_exp.core.resume_budget import budget_to_resume
from healthbench_exp.core.run_end import Status
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.core.usage_record import Spend

MULTIRUN_FILE = "multirun.yaml"
JOB_NUMBER_SUBDIR = "${hydra.job.num}"  # Hydra's default `hydra.sweep.subdir`, and ours
FINISHED = frozenset({Status.COMPLETED, Status.DRY_RUN})
NOT_STARTED = "not_started"  # a planned job with no directory: it never began


def planned_jobs(sweep_dir: Path) -> dict[Path, list[str]] | None:
    """Each planned job's directory and overrides, in job order, from the sweep's
    `multirun.yaml`; None when there is none, it cannot be read, or its jobs are not in
    numbered folders (a sweeper other than the basic one, or another `hydra.sweep.subdir`)."""
    try:  # as written, unresolved (`${hydra.job.num}` has no value outside a job)
        hydra = OmegaConf.to_container(OmegaConf.load(sweep_dir / MULTIRUN_FILE).hydra)
    except Exception:  # missing, damaged or another layout: the jobs on disk are all we know
        return None
    if not isinstance(hydra, dict):
        return None
    sweep, sweeper, overrides = (hydra.get(k) or {} for k in ("sweep", "sweeper", "overrides"))
    if sweep.get("subdir") != JOB_NUMBER_SUBDIR:
        return None
    if "basic_sweeper" not in str(sweeper.get("_target_", "")):
        return None
    params = sweeper.get("params") or {}
    given = [
        f"{key}={','.join(str(v) for v in value) if isinstance(value, list) else value}"
        for key, value in params.items()
    ]
    arguments = [str(o) for o in overrides.get("task") or []]
    try:
        parsed = OverridesParser.create().parse_overrides([*given, *arguments])
        batches = BasicSweeper.split_arguments(parsed, None)
    except Exception:  # an override Hydra itself would have refused
        return None
    return {sweep_dir / str(number): job for number, job in enumerate(batches[0])}


def planned_config(sweep_dir: Path, overrides: list[str], swept: set[str]) -> dict[str, object]:
    """The config of a job that never started: the sweep's `multirun.yaml` with the job's values
    of the `swept` keys (`multirun_config`: a millisecond), else, where a swept key picks a
    config group (`model=gpt41mini`), composed from the job's overrides as the launcher would
    have (`composed_config`: about 0.2 s a job); {} when neither knows it (the config folder
    moved)."""
    return multirun_config(sweep_dir, overrides, swept) or composed_config(sweep_dir, overrides)


def composed_config(sweep_dir: Path, overrides: list[str]) -> dict[str, object]:
    """The job's config (unresolved, without `hydra`), composed as Hydra's launcher composes a
    sweep job: the sweep's config sources and `hydra.*` overrides from its `multirun.yaml`, the
    job's `overrides`, the schema (`base_config`) registered as the CLI registers it; {} when
    Hydra refuses (a source that is gone, an override it no longer reads)."""
    try:
        master = OmegaConf.load(sweep_dir / MULTIRUN_FILE)
        assert isinstance(master, DictConfig)
        search_path = ConfigSearchPathImpl()
        for source in master.hydra.runtime.config_sources:
            search_path.append(source.provider, f"{source.schema}://{source.path}")
        Plugins.instance()  # registers Hydra's config source kinds (pkg://, file://, ...)
        ConfigStore.instance().store(name="base_config", node=Config)
        loader = ConfigLoaderImpl(config_search_path=search_path)
        plain = OmegaConf.to_container(
            loader.load_sweep_config(master, list(overrides)), resolve=False
        )
    except Exception:  # Hydra's errors are of many kinds: the config is then not known here
        return {}
    if not isinstance(plain, dict):
        return {}
    return {str(k): v for k, v in plain.items() if k != "hydra"}


def multirun_config(sweep_dir: Path, overrides: list[str], swept: set[str]) -> dict[str, object]:
    """The sweep's config in `multirun.yaml` with the job's values of the `swept` keys; {} when a
    swept key picks a config group or names no value (only the job's composition knows it)."""
    try:
        config = OmegaConf.load(sweep_dir / MULTIRUN_FILE)
        if not isinstance(config, DictConfig):
            return {}
        config.pop("hydra", None)
        for override in overrides:
            key, _, value = override.partition("=")
            if key not in swept:  # the sweep's config has it already
                continue
            node = OmegaConf.select(config, key, default=None, throw_on_missing=False)
            if node is None and OmegaConf.select(config, key, default="absent") == "absent":
                return {}
            if isinstance(node, DictConfig | ListConfig):  # a config group: composed per job
                return {}
            parsed = OmegaConf.create(f"value: {value}")  # as YAML reads it: 1 is a number
            assert isinstance(parsed, DictConfig)
            OmegaConf.update(config, key, parsed["value"])
        plain = OmegaConf.to_container(config, resolve=False)
    except Exception:  # an override or a file OmegaConf cannot read: the config is not known
        return {}
    return {str(k): v for k, v in plain.items()} if isinstance(plain, dict) else {}


def swept_keys(jobs: list[list[str]]) -> set[str]:
    """The keys whose value differs between the planned jobs."""
    values: dict[str, set[str]] = {}
    for job in jobs:
        for override in job:
            key, _, value = override.partition("=")
            values.setdefault(key, set()).add(value)
    return {key for key, seen in values.items() if len(seen) > 1 or len(jobs) == 1}


def finish_command(
    path: Path, status: str, overrides: list[str], summary: RunSummary | None = None
) -> str | None:
    """The command that finishes a job: `resume=` for one that started (for one its budget
    stopped, with the `budget.max_usd` it needs, `core.resume_budget.budget_to_resume`: the one that
    stopped it would stop the resume too), its own overrides into its own directory for one
    that never did; None for a finished one."""
    if status in FINISHED:
        return None
    if status == NOT_STARTED:
        given = " ".join(shlex.quote(o) for o in overrides)
        return f"python -m healthbench_exp {given} hydra.run.dir={shlex.quote(str(path))}"
    resume = f"python -m healthbench_exp resume={shlex.quote(str(path))}"
    if summary is not None and summary.budget_stopped:
        resume = f"{resume} budget.max_usd={budget_to_resume(summary)[0]:g}"
    return resume


def invocations_spend(path: Path) -> Spend:
    """What the run in `path` paid so far (`core.usage_record.Spend`): its invocations that
    measured what its last one did (`invocations.jsonl`; an interrupted one records its own, a
    killed one is recorded by its resume), summed; nothing with none recorded."""
    try:
        text = (path / "invocations.jsonl").read_text(encoding="utf-8")
    except OSError:
        return Spend(cost_usd=0.0, tokens=0, wall_time_s=0.0)
    entries = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a kill
            continue
        if isinstance(entry, dict) and isinstance(entry.get("usage"), dict):
            entries.append(entry)
    same: list[dict[str, object]] = []
    last = entries[-1].get("measured_config_sha256") if entries else None
    for entry in reversed(entries):
        if entry.get("measured_config_sha256") != last:
            break
        same.insert(0, entry)
    return Spend.of_invocations(same)


def unfinished_lines(rows: list[dict[str, object]]) -> list[str]:
    """One line per job that did not finish (a row with a `finish` command): its name, status,
    label (the overrides that set it apart) and the command that finishes it."""
    return [
        f"job {row['job']} ({row['label']}): {str(row['status']).replace('_', ' ')}; "
        f"finish with: {row['finish']}"
        for row in rows
        if row.get("finish")
    ]
