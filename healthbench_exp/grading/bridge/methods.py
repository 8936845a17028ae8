"""The bridge's estimators by `bridge.method` name (`core.bridged.METHODS`), and the refusal a
bridge meets before any request (from its pairs alone)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from healthbench_exp.core.bridged import CALIBRATION, LABEL_SHIFT
from healthbench_exp.grading.bridge.calibration import Calibration
from healthbench_exp.grading.bridge.cells import BridgeData, Pair
from healthbench_exp.grading.bridge.estimate import Counts, Estimator, cells_of
from healthbench_exp.grading.bridge.label_shift import LabelShift

ESTIMATORS: dict[str, Estimator] = {LABEL_SHIFT: LabelShift(), CALIBRATION: Calibration()}


def bridge_refusal(pairs: Sequence[Pair], method: str) -> str | None:
    """The estimator's refusal of the bridge `pairs` (the run not yet known); None: usable."""
    cells = cells_of([], pairs)
    n, k = BridgeData.of(pairs, cells).counts()
    return ESTIMATORS[method].refusal(cells, Counts(n, k, np.zeros(len(n)), np.zeros(len(n))))
