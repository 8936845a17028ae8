"""Weights & Biases: one run per Hydra job, opened and finished inside the job.

`wandb.mode=auto` (the default) follows the W&B environment variables (`WANDB_DISABLED=true`,
`WANDB_MODE=disabled|offline|online`); without them it goes online only when credentials exist
(WANDB_API_KEY or a netrc entry for the W&B host) and otherwise writes an offline run for
`wandb sync` later; it never prompts. An explicit mode (`wandb=offline`, `wandb.mode=online`)
wins over the environment. Run files go to `$WANDB_DIR/wandb` if WANDB_DIR is set, else
`<run dir>/wandb`.

W&B never costs local results: readiness is checked before the first request
(`startup.check`), the run opens only once the first result is written, in a separate process
(`wandb_worker`, so W&B never competes with the requests in flight for this interpreter), local
outputs are written before the summary and tables go to W&B, and any W&B failure is a warning:
an online run that cannot open falls back to an offline one, and the `wandb sync` command is
printed. The run id is kept in `<run dir>/wandb/run.json`, so a resumed run continues the same
W&B run; the worker's own messages go to `<run dir>/wandb/worker.log`.

A run holds the resolved Hydra config (it names API-key variables, never a key), the Hydra
overrides, the harness version and git commit; live progress (`progress/*`) while examples
finish; and at the end what `content` logs (summary, tables, the results artifact).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
import string
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from healthbench_exp.config.schema import WandbConfig
from healthbench_exp.core.counts import RunCounts
from healthbench_exp.core.run_end import Exit
from healthbench_exp.core.stop_signals import TERMINAL_STOPS, start_child
from healthbench_exp.core.summary import RunSummary, WandbInfo
from healthbench_exp.core.version import __version__
from healthbench_exp.output.wandb.mode import Readiness, resolve_mode

__all__ = ["JobContext", "Tracker", "resolve_mode", "start"]

if TYPE_CHECKING:
    from healthbench_exp.core.types import CriterionGrade, ExampleResult

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 5.0


@dataclass
class JobContext:
    """What only Hydra knows about the job, as plain data."""

    overrides: list[str] = field(default_factory=list)
    sweep_dir: str | None = None  # set in a multirun: the sweep's directory
    job_name: str = "healthbench"  # hydra.job.name


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
    init: dict[str, object]  # the arguments of `wandb.init`, as JSON


class Tracker:
    """The job's W&B run, kept by a `wandb_worker` process; a no-op when W&B is disabled.

    The worker is started when the first result arrives, so a job failing before its first
    request opens no run, and it does all of W&B's work in its own interpreter, so none of it
    competes with the requests in flight. Progress goes to it at most every PROGRESS_EVERY_S
    seconds. `finish` runs after the local outputs are written. No method raises: a W&B failure
    is a warning (`warnings`), and `sync_hint` gives the `wandb sync` command for a run whose
    data stayed local.
    """

    def __init__(self, plan: RunPlan | None = None, warning: str | None = None) -> None:
        self.plan = plan
        self.mode = plan.mode if plan else None  # the mode the run opened in
        self.warnings: list[str] = [warning] if warning else []
        self.worker: subprocess.Popen[str] | None = None
        self.listener: threading.Thread | None = None
        self.run_dir: str | None = None  # the W&B run's files folder, once it is open
        self.opened = False
        self.counts = RunCounts(rows=0)  # the same counts as the bar, table and summary
        self.requests = 0
        self.score_sum = 0.0
        self.last_log = 0.0

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning("W&B: %s", message)

    def _start_opening(self) -> None:
        if self.plan is None or self.opened:
            return
        self.opened = True
        plan = self.plan
        logs = plan.output_dir / "wandb"
        try:
            logs.mkdir(parents=True, exist_ok=True)
            with open(logs / "worker.log", "a", encoding="utf-8") as stderr:
                self.worker = start_child(
                    [sys.executable, "-m", "healthbench_exp.output.wandb.worker"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    text=True,
                    encoding="utf-8",
                    # a signal to the process group reaches the run, which finishes this W&B
                    # run as interrupted: the worker ignores it from its start
                    ignoring=(*TERMINAL_STOPS, signal.SIGTERM),
                )
        except OSError as exc:
            self.warn(f"could not start ({exc}); nothing is tracked")
            return
        self.listener = threading.Thread(target=self._listen, name="wandb-events", daemon=True)
        self.listener.start()
        self._send({"op": "open", "init": plan.init, "output_dir": str(plan.output_dir)})

    def _listen(self) -> None:
        """Read the worker's events until it exits."""
        assert self.worker is not None and self.worker.stdout is not None
        for line in self.worker.stdout:
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if event["event"] == "opened":
                    self.mode, self.run_dir = event["mode"], event["dir"]
                    log.info("W&B run %s (%s) in %s", event["run_id"], self.mode, self.run_dir)
                elif event["event"] == "warning":
                    self.warn(event["message"])
                    if "writing it offline" in event["message"]:
                        self.mode = "offline"

    def _send(self, command: dict[str, object]) -> None:
        if self.worker is None or self.worker.stdin is None or self.worker.poll() is not None:
            return
        try:
            self.worker.stdin.write(json.dumps(command, allow_nan=False) + "\n")
            self.worker.stdin.flush()
        except (OSError, ValueError) as exc:
            self.warn(f"lost the W&B worker ({exc})")

    def _close(self) -> None:
        """Let the worker finish and wait for it; then say where a local run's data is."""
        if self.worker is None:
            return
        with contextlib.suppress(OSError):
            if self.worker.stdin is not None:
                self.worker.stdin.close()
        self.worker.wait()
        if self.listener is not None:
            self.listener.join()
        self.worker = None
        hint = self.sync_hint()
        if hint:
            print(f"W&B: {hint}", file=sys.stderr if self.warnings else sys.stdout)

    def on_result(self, result: ExampleResult) -> None:
        """Count a finished example; log progress at most every PROGRESS_EVERY_S seconds."""
        self.counts.add(result)
        self.requests += result.sampled + sum(g.attempts for g in result.grades)
        if result.score is not None:
            self.score_sum += result.score
        self._finished_one()

    def on_row(self, grade: CriterionGrade) -> None:
        """Count a finished meta-eval row."""
        self.counts.add_grade(grade)
        self.requests += grade.attempts
        self._finished_one()

    def _finished_one(self) -> None:
        self._start_opening()
        now = time.monotonic()
        if now - self.last_log >= PROGRESS_EVERY_S:
            self.last_log = now
            self.log_progress()

    def log_progress(self) -> None:
        counts = self.counts
        mean = self.score_sum / counts.scored if counts.scored else None
        progress = {
            "progress/examples_done": counts.finished,
            "progress/running_mean_score": mean,
            "progress/requests": self.requests,
            "progress/failures": counts.failed,
            "progress/ungraded_criteria": counts.ungraded_criteria,
        }
        self._send({"op": "progress", "data": progress})

    def finish(self, summary: RunSummary, output_dir: Path) -> None:
        """Summary, tables, charts and the results artifact; then finish the run.

        Call it after every local output is written; it never raises.
        """
        if self.plan is None:
            return
        self._start_opening()  # a job with no result still gets its run
        self.log_progress()
        self._send({"op": "finish", "summary": summary.to_dict()})
        self._close()

    def sync_hint(self) -> str | None:
        """`upload this run's data with: wandb sync <dir>` for a run kept locally, else None."""
        if not self.run_dir or (self.mode == "online" and not self.warnings):
            return None
        folder = Path(self.run_dir).parent  # <...>/wandb/offline-run-<time>-<id> (files/ below)
        assert self.plan is not None
        pattern = f"{folder.name.split('-')[0]}-run-*-{self.plan.run_id}"
        if len(list(folder.parent.glob(pattern))) > 1:  # resumed: every part
            folder = folder.parent / pattern
        return f"upload this run's data with: wandb sync {folder}"

    def describe(self) -> WandbInfo | None:
        """Where the run is, for summary.json; never waits for W&B."""
        if self.plan is None:
            return None
        return WandbInfo(
            run_id=self.plan.run_id,
            group=self.plan.group,
            project=self.plan.project,
            entity=self.plan.entity,
            mode=self.mode,
            warnings=list(self.warnings),
        )

    def fail(self, error: BaseException | None = None) -> None:
        """Finish a run whose job raised, marked failed: exit code 1, or the error's own
        `exit_code` (a run stopped by a signal), so that `wandb sync` never uploads it as a
        finished run. A run that never opened (no result yet) stays unopened; never raises."""
        if self.plan is None or not self.opened:
            return
        self._send({"op": "fail", "exit_code": getattr(error, "exit_code", Exit.ERROR)})
        self._close()


