"""`bridge.*`: the bridge sources an eval run is rescored through (`tasks.bridge_source`), and
the estimator that does it."""

from __future__ import annotations

from dataclasses import dataclass, field

from healthbench_exp.core.bridged import LABEL_SHIFT, METHODS


@dataclass
class BridgeConfig:
    """The bridged score (docs/bridge.md), reported beside the run's own metrics.

    `runs`: finished eval runs holding verdicts of both the reference grader and this run's
    judge on the same replies: a jury run with both (`judge=gpt41 jury=[<this judge>]`), or a
    regrade (`regrade=<a gpt-4.1 run> judge=<this judge>`, named by the regrade's directory).
    Empty: no bridge. `method`: `label_shift` (the new judge's error rates against the
    reference grader carried over to the run's model) or `calibration` (q = P(reference met |
    new judge's verdict) carried over: right only for replies like the bridge's)."""

    # finished runs with verdicts of the reference grader and this run's judge on the same replies
    # (jury runs or regrades): the bridged score beside the run's own; empty: no bridge
    runs: list[str] = field(default_factory=list)
    # label_shift: the judge's error rates carried over (any model); calibration: q carried over
    # (only for replies like the bridge's)
    method: str = LABEL_SHIFT


def method_problem(bridge: BridgeConfig) -> str | None:
    """`bridge.method` naming no estimator: one line naming the valid ones; else None."""
    if bridge.method in METHODS:
        return None
    return f"bridge.method must be one of {', '.join(METHODS)}, got {bridge.method!r}"
