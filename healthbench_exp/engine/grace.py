"""The requests in flight at a stopping signal: their answers are waited for, briefly.

A request in flight has been sent: the endpoint does the work (and bills it) whether or not its
reply is read. So the first stopping signal (SIGINT, SIGTERM, SIGHUP, SIGUSR2) does not cancel
the run at once: `StopGrace.begin` halts it (`model.health.Halt.leave`: nothing new is sent to
any endpoint, no retry, no row starts) and the requests already in flight get
`runner.stop_grace_s` seconds to answer. Their replies are recorded as usual (usage counted,
the response cache written, so a resume replays them free; a row whose judge calls were never
sent ends `not run` with its model reply kept). Once every row in progress has ended, or the
grace is over, or a second signal came, the run stops as any interrupted run does
(`engine.stops.interruptible`). A request still unanswered then is cancelled and counted as
abandoned in flight, with an estimate of its cost (`model.costs`). A run whose rows had all
started and whose calls all answered within the grace is complete: it ends as completed
(`answered_all`).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable

from healthbench_exp.model.health import Halt

log = logging.getLogger(__name__)


class StopGrace:
    """One run's grace for its requests in flight at a stopping signal (see the module
    docstring): `grace_s` seconds (0: none, the run is cancelled at once); `halt` is the run's
    stop, `in_flight` counts the requests sent and not answered yet over every endpoint of the
    run (0 while none is open). Part of the run's `engine.control.RunControl`, made with it."""

    def __init__(self, grace_s: float, halt: Halt, in_flight: Callable[[], int]) -> None:
        self.grace_s = grace_s
        self.halt = halt
        self.in_flight = in_flight
        self.signum: int | None = None  # the stopping signal whose grace began

    def begin(self, signum: int, why: str) -> float | None:
        """The first stopping signal (`signum`; `why`: what it means): halt the run and say so
        on the console; return how long to wait for the requests in flight, or None to leave
        at once (no grace, or nothing in flight: the endpoints not open yet, or idle)."""
        self.halt.leave(f"the run is stopping on {why}")
        count = self.in_flight()
        if not self.grace_s or not count:
            return None
        again = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        log.warning(
            "stopping on %s: nothing new is sent; %d request%s in flight, waiting up to %g s "
            "for their answers (already paid); %s again to leave now",
            why,
            count,
            "" if count == 1 else "s",
            self.grace_s,
            again,
        )
        self.signum = signum
        return self.grace_s

    def ran_out(self) -> None:
        """Say that the grace ended before the requests in flight all answered: how many are
        abandoned (the run leaves now; each is counted, its cost estimated)."""
        count = self.in_flight()
        log.warning(
            "the %g s grace ended: leaving now; %d request%s still in flight abandoned (counted "
            "as abandoned, cost estimated)",
            self.grace_s,
            count,
            "" if count == 1 else "s",
        )

    def answered_all(self) -> bool:
        """Whether a stopping signal's grace began and the run then ended by itself with nothing
        held back (`model.health.Halt.held_back`): every row had started and each of their
        calls was sent and answered within the grace, so the run is complete, not cut short."""
        return self.signum is not None and self.halt is not None and not self.halt.held_back
