"""`python -m healthbench_exp`: the only module that knows about Hydra.

It checks command-line overrides against the typed schema (naming the valid options on a typo),
composes `conf/`, converts the result once into the `Config` dataclasses and hands them to
`cli.job` (which builds the task and the sinks and runs the engine), then turns the outcome into
`status.json` and the exit code. Errors the user can fix are printed as one clear line, not a
traceback: the overrides' mistakes (`check_overrides`) and Hydra's composition errors
(`hydra_errors`) alike, `error: ...` and exit 2.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from healthbench_exp.cli import endings, hydra_errors, ownership, parallel_stop, run_lock, startup
from healthbench_exp.cli import job as jobs
from healthbench_exp.cli.compose import CONFIG_PATH, to_config, translate_dry_run
from healthbench_exp.cli.hydra_flags import hydra_flag_arguments
from healthbench_exp.cli.hydra_schema import register_configs
from healthbench_exp.cli.overrides import check_overrides
from healthbench_exp.cli.regrade import regrade_arguments
from healthbench_exp.cli.resume import plan_resume
from healthbench_exp.cli.typed_paths import from_where_typed
from healthbench_exp.config.schema import ConfigError
from healthbench_exp.core import standard_streams
from healthbench_exp.core.run_end import Exit, Status
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.engine import late_signals
from healthbench_exp.engine.estimate_text import format_estimate
from healthbench_exp.engine.stops import (
    RunInterrupted,
    StoppedEarly,
    signal_text,
    signals_held,
    signals_interrupt,
)
from healthbench_exp.model.cache import discard_call_journal
from healthbench_exp.output import console
from healthbench_exp.output.run_dir import RunDirectory
from healthbench_exp.published.text import planned_lines
from healthbench_exp.sweep.aggregate import tell_sweep

log = logging.getLogger("healthbench_exp")

_QUIET_LOGGERS = ("openai", "httpx", "httpx2", "httpcore", "httpcore2", "urllib3", "datasets")


def log_to_file(message: str) -> None:
    """Record `message` in the run's log file only: the terminal gets it once, printed."""
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, "%s", (message,), None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


def save_hydra_config(run_dir: RunDirectory, cfg: DictConfig) -> None:
    """`.hydra/{config,hydra,overrides}.yaml` as Hydra's job setup writes them, for a resume
    (whose job Hydra was told not to write them: they change only once its checks pass)."""
    hydra_node = OmegaConf.create({"hydra": HydraConfig.get()})
    nodes = {
        "config.yaml": cfg,
        "hydra.yaml": hydra_node,
        "overrides.yaml": HydraConfig.get().overrides.task,
    }
    run_dir.write_hydra_config({name: OmegaConf.to_yaml(node) for name, node in nodes.items()})


register_configs()


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="config")
def app(cfg: DictConfig) -> float | None:
    """One Hydra job (`run_app`), its stopping signals raising RunInterrupted: in a job that a
    launcher started in a process of its own (SLURM, joblib) too, where `main` does not run and
    SLURM's time-limit signal would otherwise go to submitit's handler; there too, output no
    one reads never ends it (`core.standard_streams`; `__main__` guarded its own already)."""
    standard_streams.guard()
    hydra_config = HydraConfig.get()
    if hydra_config.mode == RunMode.MULTIRUN and parallel_stop.is_parallel(hydra_config.launcher):
        parallel_stop.ignore_between_jobs()
    with signals_interrupt(), hydra_errors.job_errors_printed():
        return run_app(cfg)


