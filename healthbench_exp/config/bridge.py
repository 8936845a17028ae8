"""`bridge.*`: the bridge sources an eval run is rescored through (`tasks.bridge_source`), and
the estimator that does it (`BridgeMethod`, an Enum Hydra checks: a name that is none of its
values is refused at composition, one line, exit 2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from healthbench_exp.core.bridged import CALIBRATION, LABEL_SHIFT


class BridgeMethod(Enum):
    """`bridge.method`: the estimator, by its name in `grading.bridge.ESTIMATORS` (the value)."""

    # the new judge's error rates against the reference grader carried over (any model)
    label_shift = LABEL_SHIFT
    # q = P(reference met | new judge's verdict) carried over (only for replies like the bridge's)
    calibration = CALIBRATION


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
    method: BridgeMethod = BridgeMethod.label_shift
