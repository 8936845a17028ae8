"""The bridge (SPEC 7.5, docs/bridge.md): a run graded by a new judge N, rescored on the
reference grader O's scale through bridge data (criteria both judges graded on the same replies).

Where each part lives:

- `cells`: the data: the pairs (`Pair`), the run's rows (`RunRow`), strata and their cells, the
  pairs as arrays (`BridgeData`, from records or, for the study, from arrays) and their
  resampling (by pair, or by example).
- `estimate`: what every estimator shares: what it sees (`Counts`), what it is (`Estimator`),
  the layout of the bridged metrics, the bootstrap (`bootstrap`, which the study calls too:
  one implementation) and `bridge_run`.
- `rates`: the formulas written once: Jeffreys' share, se and sp, Rogan-Gladen (shared with
  the calibrated consensus rates, `grading.calibration`).
- `label_shift` (the default, `LabelShift`) and `calibration` (`Calibration`): the estimators;
  `methods`: them by `bridge.method` name (`ESTIMATORS`) and the refusal a bridge meets from its
  pairs alone (`bridge_refusal`).
- `checks`: the bridge checked on its own held-out examples (`holdout_error`) and the spread of
  what the method holds fixed between sources (`spread`); `leave_one_out`: each source left out
  and bridged from the others (`leave_one_out`); `rare`: strata whose verdict rare in the
  bridge a run (or, in the kit's check, a source left out) gives far more often
  (`rare_verdicts`, `rare_by_source`).

Around it, outside this package: its record (`core.bridged`), its sources read and checked
(`tasks.bridge_source`), the record assembled for summary.json (`tasks.bridge_result`), its
presentation (`output.bridged_text`, `output.html.bridged`, `sweep.bridged`) and its simulation
study (`bench/bridge_simulation.py`, printed by `bench/bridge_study.py`). This package imports
only `core`, numpy and the standard library (tests/test_architecture.py).
"""

from healthbench_exp.grading.bridge.cells import Pair, RunRow, stratum_of
from healthbench_exp.grading.bridge.checks import holdout_error, spread
from healthbench_exp.grading.bridge.estimate import BridgeRefused, Bridging, Estimator, bridge_run
from healthbench_exp.grading.bridge.leave_one_out import leave_one_out
from healthbench_exp.grading.bridge.methods import ESTIMATORS, bridge_refusal
from healthbench_exp.grading.bridge.rare import rare_by_source, rare_verdicts

__all__ = [
    "ESTIMATORS",
    "BridgeRefused",
    "Bridging",
    "Estimator",
    "Pair",
    "RunRow",
    "bridge_refusal",
    "bridge_run",
    "holdout_error",
    "leave_one_out",
    "rare_by_source",
    "rare_verdicts",
    "spread",
    "stratum_of",
]
