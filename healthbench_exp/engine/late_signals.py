"""A stopping signal that comes once a run's work is done: the run is complete, and its outputs
are written whole before anything else happens.

From the moment the evaluation ended by itself (every row recorded, or every call in flight at
a signal answered within its grace, `engine.grace`) until the sinks have finished (summary.json,
report.html, the W&B run), the first STOPPING_SIGNAL does not cut the writing short: it is said
on the console and kept, the outputs finish, the run ends `completed`, and the CLI then stops
what comes after it (the next jobs of a sweep) as the signal asks. A second signal leaves at
once (RunInterrupted), as everywhere else.
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

from healthbench_exp.engine.stops import STOPPING_SIGNALS, RunInterrupted, signal_text

log = logging.getLogger(__name__)

# the signal a completed run kept (`DeferredSignals.end`), for the CLI to act on once the run's
# ending is recorded (`take_kept`)
_kept: list[int] = []


class DeferredSignals:
    """The stopping signals of one run's last stretch (see the module docstring): `begin` once
    the work is done, `end` once the outputs are written (or the run failed)."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.previous: dict[int, object] = {}

    def begin(self, already: int | None = None) -> None:
        """Defer the stopping signals (main thread only); `already`: the signal whose grace the
        run's calls all answered in, which counts as the first."""
        if already is not None:
            self.received.append(already)
            log.warning(
                "%s came as the last rows ran: every call answered within the grace, the run "
                "is complete; writing its outputs",
                signal_text(already),
            )
        if threading.current_thread() is not threading.main_thread() or self.previous:
            return
        self.previous = {s: signal.getsignal(s) for s in STOPPING_SIGNALS}
        for s in STOPPING_SIGNALS:
            signal.signal(s, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)
        if len(self.received) > 1:
            raise RunInterrupted(signum)
        again = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        log.warning(
            "%s as the run writes its outputs: the run is complete, its outputs finish first; "
            "%s again to leave now",
            signal_text(signum),
            again,
        )

    def end(self, complete: bool) -> None:
        """Restore the handlers (a no-op if not begun or already ended); a `complete` run keeps
        the first signal for `take_kept`."""
        for s, handler in self.previous.items():
            signal.signal(s, handler)  # type: ignore[arg-type]
        self.previous = {}
        if complete and self.received:
            _kept.append(self.received[0])
        self.received = []


def take_kept() -> int | None:
    """The stopping signal a completed run received as it finished (None: none), once."""
    signum = _kept[0] if _kept else None
    _kept.clear()
    return signum
