"""A run directory belongs to the run in it: nothing but that run's own resume writes there again.

A directory holds a run once any invocation wrote into it beyond Hydra's own files, its log and
its lock (`startup.is_fresh`): a status, results, a summary, an estimate, whatever the status
says (completed, partial, failed, interrupted, running, dry_run). A new run into it is refused
before anything is written (Hydra's `.hydra/` and log included: `RunDirCallback` checks as
Hydra starts the run, before its job setup and before the run lock is taken), naming the run it
holds and what to do instead; only `resume=<that dir>` may continue it (`allow_resume`, called
by the CLI once the resume was checked against the run's saved config). A directory holding
files a run would not have written is refused too, naming them. A sweep is refused, before its
first job, when its sweep directory already holds a job's run (`sweep_refusal`): a sweep is
continued by running it again into a new sweep directory, where the cache answers what was paid.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from healthbench_exp.cli.hydra_errors import omegaconf_error
from healthbench_exp.cli.run_lock import busy
from healthbench_exp.cli.startup import is_fresh
from healthbench_exp.core.run_config import RunConfig
from healthbench_exp.core.run_end import Exit, Status
from healthbench_exp.core.summary import read_summary
from healthbench_exp.output.files import foreign_files

_resumed: set[Path] = set()  # the run directories this process resumes (set by the CLI)


def allow_resume(run_dir: Path) -> None:
    """Let this process continue the run in `run_dir` (a checked `resume=`)."""
    _resumed.add(Path(os.path.abspath(run_dir)))


def is_resume(run_dir: Path) -> bool:
    """Whether this process runs `run_dir` as the resume of the run it holds."""
    return Path(os.path.abspath(run_dir)) in _resumed


def _saved_config(run_dir: Path) -> dict[str, object]:
    """The run's config as saved (`.hydra/config.yaml`, else summary.json's), {} if unreadable."""
    try:
        saved = OmegaConf.to_container(OmegaConf.load(run_dir / ".hydra" / "config.yaml"))
        if isinstance(saved, dict):
            return {str(k): v for k, v in saved.items()}
    except Exception:  # missing or damaged: try the summary
        pass
    summary = read_summary(run_dir)
    return summary.config if summary is not None else {}


def _status(run_dir: Path) -> str:
    try:
        status = json.loads((run_dir / "status.json").read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        return "unknown"
    return str(status) if status else "unknown"


def _known(value: object) -> str:
    return "?" if value is None else str(value)


def describe(run_dir: Path) -> tuple[str, str]:
    """What the run in `run_dir` is (`model X, judge Y, set Z, status S`) and its status."""
    settings = RunConfig.of(_saved_config(run_dir))
    status = _status(run_dir)
    source = _known(settings.completions.source if settings.completions else None)
    model = _known(settings.model.name if settings.model else None)
    replies = model if source in ("model", "?") else source
    if settings.task is not None and settings.task.kind == "meta_eval":
        replies = "meta_eval"
    judge = _known(settings.judge.name if settings.judge else None)
    difficulty = _known(settings.dataset.difficulty if settings.dataset else None)
    return (f"model {replies}, judge {judge}, set {difficulty}, status {status}", status)


def foreign(run_dir: Path) -> str | None:
    """Why a run may not write into `run_dir` because of files it would not have written."""
    names = foreign_files(run_dir)
    if not names:
        return None
    return (
        f"refusing to write into {run_dir}: it holds files that are not from "
        f"healthbench-exp ({', '.join(names[:5])}); choose another hydra.run.dir"
    )


def refusal(run_dir: Path) -> str | None:
    """Why a run may not start writing into `run_dir` (one line), or None if it may.

    Writes nothing. A directory that does not exist, or holds only what a refused start left
    (its log), is free; one holding a run is free only to that run's resume.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return None
    problem = foreign(run_dir)
    if problem is not None:
        return problem
    if is_fresh(run_dir) or is_resume(run_dir):
        return None
    what, status = describe(run_dir)
    finish = (
        ""
        if status in (Status.COMPLETED, Status.DRY_RUN)
        else f"finish it with: python -m healthbench_exp resume={run_dir}, or "
    )
    return (
        f"{run_dir} holds a run ({what}); a new run may not write there, so nothing was "
        f"written: {finish}start the new run in a new directory (hydra.run.dir=<new dir>)"
    )


def sweep_refusal(sweep_dir: Path) -> str | None:
    """Why a sweep may not start writing into `sweep_dir` (one line), or None if it may: its job
    directories would be written over, so one holding a run (any status) refuses the sweep."""
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        return None
    held = sorted(
        (p for p in sweep_dir.iterdir() if p.is_dir() and p.name != ".hydra" and not is_fresh(p)),
        key=lambda p: p.name,
    )
    if not held:
        return None
    what, _ = describe(held[0])
    more = f" and {len(held) - 1} more" if len(held) > 1 else ""
    return (
        f"{sweep_dir} holds a sweep's runs ({held[0].name}: {what}{more}); a new sweep may not "
        "write there, so nothing was written: run the sweep into a new directory "
        "(hydra.sweep.dir=<new dir>; the cache answers every call the earlier sweep paid for), "
        "or finish one of its runs with resume=<its job dir>"
    )


def _directory(config: DictConfig, kind: str) -> Path:
    """`hydra.<kind>.dir`; one that cannot be resolved (an interpolation naming no key) is one
    line and exit 2 here, before the other callbacks (Hydra would turn each one's error into a
    warning of several lines)."""
    try:
        return Path(str(config.hydra[kind].dir))
    except OmegaConfBaseException as exc:
        print(f"error: {omegaconf_error(exc, sys.argv[1:])}", file=sys.stderr)
        raise SystemExit(Exit.REFUSED) from None


class RunDirCallback(Callback):
    """Refuses (exit 2, one line, nothing written) a run into a directory that is in use, holds
    another run, or holds foreign files, and a sweep into a sweep directory holding runs;
    registered before the run lock in `conf/config.yaml`."""

    def on_run_start(self, config: DictConfig, **kwargs: object) -> None:
        run_dir = _directory(config, "run")
        problem = busy(run_dir) or refusal(run_dir)
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            raise SystemExit(Exit.REFUSED)

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        sweep_dir = _directory(config, "sweep")
        problem = busy(sweep_dir) or sweep_refusal(sweep_dir)  # a running sweep: "in use"
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            raise SystemExit(Exit.REFUSED)
