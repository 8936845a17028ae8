"""How a job ends: each way is one row, from what ended it to (status, exit code, message).

`ENDINGS` maps the exception that ended a job to its `Ending` (like lightning-hydra-template's
`task_wrapper`): the row of the exception's own class, else of its nearest parent class that
has one (`ending_of`), so the rows' order means nothing. An exception that ends a run early
carries its status and exit code (`core.run_end.RunEnded`); `finished` gives the ending of a
job that returned its summary. The app (`cli.app.run_app`) applies any ending the same way
(`cli.app.end`): status.json, the one line printed (and logged), the exit code, or None for a
sweeper.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from healthbench_exp.cli.resume import finish_command
from healthbench_exp.config.schema import ConfigError
from healthbench_exp.core.endpoint_errors import FatalEndpointError, QuotaExhausted
from healthbench_exp.core.outcome import Tally, run_outcome
from healthbench_exp.core.run_end import Exit, RunEnded, Status
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.data.healthbench import DataError
from healthbench_exp.engine import stops as run_stops
from healthbench_exp.engine.stops import RunInterrupted
from healthbench_exp.grading.verdict_watch import UnparseableJudge


@dataclass(frozen=True)
class Ending:
    """How a job ended: `status.json`'s status and error, the exit code, and how it is told."""

    status: Status
    exit_code: int  # an `Exit`, or 128 + a signal's number (`Exit.signalled`)
    message: str | None  # status.json's error; the line printed (None: completed)
    error_prefix: bool = True  # the printed line starts with "error: "
    logged: bool = False  # the line also goes to the run's log file
    discard: bool = False  # a fresh directory whose run never began keeps only its log
    traceback: bool = False  # unexpected: the exception is re-raised (in a sweep, logged)
    ends_sweep: bool = False  # a signal ends a sweep too; any other ending lets it go on
    writes: bool = True  # status.json and the log are written (not for a resume not started)


@dataclass(frozen=True)
class JobDir:
    """What an ending depends on: the run directory, whether the job found it fresh, and
    whether it started (a resume starts once its start-up checks pass: until then it changes
    nothing in its run's directory)."""

    output_dir: Path
    fresh: bool
    started: bool = True


def _ungraded(exc: BaseException, job: JobDir) -> Ending:
    return Ending(Status.UNGRADED, Exit.UNGRADED, str(exc), logged=True)


def _ended(exc: BaseException, job: JobDir) -> Ending:
    assert isinstance(exc, RunEnded)
    return Ending(exc.status, exc.exit_code, str(exc), logged=True)


def _refused(exc: BaseException, job: JobDir) -> Ending:
    message = str(exc)
    if not job.started:
        message = f"{exc}; nothing in {job.output_dir} was changed"
    if isinstance(exc, QuotaExhausted) or not job.fresh:  # what finished is kept: finish it
        message = f"{message}; then finish with: {run_stops.resume_hint(job.output_dir)}"
    return Ending(Status.FAILED, Exit.REFUSED, message, logged=True, discard=job.fresh)


def _interrupted(exc: BaseException, job: JobDir) -> Ending:
    assert isinstance(exc, RunInterrupted)
    resume = f"finish with: {run_stops.resume_hint(job.output_dir)}"
    return Ending(
        exc.status,
        exc.exit_code,
        f"{exc}; {resume}",
        error_prefix=False,
        logged=True,  # the log's last line too: the terminal may be gone (SIGHUP)
        ends_sweep=True,
    )


def _unexpected(exc: BaseException, job: JobDir) -> Ending:
    line = run_stops.failure_line(exc, job.output_dir)  # a disk that refuses an output
    if line is not None:
        return Ending(Status.FAILED, Exit.ERROR, line, discard=job.fresh)
    message = f"{type(exc).__name__}: {exc}"
    return Ending(Status.FAILED, Exit.ERROR, message, discard=job.fresh, traceback=True)


EndingOf = Callable[[BaseException, JobDir], Ending]

# each class that ends a job, with its ending; a class not listed ends as its nearest parent
ENDINGS: tuple[tuple[type[BaseException], EndingOf], ...] = (
    (RunEnded, _ended),  # stopped early, with its own status and exit code (a dead endpoint,
    # the failure fraction): what finished is recorded, resumable
    (UnparseableJudge, _ungraded),  # stopped early: the judge sent no readable verdict
    (ConfigError, _refused),  # exit 2: fix, then run or resume
    (DataError, _refused),
    (FatalEndpointError, _refused),  # an exhausted quota too (then resume)
    (RunInterrupted, _interrupted),  # Ctrl-C, SIGTERM, SIGHUP, SLURM's limit: 130/143/129/140
    (Exception, _unexpected),  # a full disk (one line), or a bug (its traceback)
)


def ending_in(table: Iterable[tuple[type[BaseException], EndingOf]], kind: type) -> EndingOf | None:
    """The ending `table` gives an exception of class `kind`: its own class's row, else that
    of its nearest parent in its method resolution order (any order of the rows gives the
    same); None when no class of it has a row."""
    rows: Mapping[type, EndingOf] = dict(table)
    return next((rows[parent] for parent in kind.__mro__ if parent in rows), None)


def ending_of(exc: BaseException, job: JobDir) -> Ending:
    """The ending of a job that `exc` ended (`ENDINGS`, by `ending_in`; a resume that had not
    started writes nothing: its run's directory stays as it was)."""
    ending = ending_in(ENDINGS, type(exc))
    if ending is None:
        raise exc  # SystemExit and the like are not endings of the job
    return ending(exc, job) if job.started else replace(ending(exc, job), writes=False)


def finished(
    record: RunSummary,
    max_failure_fraction: float,
    output_dir: Path,
    estimate_usd: float | None = None,
) -> Ending:
    """The ending of a job that returned its summary: partial (its budget; `estimate_usd`: the
    run's estimated cost, for the budget its resume needs), or `run_outcome`'s completed /
    failed / ungraded."""
    if record.budget_stopped:
        return Ending(Status.PARTIAL, Exit.BUDGET, finish_command(output_dir, record, estimate_usd))
    outcome = run_outcome(Tally.of(record), max_failure_fraction, output_dir)
    return Ending(outcome.status, outcome.exit_code, outcome.message)
