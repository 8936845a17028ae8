"""The stopping signals: which they are, how a child process is started so that one signal
reaches the harness once, and the one rule by which a stop is passed on to a child.

- `STOPPING_SIGNALS` (SIGINT, SIGTERM, SIGHUP, SIGUSR2) stop a run (`engine.stops`).
- `start_child` starts every child the harness starts (a W&B worker, the built-in endpoint, a
  served model's server, a run of the bridge kit): the fork holds the stopping signals, and the
  child gives them its own dispositions before it unblocks them, so a signal to the process
  group while the child is forked reaches the harness once, on its own handler (the child's
  copy of that handler would write it to the harness's event-loop wakeup fd: seen twice).
- The pass-on rule: a process that runs jobs in children (a parallel sweep's main process, the
  bridge kit) passes on its stop LEVEL, never a raw signal. Its level is the number of stopping
  signals it received (1: stop, each job within its grace; 2 or more: leave now); it writes it,
  with the first signal's number, to a small file whose path its children find in
  `STOP_LEVEL_ENV` (`pass_on`). A child's level is the larger of its own count and its
  parent's (`StopCount`), and the child acts when its level rises: a signal that reaches a job
  both directly (the terminal's Ctrl-C, `kill -INT/-TERM -PGID`, SLURM's scancel) and through
  its parent counts once, wherever it landed first; a second real signal still raises the
  level (leave).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from healthbench_exp.core.lifeline import preexec_die_with_parent

STOPPING_SIGNALS: tuple[int, ...] = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR2")
    if hasattr(signal, name)
)  # SIGHUP and SIGUSR2: not on Windows
# what a terminal sends its whole foreground process group: Ctrl-C, and SIGHUP when it closes
TERMINAL_STOPS: tuple[int, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGHUP") if hasattr(signal, name)
)
# the path of the file in which a child's parent writes its stop level (`pass_on`)
STOP_LEVEL_ENV = "HEALTHBENCH_STOP_LEVEL_FILE"
LEAVE = 2  # the level at which a job leaves without waiting for its calls in flight


@contextlib.contextmanager
def signals_held_at_fork() -> Iterator[None]:
    """Within, the calling thread holds (blocks) the STOPPING_SIGNALS: a signal to the group
    while a child is forked waits for the parent (delivered once, on exit) and, in the child,
    meets the dispositions its preexec (`child_preexec`) sets."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - Windows
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def child_preexec(ignoring: Sequence[int], die_with_parent: bool) -> Callable[[], None]:
    """For `Popen(preexec_fn=...)` inside `signals_held_at_fork`: the child ignores `ignoring`
    from its birth (an ignored disposition outlives exec, and Python leaves an ignored SIGINT
    ignored), so a signal to the whole group while it starts up cannot end it (the harness
    stops it); the other stopping signals get their default disposition (as exec would give
    them) before the child unblocks them; with `die_with_parent`, the kernel sends it SIGTERM
    when the harness dies (`core.lifeline`)."""

    def preexec() -> None:  # pragma: no cover - in the child between fork and exec
        for signum in STOPPING_SIGNALS:
            signal.signal(signum, signal.SIG_IGN if signum in ignoring else signal.SIG_DFL)
        if die_with_parent:
            preexec_die_with_parent()
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING_SIGNALS)

    return preexec


def start_child(
    command: Sequence[str],
    *,
    ignoring: Sequence[int] = (),
    die_with_parent: bool = False,
    **popen: Any,
) -> subprocess.Popen[Any]:
    """`subprocess.Popen(command, **popen)`, forked with the stopping signals held: the child
    starts ignoring `ignoring` (a helper the harness stops itself: `TERMINAL_STOPS` and
    SIGTERM) and with the default disposition of the others (see `child_preexec`)."""
    with signals_held_at_fork():
        return subprocess.Popen(
            list(command), preexec_fn=child_preexec(tuple(ignoring), die_with_parent), **popen
        )


class Stop(NamedTuple):
    """A rise of a process's stop level: the level now, and the signal it reports (the first
    this process, or its parent, received: its exit code is 128 + its number)."""

    level: int
    signum: int


def read_level(path: Path) -> tuple[int, int | None]:
    """The level and first signal `pass_on` wrote to `path`; (0, None) while it wrote none."""
    try:
        level, signum = path.read_text(encoding="ascii").split()
        return int(level), int(signum)
    except (OSError, ValueError):
        return 0, None


def pass_on(path: Path, level: int, signum: int) -> None:
    """Tell the children that read `path` (`STOP_LEVEL_ENV`) that their parent's stop level is
    `level`, after `signum` (its first signal): written whole (a reader never sees half)."""
    partial = path.with_name(path.name + ".partial")
    with contextlib.suppress(OSError):
        partial.write_text(f"{level} {signum}\n", encoding="ascii")
        os.replace(partial, path)


def level_env(path: Path) -> dict[str, str]:
    """The environment of a child that takes its parent's stop level from `path`."""
    return {**os.environ, STOP_LEVEL_ENV: str(path)}


@dataclass
class StopCount:
    """This process's stop level: max(the stopping signals it received, its parent's level,
    read from `parent_file`), and the highest level it acted on. `delivered` and `noticed`
    return a `Stop` when the level rose (act on it), None when it did not (a signal already
    counted: the same one, delivered both directly and through the parent)."""

    parent_file: Path | None = None
    own: int = 0
    acted: int = 0
    first_signal: int | None = None

    def parent(self) -> tuple[int, int | None]:
        """The parent's level and first signal; (0, None) without a parent that passes on."""
        return (0, None) if self.parent_file is None else read_level(self.parent_file)

    def _rise(self, signum: int | None) -> Stop | None:
        parent_level, parent_signal = self.parent()
        level = max(self.own, parent_level)
        if level <= self.acted:
            return None
        self.acted = level
        if self.first_signal is None:
            self.first_signal = signum if signum is not None else parent_signal
        assert self.first_signal is not None
        return Stop(level, self.first_signal)

    def delivered(self, signum: int) -> Stop | None:
        """A stopping signal reached this process."""
        self.own += 1
        return self._rise(signum)

    def noticed(self) -> Stop | None:
        """A look at the parent's level (polled while a run waits on its calls)."""
        return self._rise(None) if self.parent_file is not None else None

    def reset(self) -> None:
        """Forget the signals received (a run's signal scope ended)."""
        self.own = self.acted = 0
        self.first_signal = None


def _parent_file() -> Path | None:
    path = os.environ.get(STOP_LEVEL_ENV)
    return Path(path) if path else None


# this process's count; its parent's file as it was when this process started (a parallel
# sweep's main process names its own file to its workers afterwards)
STOP_COUNT = StopCount(_parent_file())
