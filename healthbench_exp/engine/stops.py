"""How a run stops before its end: a signal, or a disk that refuses its output.

- SIGINT (Ctrl-C), SIGTERM, SIGHUP (the terminal closed: a tmux session or an ssh connection
  ended) and SIGUSR2 (`core.stop_signals.STOPPING_SIGNALS`) become `RunInterrupted`, counted
  once however many ways one reached the run (`core.stop_signals`: directly and through a
  parallel sweep's main process or the bridge kit): in the event loop the first one halts the
  run and lets its requests in flight answer for `runner.stop_grace_s` (`engine.grace`), then
  (or at a second signal) cancels the run's main task, so every request slot, client, server
  and file is closed on the way out (what finished is already in `examples.jsonl`); outside
  the loop the signal raises it where the program is. After the first signal's grace the
  run writes its partial summary.json and report.html (`engine.run.end_interrupted`); the
  app prints their table, records `status.json: interrupted` with the resume command and
  exits 128 + the signal's number (130, 143, 129, 140), without a traceback. SIGUSR2 is the
  warning SLURM sends a job of the SLURM launchers before its time limit (submitit's
  `--signal=USR2@<s>`), and SIGTERM what it sends at the limit or on scancel: either way the
  job ends resumable.
- An endpoint given up on (`model.health`: none of its first `runner.dead_endpoint_calls`
  attempts was a success, or none in `runner.dead_endpoint_s` after 3 failed attempts) halts
  the run (nothing more is sent) and ends it once its rows are recorded and the summary
  written: a judge's with `JudgeGaveNothing` (status `ungraded`, exit 5), a model's with
  `ModelGaveNothing` (status `failed`, exit 2); either line names the endpoint, what it
  answered (counted by kind), its last errors, and ends with the resume command.
- An output that cannot be written (disk full, read-only, no permission) is named by
  `failure_line`: what failed, on which path, what to do; the run is `failed` and exits 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TypeVar

from healthbench_exp.core.endpoint_errors import QuotaExhausted
from healthbench_exp.core.errors import OutputWriteError
from healthbench_exp.core.run_end import Exit, RunEnded, Status
from healthbench_exp.core.stop_signals import (
    LEAVE,
    STOP_COUNT,
    STOPPING_SIGNALS,
    Stop,
    signals_held_at_fork,
)
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.engine.grace import StopGrace
from healthbench_exp.model.health import EndpointHealth

if TYPE_CHECKING:
    from sys import UnraisableHookArgs

T = TypeVar("T")

WHY = {
    "SIGINT": " (Ctrl-C)",
    "SIGHUP": " (the terminal closed)",
    "SIGUSR2": " (SLURM's warning before the job's time limit)",
}
# errors of the file system a user fixes by freeing space, choosing a writable place or a permission
DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM}
PARENT_WATCH_S = 0.05  # between two looks at the parent's stop level, while a run waits


def signal_text(signum: int) -> str:
    """`SIGINT (Ctrl-C)`, `SIGTERM`, ...: the signal's name and what it means."""
    name = signal.Signals(signum).name
    return f"{name}{WHY.get(name, '')}"


class RunInterrupted(BaseException):
    """SIGINT, SIGTERM, SIGHUP or SIGUSR2 stopped the run. A BaseException, like
    KeyboardInterrupt, so that no `except Exception` on the way out mistakes it for a failure
    of the work. `summary`: the partial summary its run wrote (`engine.run`), for the CLI to
    print its table before the interrupted line (None: none was written)."""

    summary: RunSummary | None = None

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {signal_text(signum)}")

    status = Status.INTERRUPTED

    @property
    def exit_code(self) -> int:
        """The shell's convention for a process ended by a signal: 128 + its number."""
        return Exit.signalled(self.signum)

    def add(self, note: str) -> None:
        """Add `note` to the line that tells the stop (what it abandoned in flight, counted)."""
        self.args = (f"{self.args[0]}; {note}",)


# the stopping signals `signals_interrupt` raised as RunInterrupted in its scope: an exception
# raised while a finalizer or a weakref callback runs is printed and dropped by Python, so
# `interruptible` stops the run at its start for a signal whose exception never arrived
_received: list[int] = []
_scopes: list[None] = []  # the `signals_interrupt` scopes entered and not left, nested


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    """Raise RunInterrupted when the stop level rose (`core.stop_signals`): a signal that also
    came through the parent (a parallel sweep's job, a run of the bridge kit) counts once."""
    stop = STOP_COUNT.delivered(signum)
    if stop is None:
        return
    _received.append(stop.signum)
    raise RunInterrupted(stop.signum)