def start(
    wandb: WandbConfig,
    run_label: str,
    job_type: str,
    config_dict: Mapping[str, object],
    output_dir: Path,
    job: JobContext,
    readiness: Readiness,
) -> Tracker:
    """The job's Tracker for the mode `wandb_mode.check` chose; opens nothing yet.

    `run_label` names the W&B run unless `wandb.name` does; `job_type` is the task's kind;
    `config_dict` is the resolved config as plain data (env var names, never keys).
    """
    if readiness.mode == "disabled":
        return Tracker()
    group = wandb.group or (sweep_group(job.sweep_dir, job.job_name) if job.sweep_dir else None)
    run_id = saved_run_id(output_dir) or new_run_id()
    run_dir = Path(os.environ.get("WANDB_DIR") or output_dir)  # W&B adds its own wandb/ below
    init: dict[str, object] = {
        "project": wandb.project,
        "entity": wandb.entity,
        "group": group,
        "tags": list(wandb.tags),
        "name": wandb.name or run_label,
        "job_type": job_type,
        "config": {
            **config_dict,
            "hydra_overrides": " ".join(job.overrides),
            "harness_version": __version__,
            "git_commit": git_commit(),
        },
        "dir": str(run_dir.resolve()),
        "mode": readiness.mode,
        "id": run_id,
        "resume": "allow",  # the same run again when the run directory is resumed
    }
    plan = RunPlan(run_id, readiness.mode, wandb.project, wandb.entity, group, output_dir, init)
    if readiness.warning:
        log.warning("%s", readiness.warning)
    return Tracker(plan, readiness.warning)
