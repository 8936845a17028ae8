"""A parallel sweep (`hydra/launcher=parallel`: joblib's worker processes) stops as a sequential
one does: every started job `interrupted` with its usage recorded and its lock released, the
jobs not started listed with their overrides, the finish commands last.

Left alone, a stopping signal in the sweep's main process aborts joblib's pool, which kills the
workers mid-job (status.json left `running`, a stale `.lock`, nothing of the job's spend
recorded, "leaked semaphore objects"). So `ParallelStopCallback` (registered in
`conf/config.yaml`) gives the main process, for the sweep, a handler that passes its stop level
on (`core.stop_signals`' one rule): it writes the level to `<sweep dir>/.stopping`, which the
workers find in their environment (a job that starts after it removes its folder and returns;
a job running takes its level as max(its own signals, this level), so a Ctrl-C or a
`kill -INT/-TERM -PGID` that reached it directly too counts once). Each job ends as
interrupted once its requests in flight answered (`engine.grace`) and returns; joblib's pool
then ends as usual, and the callback's `on_multirun_end` writes the sweep's summary
(`tell_sweep`) and exits 128 + the signal's number. A second signal does not wait for the
jobs: level 2 is passed on (each job leaves at once, its requests in flight counted as
abandoned) and ends the sweep at once (`cli.app.main` still writes the summary).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from pathlib import Path
from types import FrameType

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from healthbench_exp.core.stop_signals import (
    LEAVE,
    STOP_COUNT,
    STOP_LEVEL_ENV,
    STOPPING_SIGNALS,
    pass_on,
)
from healthbench_exp.engine.stops import RunInterrupted, signals_held
from healthbench_exp.sweep.aggregate import tell_sweep

STOP_MARKER = ".stopping"

_stopping: list[Path] = []  # the sweep directory of this process's sweep, once begun
_received: list[int] = []  # the stopping signal the sweep received, once it has


def is_parallel(launcher: DictConfig) -> bool:
    """Whether a sweep's launcher runs its jobs in worker processes of this machine (joblib)."""
    return "joblib" in str(launcher.get("_target_", ""))


def ignore_between_jobs() -> None:
    """In a worker process of a parallel sweep: the STOPPING_SIGNALS are ignored outside its
    jobs (each job handles them while it runs, `signals_interrupt`), so that a Ctrl-C between two
    jobs does not break the pool: the main process ends the sweep."""
    for s in STOPPING_SIGNALS:
        signal.signal(s, signal.SIG_IGN)


def stopping(sweep_dir: Path) -> bool:
    """Whether the sweep in `sweep_dir` is being stopped: a job starting now must not run."""
    return (sweep_dir / STOP_MARKER).exists()


def discard_job(output_dir: Path) -> None:
    """Remove the folder Hydra made for a job that starts after its sweep was stopped: it never
    ran (the sweep's summary lists it as not started, from multirun.yaml)."""
    shutil.rmtree(output_dir, ignore_errors=True)


def stopped_sweep() -> Path | None:
    """The sweep directory of the sweep this process ran when a signal stopped it (None: no
    sweep had begun), its stop mark removed: a parallel one, or a sequential one stopped
    between two jobs."""
    if not _stopping:
        return None
    with contextlib.suppress(OSError):
        (_stopping[0] / STOP_MARKER).unlink()
    return _stopping[0]


def stop_jobs(signum: int, frame: FrameType | None) -> None:
    """The main process's handler for the STOPPING_SIGNALS during a parallel sweep: when its
    stop level rose, mark the sweep stopping with that level, which the workers' jobs take as
    theirs (the pool goes on to its end, each job ending once its requests in flight answered,
    `engine.grace`); at level 2 (a second signal: each job leaves at once, counting what it
    abandons) raise RunInterrupted."""
    stop = STOP_COUNT.delivered(signum)
    if stop is None:
        return
    _received.append(stop.signum)
    pass_on(_stopping[0] / STOP_MARKER, stop.level, stop.signum)
    if stop.level >= LEAVE:
        raise RunInterrupted(stop.signum)


class ParallelStopCallback(Callback):
    """Installs `stop_jobs` in the main process of a parallel sweep, and once the sweep it
    stopped ends, tells it and exits (see the module docstring). Registered after the sweep
    summary's callback: Hydra calls the end callbacks in reverse order, so this one first."""

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        _stopping[:] = [Path(config.hydra.sweep.dir)]  # a sequential one's too (`stopped_sweep`)
        _received.clear()
        if not is_parallel(config.hydra.launcher):
            return
        with contextlib.suppress(OSError):  # left by a sweep killed as it stopped (kill -9)
            (_stopping[0] / STOP_MARKER).unlink()
        # the workers joblib starts from now take the sweep's stop level from its marker
        os.environ[STOP_LEVEL_ENV] = str(_stopping[0] / STOP_MARKER)
        for s in STOPPING_SIGNALS:
            signal.signal(s, stop_jobs)

    def on_multirun_end(self, config: DictConfig, **kwargs: object) -> None:
        os.environ.pop(STOP_LEVEL_ENV, None)
        sweep_dir = stopped_sweep() if _received else None
        if sweep_dir is None:
            return
        stop = RunInterrupted(_received[0])
        print(f"{stop}", file=sys.stderr)
        with signals_held():
            tell_sweep(sweep_dir)
        raise SystemExit(stop.exit_code)
