"""Weights & Biases: one run per Hydra job, opened and finished inside the job.

`wandb.mode=auto` (the default) follows the W&B environment variables (`WANDB_DISABLED=true`,
`WANDB_MODE=disabled|offline|online`); without them it goes online only when credentials exist
(WANDB_API_KEY or a netrc entry for the W&B host) and otherwise writes an offline run for
`wandb sync` later; it never prompts. An explicit mode (`wandb=offline`, `wandb.mode=online`)
wins over the environment. Run files go to `$WANDB_DIR/wandb` if WANDB_DIR is set, else
`<run dir>/wandb`.

W&B never costs local results: readiness is checked before the first request
(`startup.check`), the run opens only once the first result is written, local outputs are
written before anything is sent to W&B, and any W&B failure after that is a warning: an online
run that cannot open falls back to an offline one, and the `wandb sync` command is printed. The
run id is kept in `<run dir>/wandb/run.json`, so a resumed run continues the same W&B run.

A run holds the resolved Hydra config (it names API-key variables, never a key), the Hydra
overrides, the harness version and git commit; live progress (`progress/*`) while examples
finish; and at the end what `wandb_content` logs (summary, tables, the results artifact).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import string
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .config import CompletionSource, Config, TaskKind
from .wandb_content import log_eval, log_meta_eval
from .wandb_mode import Readiness, resolve_mode

__all__ = ["JobContext", "Tracker", "resolve_mode", "start"]

if TYPE_CHECKING:
    from .runner import ExampleResult

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 5.0


@dataclass
class JobContext:
    """What only Hydra knows about the job, as plain data."""

    overrides: list[str] = field(default_factory=list)
    sweep_dir: str | None = None  # set in a multirun: the sweep's directory
    job_name: str = "healthbench"  # hydra.job.name


def default_run_name(config: Config) -> str:
    if config.task.kind is TaskKind.meta_eval:
        return f"meta_eval|judge={config.judge.name}|{config.dataset.difficulty}"
    temperature = "default" if config.sampling.temperature is None else config.sampling.temperature
    source = config.completions.source
    if source is CompletionSource.model:
        replies = config.model.name
    elif source is CompletionSource.file:
        replies = f"file:{Path(config.completions.path or '').name}"
    else:
        replies = f"{source.value}:group{config.completions.group}"
    return f"{replies}|judge={config.judge.name}|{config.dataset.difficulty}|T={temperature}"


def sweep_group(sweep_dir: str, job_name: str = "healthbench") -> str:
    """The W&B group of a sweep's jobs: `<hydra.job.name> <sweep start>`, never a path.

    The start is when Hydra wrote the sweep's `multirun.yaml` (once, before any job: every job
    of the sweep, in any process, reads the same time); a sweep directory not named by its
    time adds its name, e.g. `healthbench 2026-11-22 10:00:00 grid`.
    """
    path = Path(sweep_dir)
    marker = path / "multirun.yaml"
    stamp = marker.stat().st_mtime if marker.is_file() else None
    if stamp is None:
        return f"{job_name} {path.name}"[-128:]
    started = datetime.fromtimestamp(stamp)
    group = f"{job_name} {started:%Y-%m-%d %H:%M:%S}"
    if path.name != f"{started:%H-%M-%S}":
        group += f" {path.name}"
    return group[-128:]


def git_commit() -> str | None:
    """The commit of the harness source, when it runs from a git checkout."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    return result.stdout.strip() or None


def run_id_file(output_dir: Path) -> Path:
    """Where a run directory keeps its W&B run id (one W&B run per run directory)."""
    return output_dir / "wandb" / "run.json"


def saved_run_id(output_dir: Path) -> str | None:
    """The W&B run id an earlier invocation of this run directory used, if any."""
    with contextlib.suppress(OSError, ValueError, KeyError):
        return str(json.loads(run_id_file(output_dir).read_text())["run_id"])
    return None


def new_run_id() -> str:
    """Eight lowercase letters and digits, as W&B makes them."""
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(8))


@dataclass
class RunPlan:
    """Everything about the job's W&B run that is known before it opens."""

    run_id: str
    mode: str  # online | offline
    project: str
    entity: str | None
    group: str | None
    output_dir: Path
    open: Callable[[str], Any]  # opens the run in the given mode


