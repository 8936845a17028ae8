"""`python -m healthbench_exp`: run one job, or a sweep with `-m` (the Hydra app is `cli.app`).

Python's cyclic garbage collector is off from here until the engine's `steady_collector` takes
over: start-up (imports, Hydra's config, reading the rows) allocates millions of objects and
frees few of them in cycles, so its collections (full ones included, each scanning everything
loaded so far) find next to nothing, and cost about 0.3 s of CPU per run. `steady_collector`
collects once, freezes what start-up made, and runs the collector while requests fly.

When the job (or sweep) is over, everything left is frozen too: the interpreter's exit then
frees it by reference counting without scanning it for cycles first (its collections cost
another 0.3 s of CPU, in a process whose outputs are all written and closed by then).

Standard output and error that no one reads are guarded first (`core.standard_streams`).

A stopping signal (SIGINT, SIGTERM, SIGHUP, SIGUSR2) from the first line on ends the program
with one line and 128 + its number, never a traceback: during the imports and the argument
checks, before a run starts, it stops here (`StartUpStopped`); from then on the app's own
handlers (`engine.stops.signals_interrupt`) take over, and restore these when they end.
"""

import gc
import signal
import sys
from types import FrameType

from healthbench_exp.core.run_end import Exit  # an enum: nothing more is imported

gc.disable()


class StartUpStopped(BaseException):
    """A stopping signal before the app's own handlers were in place: nothing was run."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_received: list[int] = []  # the stopping signals seen before the app's handlers took over


def _stopped(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)  # kept: an import's cleanup callback can swallow the exception
    raise StartUpStopped(signum)


_SIGNALS = [
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR2")
    if hasattr(signal, name)  # SIGHUP and SIGUSR2: not on Windows
]
_WHY = {"SIGINT": " (Ctrl-C)", "SIGHUP": " (the terminal closed)"}


def _tell(stop: StartUpStopped) -> None:
    name = signal.Signals(stop.signum).name
    print(f"interrupted by {name}{_WHY.get(name, '')}", file=sys.stderr)
    raise SystemExit(Exit.signalled(stop.signum)) from None


def _unraisable(unraisable: "sys.UnraisableHookArgs") -> None:
    if not isinstance(unraisable.exc_value, StartUpStopped):  # that one is in `_received`
        sys.__unraisablehook__(unraisable)


if __name__ == "__main__":
    sys.unraisablehook = _unraisable
    for _signum in _SIGNALS:
        if signal.getsignal(_signum) is not signal.SIG_IGN:  # nohup's SIGHUP stays ignored
            signal.signal(_signum, _stopped)
try:
    from healthbench_exp.core import standard_streams

    # output no one reads (`| head -3`, a terminal gone, `>&-`) never stops the run: before
    # anything opens a file (which could take a closed standard descriptor's number)
    standard_streams.guard()

    from healthbench_exp.cli.app import main  # after the collector is off

    if _received:  # a signal whose exception an import's callback swallowed
        raise StartUpStopped(_received[0])
    if __name__ == "__main__":
        try:
            main()
        finally:
            gc.freeze()
except StartUpStopped as stop:
    _tell(stop)
