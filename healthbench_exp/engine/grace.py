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
from collections.abc import Sequence

from healthbench_exp.model.endpoint import ChatEndpoint
from healthbench_exp.model.health import Halt

log = logging.getLogger(__name__)


class StopGrace:
    """One run's grace for its requests in flight at a stopping signal (see the module
    docstring): `grace_s` seconds (0: none, the run is cancelled at once); `attach`ed to the
    run's endpoints once they are open."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.endpoints: Sequence[ChatEndpoint] = ()
        self.halt: Halt | None = None
        self.signum: int | None = None  # the stopping signal whose grace began

    def attach(self, endpoints: Sequence[ChatEndpoint], halt: Halt) -> None:
        """Watch these endpoints (the run's, open) and halt the run through `halt`."""
        self.endpoints, self.halt = endpoints, halt

    def in_flight(self) -> int:
        """The requests sent and not answered yet, over every endpoint of the run."""
        return sum(endpoint.stats.in_flight for endpoint in self.endpoints)

    def begin(self, signum: int, why: str) -> float | None:
        """The first stopping signal (`signum`; `why`: what it means): halt the run and say so
        on the console; return how long to wait for the requests in flight, or None to leave
        at once (no grace, nothing in flight, or the endpoints not open yet)."""
        if self.halt is not None:
            self.halt.leave(f"the run is stopping on {why}")
        count = self.in_flight()
        if not self.grace_s or not count or self.halt is None:
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