class Tracker:
    """The job's W&B run; every method is a no-op when W&B is disabled, and none raises.

    The run is opened in a background thread (`wandb.init` takes about a second of CPU) started
    when the first result arrives, so that a job failing before its first request opens no run
    and the first requests go out first. Progress is logged once it is open. `finish` runs after
    the local outputs are written; any W&B failure is logged as a warning, and an online run that
    cannot open falls back to an offline one. `sync_hint` is the `wandb sync` command for the
    run's data when it stayed local.
    """

    def __init__(self, plan: RunPlan | None = None, warning: str | None = None) -> None:
        self.plan = plan
        self.run: Any | None = None
        self.mode = plan.mode if plan else None  # the mode the run opened in
        self.warnings: list[str] = [warning] if warning else []
        self.opener: threading.Thread | None = None
        self.opened = False
        self.done = self.failed = self.ungraded = self.requests = 0
        self.score_sum = 0.0
        self.scored = 0
        self.last_log = 0.0

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning("W&B: %s", message)

    def _start_opening(self) -> None:
        if self.plan is None or self.opened:
            return
        self.opened = True
        plan = self.plan

        def target() -> None:
            try:
                self.run = plan.open(plan.mode)
            except Exception as exc:
                if plan.mode != "online":
                    self.warn(f"could not open the run ({exc}); nothing is tracked")
                    return
                self.warn(f"could not open the online run ({exc}); writing it offline instead")
                self.mode = "offline"
                try:
                    self.run = plan.open("offline")
                except Exception as again:
                    self.warn(f"could not open an offline run either ({again})")
                    return
            with contextlib.suppress(OSError):
                path = run_id_file(plan.output_dir)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({"run_id": plan.run_id, "project": plan.project}))

        self.opener = threading.Thread(target=target, name="wandb-init", daemon=True)
        self.opener.start()

    def wait(self) -> Any | None:
        """The open run (None when disabled or when it could not open), once it is open."""
        if self.opener is not None:
            self.opener.join()
            self.opener = None
        return self.run

    def _ready(self) -> bool:
        """Whether the run is open; never waits for `wandb.init`."""
        if self.opener is not None and not self.opener.is_alive():
            self.wait()
        return self.opener is None and self.run is not None

    def on_result(self, result: ExampleResult) -> None:
        """Count a finished example; log progress at most every PROGRESS_EVERY_S seconds."""
        self.failed += result.error is not None
        self.ungraded += result.ungraded
        self.requests += result.sampled + sum(g.attempts for g in result.grades)
        if result.score is not None:
            self.scored += 1
            self.score_sum += result.score
        self._finished_one()

    def on_row(self, ungraded: bool, judge_replies: int) -> None:
        """Count a finished meta-eval row."""
        self.ungraded += ungraded
        self.requests += judge_replies
        self._finished_one()

    def _finished_one(self) -> None:
        self._start_opening()
        self.done += 1
        now = time.monotonic()
        if now - self.last_log >= PROGRESS_EVERY_S and self._ready():
            self.last_log = now
            try:
                self.log_progress()
            except Exception as exc:  # the run goes on; finish says what W&B lacks
                self.warn(f"could not log progress ({exc})")
                self.last_log = float("inf")

    def log_progress(self) -> None:
        assert self.run is not None
        mean = self.score_sum / self.scored if self.scored else None
        self.run.log(
            {
                "progress/examples_done": self.done,
                "progress/running_mean_score": mean,
                "progress/requests": self.requests,
                "progress/failures": self.failed,
                "progress/ungraded_criteria": self.ungraded,
            }
        )

    def finish(self, summary: dict[str, Any], output_dir: Path) -> None:
        """Summary, tables, charts and the results artifact; then finish the run.

        Call it after every local output is written; it never raises.
        """
        if self.plan is None:
            return
        self._start_opening()  # a job with no result still gets its run
        if self.wait() is None:
            self._say_where()
            return
        try:
            if summary.get("task") == "meta_eval":
                log_meta_eval(self.run, summary, output_dir)
            else:
                log_eval(self.run, summary, output_dir)
            self.log_progress()
            self.run.finish()
        except Exception as exc:
            self.warn(f"could not finish the run ({type(exc).__name__}: {exc})")
            with contextlib.suppress(Exception):
                self.run.finish(exit_code=1)
        self._say_where()

    def _say_where(self) -> None:
        """Print where the run's W&B data is when it is not (all) on the server."""
        hint = self.sync_hint()
        if hint:
            print(f"W&B: {hint}", file=sys.stderr if self.warnings else sys.stdout)

    def sync_hint(self) -> str | None:
        """`upload with: wandb sync <dir>` for an offline or failed run; None otherwise."""
        run_dir = getattr(self.run, "dir", None) if self.run is not None else None
        if not run_dir:
            return None
        folder = Path(run_dir).parent  # <...>/wandb/offline-run-<time>-<id> (files/ below)
        if self.mode == "online" and not self.warnings:
            return None
        if len(list(folder.parent.glob(f"*-{self.run.id}"))) > 1:  # resumed: every part
            folder = folder.parent / f"*-{self.run.id}"
        return f"upload this run's data with: wandb sync {folder}"

    def describe(self) -> dict[str, Any] | None:
        """Where the run is, for summary.json; never waits for W&B."""
        if self.plan is None:
            return None
        return {
            "run_id": self.plan.run_id,
            "group": self.plan.group,
            "project": self.plan.project,
            "entity": self.plan.entity,
            "mode": self.mode,
            "warnings": list(self.warnings),
        }

    def fail(self) -> None:
        """Finish a run whose job raised, marked failed; a run that never opened stays unopened."""
        if self.plan is None or not self.opened:
            return
        with contextlib.suppress(Exception):
            run = self.wait()
            if run is not None:
                run.finish(exit_code=1)
                self._say_where()