def run_app(cfg: DictConfig) -> float | None:
    """One Hydra job: evaluate and return the overall score (for sweepers).

    A job records `status.json` (running, completed or failed with the error). In a multirun a
    failed job returns None instead of raising, so the other jobs still run and the sweep summary
    (written at the end, see `aggregate`) lists it as failed and sets the exit status.
    """
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    hydra_config = HydraConfig.get()
    output_dir = Path(hydra_config.runtime.output_dir)
    run_dir = RunDirectory(output_dir)  # every file of it the sinks do not write
    in_sweep = hydra_config.mode == RunMode.MULTIRUN
    sweep_dir = Path(hydra_config.sweep.dir) if in_sweep else None
    # a job of a parallel sweep: its worker goes on to the next job; the sweep's main process
    # tells the sweep's end (`cli.parallel_stop`)
    parallel = in_sweep and parallel_stop.is_parallel(hydra_config.launcher)
    if sweep_dir is not None and parallel_stop.stopping(sweep_dir):  # started after the stop
        if startup.is_fresh(output_dir):  # only what Hydra made for it: it never ran
            parallel_stop.discard_job(output_dir)
        return None
    run_lock.acquire_or_exit(output_dir)  # already held unless this is a job of a sweep
    refused = ownership.foreign(output_dir)  # a job of a sweep (a run was checked as it began)
    if refused is not None:
        print(f"error: {refused}", file=sys.stderr)
        raise SystemExit(Exit.REFUSED)
    fresh = startup.is_fresh(output_dir)  # a failed start leaves only its log in a fresh one
    # a resume changes nothing in its run's directory (not even .hydra/, which Hydra was told
    # not to write) until its start-up checks pass: a refused resume leaves the run as it was
    started = not ownership.is_resume(output_dir)
    if started:
        run_dir.write_status(Status.RUNNING)
    try:
        cfg = from_where_typed(cfg)  # hydra.job.chdir=true moved the job
        config, plain = to_config(cfg)
        readiness = startup.check(config, dry_run=config.dry_run.requested)
        if not started:
            save_hydra_config(run_dir, cfg)
            run_dir.write_status(Status.RUNNING)
            started = True
        job = jobs.JobContext(
            overrides=list(hydra_config.overrides.task),
            sweep_dir=hydra_config.sweep.dir if in_sweep else None,
            job_name=hydra_config.job.name,
        )
        if config.dry_run.requested:
            estimate = jobs.estimate_job(config, run_dir, plain)
            print(format_estimate(estimate, output_dir))
            print("\n".join(planned_lines(plain)))  # what it will be compared with
            run_dir.write_status(Status.DRY_RUN)
            return None
        record = jobs.run_job(config, run_dir, plain, job, readiness)
    except (Exception, RunInterrupted) as exc:
        if isinstance(exc, StoppedEarly | RunInterrupted) and exc.summary is not None:
            print_partial(exc.summary, output_dir)  # its outputs are written
        ending = endings.ending_of(exc, endings.JobDir(output_dir, fresh, started))
        score = end(ending, run_dir, sweep_dir, parallel)
        stop_after_finishing(sweep_dir, parallel)
        return score
    print(console.format_report(record))
    print(f"\noutputs: {output_dir}")
    counts = record.counts
    estimated_usd = None  # a budget stop before any row finished: its resume needs it
    if record.budget_stopped and counts is not None and counts.rows_not_run == counts.rows:
        estimated_usd = jobs.estimated_cost_usd(config, plain)
    fraction = config.runner.max_failure_fraction
    ending = endings.finished(record, fraction, output_dir, estimated_usd)
    score = end(ending, run_dir, sweep_dir, parallel, score=record.metrics.get("score"))
    stop_after_finishing(sweep_dir, parallel)
    return score


def print_partial(summary: RunSummary, output_dir: Path) -> None:
    """The table of a run stopped early and its `outputs:` line, before the line that says why
    it stopped; a second signal as they print cuts them short (the ending still follows)."""
    with contextlib.suppress(RunInterrupted):
        print(console.format_report(summary))
        print(f"\noutputs: {output_dir}")


def stop_after_finishing(sweep_dir: Path | None, parallel: bool) -> None:
    """A stopping signal the run received as it finished (`engine.late_signals`: its outputs
    were written whole, its status recorded): a single run, or a job of a parallel sweep (whose
    main process stops the sweep), says so and goes on to its end; a sweep run job after job
    stops here, its summary written first, and exits 128 + the signal's number."""
    signum = late_signals.take_kept()
    if signum is None:
        return
    if sweep_dir is None or parallel:
        print(f"{signal_text(signum)} came as the run finished: it is complete", file=sys.stderr)
        return
    print(f"interrupted by {signal_text(signum)}: the sweep stops here", file=sys.stderr)
    with signals_held():
        tell_sweep(sweep_dir)
    raise SystemExit(Exit.signalled(signum))