def _unraisable_hook(previous: Callable[[UnraisableHookArgs], object]) -> Callable[..., None]:
    """`sys.unraisablehook` that says nothing of a RunInterrupted Python dropped (raised while
    a finalizer or weakref callback ran: `_received` keeps it, and `interruptible` stops the
    run): a user saw "Exception ignored in: <WeakSet ...> ... RunInterrupted" on Ctrl-C.
    Every other unraisable exception goes on to `previous`."""

    def hook(unraisable: UnraisableHookArgs) -> None:
        if not isinstance(unraisable.exc_value, RunInterrupted):
            previous(unraisable)

    return hook


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within, the STOPPING_SIGNALS raise RunInterrupted in the main thread (elsewhere: nothing
    changes). The previous handlers are restored on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOPPING_SIGNALS}
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _unraisable_hook(previous_hook)
    for s in STOPPING_SIGNALS:
        signal.signal(s, _raise_interrupted)
    _scopes.append(None)
    try:
        yield
    finally:
        _scopes.pop()
        _received.clear()  # delivered, or the scope ended without a run to stop
        if not _scopes:  # the outermost scope: the next run starts counting afresh
            STOP_COUNT.reset()
        for s, handler in previous.items():
            signal.signal(s, handler)
        sys.unraisablehook = previous_hook


def leaving() -> bool:
    """Whether this process's stop level reached LEAVE (`core.stop_signals`: a second signal,
    or a parent's second): the run writes nothing more and leaves."""
    STOP_COUNT.noticed()
    return STOP_COUNT.acted >= LEAVE


def signals_held() -> contextlib.AbstractContextManager[None]:
    """Within, the STOPPING_SIGNALS wait (blocked in this thread) and arrive on exit: a short
    write that must be whole (an invocation's usage) is not cut by a second Ctrl-C (the one
    hold of `core.stop_signals`, as at a fork)."""
    return signals_held_at_fork()


@contextlib.contextmanager
def signal_handlers_kept() -> Iterator[None]:
    """Restore the Python-level STOPPING_SIGNALS handlers on exit: closing an event loop that had
    its own handlers resets them to the defaults."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            if handler is not None:
                signal.signal(s, handler)


async def interruptible(coroutine: Awaitable[T], grace: StopGrace | None = None) -> T:
    """Await `coroutine` as the loop's main task; a STOPPING_SIGNAL stops it, and once it has
    ended (every `finally` and `async with` run) RunInterrupted is raised.

    The stop level (`core.stop_signals`: the signals this process received, or its parent's
    level, whichever is higher) decides: at 1, with a `grace` (`engine.grace`), the run halts
    and lets the requests in flight answer: the task is cancelled when its grace ends, or when
    the level reaches 2 (a second signal), unless it ended first; without a grace (or nothing
    in flight) the stop cancels it at once. A signal that does not raise the level (one Ctrl-C
    reaching a job directly and through its parent) changes nothing. Another rise while it
    unwinds cancels again. A signal `signals_interrupt` received before, whose exception Python
    dropped (raised in a finalizer), or a parent already stopping, stops it before it starts."""
    task = asyncio.current_task()
    if threading.current_thread() is not threading.main_thread() or task is None:
        return await coroutine
    pending = STOP_COUNT.noticed()
    before = _received[0] if _received else (pending.signum if pending else None)
    if before is not None:
        if asyncio.iscoroutine(coroutine):
            coroutine.close()
        raise RunInterrupted(before)
    loop = asyncio.get_running_loop()
    received: list[int] = []

    timers: list[asyncio.TimerHandle] = []

    def on_stop(stop: Stop | None) -> None:
        if stop is None:  # counted already
            return
        first = not received
        received.append(stop.signum)
        if first and stop.level < LEAVE and grace is not None:
            wait = grace.begin(stop.signum, signal_text(stop.signum))
            if wait is not None:  # the task ends by itself once its rows in progress end
                timers.append(loop.call_later(wait, grace_over, grace))
                return
        task.cancel()

    def on_signal(signum: int) -> None:
        on_stop(STOP_COUNT.delivered(signum))

    watch: list[asyncio.TimerHandle] = []

    def watch_parent() -> None:  # the parent's level, looked at every PARENT_WATCH_S
        on_stop(STOP_COUNT.noticed())
        watch[:] = [loop.call_later(PARENT_WATCH_S, watch_parent)]

    def grace_over(grace: StopGrace) -> None:
        grace.ran_out()
        task.cancel()

    previous = {s: signal.getsignal(s) for s in STOPPING_SIGNALS}
    for s in STOPPING_SIGNALS:
        loop.add_signal_handler(s, on_signal, s)
    if STOP_COUNT.parent_file is not None:
        watch_parent()
    try:
        result = await coroutine
    except asyncio.CancelledError:
        if received:
            raise RunInterrupted(received[0]) from None
        raise
    finally:
        for timer in (*timers, *watch):
            timer.cancel()
        for s, handler in previous.items():
            loop.remove_signal_handler(s)  # this resets the handler to the default: restore
            if handler is not None:
                signal.signal(s, handler)
    # halted by the signal, its requests in flight answered: it ended by itself, complete
    # unless the halt held back a row or a call
    if received and (grace is None or not grace.answered_all()):
        raise RunInterrupted(received[0])
    return result


def _leaves(exc: BaseException | None) -> Iterator[BaseException]:
    """The exceptions inside (nested) exception groups, `exc` itself if it is none, and so on
    for the exceptions they were raised while handling."""
    if exc is None:
        return
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc
    yield from _leaves(exc.__context__)


def resume_hint(output_dir: Path) -> str:
    return f"python -m healthbench_exp resume={output_dir}"


class StoppedEarly(Exception):
    """An early stop raised once the run's outputs are written (`engine.run`): `summary` is what
    they hold, for the CLI to print its partial table (None until the run sets it)."""

    summary: RunSummary | None = None


class JudgeGaveNothing(RunEnded, StoppedEarly):
    """The judge endpoint was given up on: the run ends `ungraded` (exit 5), resumable (its
    line ends with the resume command)."""

    def __init__(self, line: str) -> None:
        super().__init__(line, Status.UNGRADED, Exit.UNGRADED)


class ModelGaveNothing(RunEnded, StoppedEarly):
    """The model endpoint was given up on: the run ends `failed` (exit 2), resumable (its line
    ends with the resume command)."""

    def __init__(self, line: str) -> None:
        super().__init__(line, Status.FAILED, Exit.REFUSED)


class QuotaStopped(QuotaExhausted, StoppedEarly):
    """An endpoint answered 429 `insufficient_quota` (`model.health`): the run was halted, what
    finished is recorded and summarized; it ends `failed` (exit 2) with what it spent and the
    resume command, as any quota stop."""


class FailureShareExceeded(RunEnded, StoppedEarly):
    """The failure-fraction stop halted the run (`engine.fraction_stop`): it ends with
    `run_outcome`'s status and exit code (`failed` 3 or `ungraded` 5), resumable."""


