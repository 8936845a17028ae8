"""Start-up checks: every problem found without a network, reported together, before any data
load or request; and a failed start leaves nothing behind but its log.

`check` runs first in every job: the option checks of `config.validate`, the API keys of the
endpoints the run needs (not for a dry run), the files the config names, the reference protocol
(`protocol_problem`: with `protocol.strict=true` every deviation refuses the run), and W&B
readiness (`wandb_mode.check`: a login for online runs, the project name, then the server). All
problems become one ConfigError, one line each. A deviating run that is not strict is announced
in one log line (`announce_protocol`). `discard_unstarted` removes what a fresh run directory got
when the job failed before its first request.
"""

from __future__ import annotations

import logging
import os
import shutil
from datetime import date
from pathlib import Path

from healthbench_exp.cli.run_lock import LOCK_FILE
from healthbench_exp.config.checks import needed_roles, validate
from healthbench_exp.config.protocol import PROFESSIONAL_PROTOCOL, ProtocolCheck, protocol_check
from healthbench_exp.config.schema import CompletionSource, Config, ConfigError, TaskKind
from healthbench_exp.core.folders import uncreatable, unwritable
from healthbench_exp.data.healthbench import hf_datasets_cache
from healthbench_exp.data.rows import data_file_problem
from healthbench_exp.model.access import resolve_api_key
from healthbench_exp.model.cache import cache_dir
from healthbench_exp.model.retired import ModelRetired, check_shutdowns
from healthbench_exp.model.roles import Roles
from healthbench_exp.output.wandb.mode import Readiness, local_problems, resolve_mode
from healthbench_exp.output.wandb.mode import check as wandb_check
from healthbench_exp.tasks.bridge_source import bridge_problem
from healthbench_exp.tasks.calibration_source import calibration_problem

log = logging.getLogger(__name__)

# what a run directory holds once its evaluation began (results, submitted batches): kept
STARTED_MARKERS = ("examples.jsonl", "meta_eval.jsonl", "per_criterion.jsonl", "batches.json")


def path_problems(config: Config) -> list[str]:
    """Files named in the config that do not exist (`completions.path` may also be a run's
    `results` folder, a saved dataset)."""
    problems = []
    dataset_problem = config.dataset.path and data_file_problem("dataset.path", config.dataset.path)
    if dataset_problem:
        problems.append(dataset_problem)
    completions = config.completions
    if (
        config.task.kind is TaskKind.eval
        and completions.source is CompletionSource.file
        and completions.path
        and not Path(completions.path).expanduser().exists()
    ):
        problems.append(f"completions.path={completions.path}: no such file or directory")
    return problems + folder_problems(config)


def folder_problems(config: Config) -> list[str]:
    """The folders outside the run directory that a run writes and cannot create (`uncreatable`):
    the response cache's, and the Hugging Face cache (`datasets` keeps its files there even for
    a local data file), both under HOME by default: a read-only HOME is named as the cause. An
    existing Hugging Face cache must be writable too (`unwritable`: `datasets` writes its locks
    there); an existing response cache may be read-only (it is then only read, `model.cache`)."""
    problems = []
    folder = cache_dir(config.cache.dir)
    why = uncreatable(folder) if config.cache.enabled else None
    if why is not None:
        problems.append(
            f"cannot use the response cache: cache.dir {folder} cannot be created ({why}); "
            "point cache.dir at a writable directory or set cache.enabled=false"
        )
    hf_cache = hf_datasets_cache()
    why = unwritable(hf_cache)
    if why is not None:
        problems.append(
            f"cannot write the Hugging Face cache {hf_cache} ({why}), where `datasets` keeps its "
            "files; set HF_HOME to a writable folder (HF_HOME=/tmp/hf python -m healthbench_exp "
            "...)"
        )
    return problems


def key_problems(config: Config) -> list[str]:
    """An unset API-key variable of each endpoint the run talks to; a jury member's names its
    preset and the jury without it (its key variable is its preset's)."""
    problems = []
    members = zip(config.jury, config.jury_members, strict=False)  # a hand-made Config: either
    presets = {member.name: preset for preset, member in members}
    for role, entry in Roles.of(config).needed.items():
        who, instead = role, None
        if role in presets and role not in ("model", "judge"):
            rest = ",".join(p for p in config.jury if p != presets[role])
            who = f"jury member {presets[role]} ({role})"
            instead = f"named by its preset's api_key_env, or run without it: jury=[{rest}]"
        try:
            resolve_api_key(who, entry.endpoint, instead)
        except ConfigError as exc:
            problems.append(str(exc))
    return problems


def run_protocol(config: Config) -> ProtocolCheck:
    """The run's protocol: its set's reference bundle and every deviation from it."""
    model = config.model if "model" in needed_roles(config) else None  # when it samples
    return protocol_check(
        config.task,
        config.dataset,
        config.sampling,
        config.judge,
        config.scoring,
        model,
        bridge_runs=config.bridge.runs,
        jury=config.jury_members,
    )