def start(
    config: Config,
    config_dict: dict[str, Any],
    output_dir: Path,
    job: JobContext,
    readiness: Readiness,
) -> Tracker:
    """The job's Tracker for the mode `wandb_mode.check` chose; opens nothing yet."""
    if readiness.mode == "disabled":
        return Tracker()
    group = config.wandb.group or (
        sweep_group(job.sweep_dir, job.job_name) if job.sweep_dir else None
    )
    run_id = saved_run_id(output_dir) or new_run_id()

    def open_in(mode: str) -> Any:
        return open_run(config, config_dict, output_dir, job, mode, run_id, group)

    plan = RunPlan(
        run_id, readiness.mode, config.wandb.project, config.wandb.entity, group, output_dir,
        open_in,
    )  # fmt: skip
    if readiness.warning:
        log.warning("%s", readiness.warning)
    return Tracker(plan, readiness.warning)


def open_run(
    config: Config,
    config_dict: dict[str, Any],
    output_dir: Path,
    job: JobContext,
    mode: str,
    run_id: str,
    group: str | None,
) -> Any:
    """`wandb.init` for this job: run `run_id` (resumed if it exists), never prompting."""
    # no third-party lines in our output ("install weave", "Adding directory to artifact")
    os.environ.setdefault("WANDB_DISABLE_WEAVE", "true")
    os.environ.setdefault("WANDB_SILENT", "true")
    import wandb

    run_dir = Path(os.environ.get("WANDB_DIR") or output_dir)  # W&B adds its own wandb/ below
    run_dir.mkdir(parents=True, exist_ok=True)
    run = wandb.init(
        project=config.wandb.project,
        entity=config.wandb.entity,
        group=group,
        tags=list(config.wandb.tags),
        name=config.wandb.name or default_run_name(config),
        job_type=config.task.kind.value,
        config={
            **config_dict,
            "hydra_overrides": " ".join(job.overrides),
            "harness_version": __version__,
            "git_commit": git_commit(),
        },
        dir=str(run_dir),
        mode=mode,  # type: ignore[arg-type]
        id=run_id,
        resume="allow",
        reinit="create_new",
        settings=wandb.Settings(silent=True, console="off"),
    )
    log.info("W&B run %s (%s%s) in %s", run.id, mode, f", group {group}" if group else "", run_dir)
    return run