def raise_if_given_up(
    healths: dict[str, EndpointHealth], output_dir: Path, summary: RunSummary | None = None
) -> None:
    """Raise for the endpoint the run gave up on (the judge's first, then a jury member's: it
    halted the whole run too; then one that answered insufficient_quota), if any; the line
    says what this invocation spent and what was not run (from `summary`)."""
    graders = [h for name, h in healths.items() if name != "model" and h.dead]
    judge = healths.get("judge") if "judge" in healths and healths["judge"].dead else None
    judge = judge or (graders[0] if graders else None)
    model = healths.get("model")
    spent = spent_text(summary)
    if judge is not None and judge.dead:
        raise JudgeGaveNothing(
            f"stopped early: {judge.reason()}; {spent}what finished is recorded, the rest is "
            f"not run. Once it answers, finish with: {resume_hint(output_dir)}"
        )
    quota = next((h.quota for h in healths.values() if h.quota is not None), None)
    if quota is not None:
        raise QuotaStopped(
            f"stopped early: {quota}; {spent}what finished is recorded, the rest is not run"
        )
    if model is not None and model.dead:
        raise ModelGaveNothing(
            f"stopped early: {model.reason()}; {spent}what finished is recorded, the rest is "
            f"not run; then finish with: {resume_hint(output_dir)}"
        )


def spent_text(summary: RunSummary | None) -> str:
    """`spent $0.0123 in this invocation (model 4 calls, judge 30); 24 of 24 rows not run; `
    (a meta-eval's: `(judge 30 calls, <jury member> 28)`; '' without a summary)."""
    counts = summary.counts if summary is not None else None
    if summary is None or counts is None:
        return ""
    invocations = (summary.usage.invocations if summary.usage else None) or []
    cost = invocations[-1].total_cost_usd if invocations else None
    dollars = "an unknown sum (no price)" if cost is None else f"${cost:.4f}"
    if summary.is_meta_eval:  # no model: the judge's calls, and each jury member's
        jury = (invocations[-1].jury if invocations else None) or {}
        members = "".join(f", {name} {usage.requests}" for name, usage in jury.items())
        calls = f"judge {summary.meta_counts.judge_requests} calls{members}"
    else:
        eval_counts = summary.eval_counts
        calls = f"model {eval_counts.model_requests} calls, judge {eval_counts.judge_requests}"
    return (
        f"spent {dollars} in this invocation ({calls}); {counts.rows_not_run} of {counts.rows} "
        "rows not run; "
    )


def failure_line(exc: BaseException, output_dir: Path) -> str | None:
    """One line for a failure of the run's surroundings the user can fix (an output or cache
    that cannot be written), naming the path and what to do; None for anything else."""
    # the harness's own outputs first: they name their file
    leaves = sorted(_leaves(exc), key=lambda leaf: not isinstance(leaf, OutputWriteError))
    for leaf in leaves:
        if isinstance(leaf, OutputWriteError):
            path, error = leaf.path, leaf.error
        elif isinstance(leaf, OSError) and leaf.errno in DISK_ERRNOS:
            path, error = Path(leaf.filename or output_dir), leaf
        else:
            continue
        if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            what, fix = "cannot write", "free space on that disk (or choose another hydra.run.dir)"
        elif error.errno == errno.EROFS or isinstance(leaf, OutputWriteError):
            what, fix = "cannot write", "make it writable (or choose another hydra.run.dir)"
        else:  # EACCES / EPERM: reading or writing
            what, fix = "cannot access", "fix its permissions"
        return (
            f"{what} {path}: {error.strerror or error}; {fix}, then finish the run with: "
            f"{resume_hint(output_dir)}"
        )
    return None
