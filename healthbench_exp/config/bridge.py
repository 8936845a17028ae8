"""`bridge.*`: the bridge sources an eval run is rescored through (`tasks.bridge_source`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class BridgeConfig:
    """The bridged score (docs/bridge.md), reported beside the run's own metrics.

    `runs`: finished eval runs holding verdicts of both the reference grader and this run's
    judge on the same replies: a jury run with both (`judge=gpt41 jury=[<this judge>]`), or a
    regrade (`regrade=<a gpt-4.1 run> judge=<this judge>`, named by the regrade's directory).
    Empty: no bridge."""

    # finished runs with verdicts of the reference grader and this run's judge on the same replies
    # (jury runs or regrades): the bridged score beside the run's own; empty: no bridge
    runs: list[str] = field(default_factory=list)