def end(
    ending: endings.Ending,
    run_dir: RunDirectory,
    sweep_dir: Path | None,
    parallel: bool = False,
    score: float | None = None,
) -> float | None:
    """Apply a job's ending, the same steps for each: status.json, the line printed (and
    logged), then the score (completed), None (a job of a sweep, which goes on), or the exit.
    A signal ends a sweep (`sweep_dir`) too: its summary is written first, naming every job
    that did not finish with the command that finishes it; in a job of a `parallel` sweep, the
    sweep's main process does. An unexpected exception is re-raised: call from its `except`
    block."""
    in_sweep = sweep_dir is not None or parallel
    unwritten = None
    if ending.writes:
        unwritten = run_dir.try_write_status(ending.status, ending.message)
    if ending.status == Status.COMPLETED:
        if unwritten:
            print(f"error: {unwritten}", file=sys.stderr)
        else:
            discard_call_journal(run_dir.directory)
        return score
    line = f"{'error: ' if ending.error_prefix else ''}{ending.message}"
    if unwritten:
        line = f"{line}; {unwritten}"
    if ending.logged and ending.writes:
        log_to_file(line)
    if not ending.traceback:
        print(line, file=sys.stderr)
    if in_sweep and (parallel or not ending.ends_sweep):  # the summary lists it (status.json)
        if ending.traceback:
            log.exception("job failed")
        return None
    if sweep_dir is not None and ending.ends_sweep:  # Hydra's end callbacks will not run
        with signals_held():
            tell_sweep(sweep_dir)
    if ending.discard:
        startup.discard_unstarted(run_dir.directory)
    if ending.traceback:
        raise  # called from the except block of the exception: re-raised as it is
    raise SystemExit(ending.exit_code) from None


def main() -> None:
    """Check the arguments (a `resume=` against its run's saved config), then run the job.

    Both checks come before Hydra starts the job, so a refused resume, and the resume of a
    completed run, leave the run directory exactly as it was.
    """
    run_lock.remember_typed(sys.argv[1:])  # the lock names the command as typed, not rewritten
    sys.argv[1:] = translate_dry_run(sys.argv[1:])  # dry_run=true: dry_run.enabled=true
    try:
        sys.argv[1:] = hydra_flag_arguments(sys.argv[1:])  # -sc refused; --hydra-help without it
        # a mistyped key names the valid ones, beside resume= too (its run's own were checked)
        check_overrides([a for a in sys.argv[1:] if not a.startswith(("resume=", "regrade="))])
        regrade = regrade_arguments(sys.argv[1:])  # a regrade: its source run's arguments
        if regrade is not None:
            sys.argv[1:] = regrade
        plan = plan_resume(sys.argv[1:], CONFIG_PATH)
        if plan is not None:
            if plan.completed:
                print(plan.completed_message())
                raise SystemExit(Exit.COMPLETED)
            # the run's own directory is open to its resume, whose job Hydra does not let write
            # .hydra/: the app writes it once the resume's start-up checks pass
            ownership.allow_resume(plan.run_dir)
            sys.argv[1:] = [*plan.arguments, "hydra.output_subdir=null"]
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(Exit.REFUSED) from None
    logging.raiseExceptions = False  # a full disk is reported once by the run, not per log call
    try:
        # Ctrl-C and SIGTERM stop the run cleanly (see run_stops); Hydra raises what it finds
        # wrong while composing, to be told in one line
        with signals_interrupt(), hydra_errors.composition_errors_raised():
            app()
    except RunInterrupted as stop:  # before a run started, between two jobs of a sweep, or a
        # parallel sweep's main process
        print(f"{stop}", file=sys.stderr)
        sweep_dir = parallel_stop.stopped_sweep()
        if sweep_dir is not None:  # its jobs ended: tell them, the finish commands last
            with signals_held():
                tell_sweep(sweep_dir)
        raise SystemExit(stop.exit_code) from None
    except Exception as exc:
        problem = hydra_errors.composition_error(exc, sys.argv[1:])
        if problem is None:
            raise
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(Exit.REFUSED) from None


if __name__ == "__main__":
    main()
