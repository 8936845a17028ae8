"""A run's control state, in one place: what stops it and what it has counted so far.

`RunControl` is made once, where the run starts (`engine.run.run`, once the endpoints' URLs
are known), and handed to what needs it: the roles' endpoints get its `halt` and each one's
health at construction (`model.roles.open_roles`), the loop checks its failure-fraction stop
after each row (`engine.loop`), the signal handling gets its `grace` (`engine.stops.
interruptible`), and the run reads its `counters` however the evaluation ended (a signal, an
error: what was paid is still the run's).

What stops a run, each through the one `halt` (`model.health.Halt`: once set, no request is
sent to any endpoint, no row starts):

- an endpoint given up on (`healths`, one `model.health.EndpointHealth` per watched role);
- the failure-fraction stop (`fraction`, `engine.fraction_stop`);
- the budget (`model.costs.Budget`, which sets the endpoints' shared halt when it refuses);
- a stopping signal (`grace`, `engine.grace`: the requests in flight get their grace).

After the summary is written, `raise_if_stopped` raises the run's ending for the first two.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from healthbench_exp.config.schema import RunnerConfig
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.engine.fraction_stop import FractionStop, raise_if_over_fraction
from healthbench_exp.engine.grace import StopGrace
from healthbench_exp.engine.stops import raise_if_given_up
from healthbench_exp.model.access import OPENAI_DEFAULT_URL
from healthbench_exp.model.clock import Clock
from healthbench_exp.model.endpoint import ChatEndpoint
from healthbench_exp.model.health import EndpointHealth, Halt
from healthbench_exp.model.roles import Counters, Roles


class RunControl:
    """One run's stop, its watches and its counters (see the module docstring).

    `runner`: the thresholds (dead endpoint, failure fraction, grace); `roles` and `urls`: the
    endpoints the run talks to (a batched judge is never declared dead, its replies come when
    the batch ends; its 429 `insufficient_quota` halts the run as any endpoint's); `criteria`:
    every criterion the run's rows send to the judge; `kind`: the task's (`eval` |
    `meta_eval`); `clock`: the run's one clock, through its whole request path."""

    def __init__(
        self,
        runner: RunnerConfig,
        roles: Roles,
        urls: Mapping[str, str | None],
        criteria: int,
        kind: str,
        clock: Clock,
    ) -> None:
        self.halt = Halt()
        self.clock = clock  # the run's one clock: its endpoints' and their health's
        self.healths: dict[str, EndpointHealth] = {
            name: EndpointHealth(
                name,
                urls[name] or OPENAI_DEFAULT_URL,
                0 if role.batch else runner.dead_endpoint_calls,  # 0: never declared dead
                0 if role.batch else runner.dead_endpoint_s,
                self.halt,
                clock=clock.now,
            )
            for name, role in roles.needed.items()
        }
        self.fraction = FractionStop(
            criteria, runner.max_failure_fraction, self.halt, self.healths, kind
        )
        self.max_failure_fraction = runner.max_failure_fraction
        self.grace = StopGrace(runner.stop_grace_s, self.halt, self.in_flight)
        # the roles' counters (`model.roles.OpenRoles.stats`) as the evaluation last left them:
        # None until it has ended, however it ended
        self.counters: Counters | None = None
        self._open: Sequence[ChatEndpoint] = ()  # the endpoints while they are open

    @contextlib.contextmanager
    def watching(self, endpoints: Sequence[ChatEndpoint]) -> Iterator[None]:
        """Within, `in_flight` counts the requests of `endpoints` (the run's, open)."""
        self._open = endpoints
        try:
            yield
        finally:
            self._open = ()

    def in_flight(self) -> int:
        """The requests sent and not answered yet, over every open endpoint of the run."""
        return sum(endpoint.stats.in_flight for endpoint in self._open)

    def counted(self, counters: Counters) -> None:
        """The roles' counters at the evaluation's end (kept for a run cut short)."""
        self.counters = counters

    def raise_if_stopped(self, output_dir: Path, summary: RunSummary) -> None:
        """Raise the ending of a run an endpoint given up on or the failure-fraction stop
        halted (`engine.stops.raise_if_given_up`, `engine.fraction_stop.
        raise_if_over_fraction`), once what finished is written; nothing otherwise."""
        raise_if_given_up(self.healths, output_dir, summary)
        raise_if_over_fraction(self.fraction, output_dir, summary, self.max_failure_fraction)