def protocol_problem(check: ProtocolCheck, strict: bool) -> str | None:
    """With `strict`, the refusal of a deviating run, naming every deviation and the options
    that would remove them; else None."""
    if not strict or check.reference:
        return None
    return (
        f"protocol.strict=true: this run deviates from the {check.name} reference protocol "
        f"({'; '.join(check.deviations)}); set {' '.join(check.fixes)}"
        + (
            " (the whole bundle: experiment=professional)"
            if check.name == PROFESSIONAL_PROTOCOL
            else ""
        )
        + ", or protocol.strict=false to run it as a non-reference run"
    )


def announce_protocol(check: ProtocolCheck) -> None:
    """One log line at start: the reference protocol followed, or every deviation from it."""
    if check.reference:
        log.info("protocol: %s reference (no deviation)", check.name)
    else:
        log.warning(
            "protocol: NOT the %s reference protocol (%d deviation%s: %s); its scores are "
            "recorded with reference=false (protocol.strict=true refuses such a run)",
            check.name,
            len(check.deviations),
            "s" * (len(check.deviations) != 1),
            "; ".join(check.deviations),
        )


def problems_found_offline(config: Config, dry_run: bool = False) -> list[str]:
    """Every start-up problem found without a network, one line each: the option checks, the
    files the config names, the calibration and bridge sources, a strict protocol's refusal,
    and (not for a dry run) the API keys and W&B's local readiness. A sweep runs it for each of
    its jobs before the first starts (`cli.sweep_checks`)."""
    problems = []
    try:
        validate(config)
    except ConfigError as exc:
        problems.append(str(exc))
    problems += path_problems(config)
    calibration = calibration_problem(config)  # a meta-eval run of another judge: refused
    if calibration is not None:
        problems.append(calibration)
    bridge = bridge_problem(config.bridge, config.judge, config.task.kind is TaskKind.eval)
    if bridge is not None:  # a source without both judges, or whose verdicts do not pair
        problems.append(bridge)
    refusal = protocol_problem(run_protocol(config), config.protocol.strict)
    if refusal is not None:
        problems.append(refusal)
    if not dry_run:
        problems += key_problems(config)
        problems += local_problems(config.wandb, resolve_mode(config.wandb.mode), os.environ)
    return problems


def check(config: Config, dry_run: bool = False) -> Readiness:
    """Every start-up problem at once (ConfigError, one per line); else W&B's mode for the run.

    A dry run checks the same, keys and W&B aside (it sends nothing and opens no W&B run).
    """
    problems = problems_found_offline(config, dry_run)
    readiness = Readiness("disabled", [])
    if not dry_run and not problems:  # only then ask the W&B server (online runs)
        readiness = wandb_check(config.wandb)
        problems += readiness.problems
    if problems:  # a retired preset is one more of them (its server is asked only later)
        problems += retired_presets(config)
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(f"{len(problems)} problems, nothing was sent:\n{listed}")
    check_models(config, dry_run)  # a retired model refuses the run (model.retired)
    announce_protocol(run_protocol(config))
    return readiness


def check_models(config: Config, dry_run: bool = False, warn: bool = True) -> list[str]:
    """The shutdown dates of the endpoints the run talks to (`model.retired`): warning lines
    (logged with `warn`); ModelRetired (a ConfigError) for a retired model. A dry run asks no
    server."""
    roles = {name: role.endpoint for name, role in Roles.of(config).needed.items()}
    timeout = config.runner.connect_timeout_s
    return check_shutdowns(roles, date.today(), ask=not dry_run, timeout_s=timeout, warn=warn)


def retired_presets(config: Config) -> list[str]:
    """Each endpoint the run talks to whose preset's shutdown date has passed, found without a
    network (no server asked): reported beside the other start-up problems, so that a missing
    key does not hide that the model is retired."""
    problems = []
    for name, role in Roles.of(config).needed.items():
        try:
            check_shutdowns({name: role.endpoint}, date.today(), ask=False, warn=False)
        except ModelRetired as exc:
            problems.append(str(exc))
    return problems


def is_fresh(output_dir: Path) -> bool:
    """Whether no earlier invocation wrote into `output_dir` (Hydra's own files and this run's
    lock aside)."""
    if not output_dir.is_dir():
        return True
    return not any(
        p.name not in (".hydra", LOCK_FILE) and p.suffix != ".log" for p in output_dir.iterdir()
    )


def discard_unstarted(output_dir: Path) -> bool:
    """Remove everything but the log from a fresh run directory whose evaluation never began.

    Call only for a directory `is_fresh` said was fresh when the job started. Returns whether it
    removed anything; a directory with results (or submitted batches) is left as it is.
    """
    if not output_dir.is_dir() or any((output_dir / m).exists() for m in STARTED_MARKERS):
        return False
    removed = False
    for path in output_dir.iterdir():
        if path.suffix == ".log" or path.name == LOCK_FILE:  # the lock goes when the job ends
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed = True
    return removed
