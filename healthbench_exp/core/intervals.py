"""The percentile interval of a bootstrap, written once for every figure that reports one.

`percentile_interval(values, level)`: the ((1 - level) / 2)th and ((1 + level) / 2)th
percentiles of `values` (the 2.5th and 97.5th at the default 0.95), each by linear
interpolation between the two nearest order statistics (numpy's default `method="linear"`:
index (n - 1) * p / 100, to the last bit), as an `Interval` with named ends (like scipy's
`BootstrapResult.confidence_interval`). Standard library only (the `core` layer): any
sequence of floats, numpy arrays included.

`BootstrapResult`: what a bootstrap returns, named (as scipy.stats' `bootstrap` names its
result): the estimate on the data, the percentile interval of the draws and the draws'
standard deviation. summary.json and the reports write it flat (`name`, `name:ci_low`,
`name:ci_high`, `name:bootstrap_std`; a row's `ci_low` / `ci_high`), an interval as [low, high].
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LEVEL = 0.95  # the reports' intervals: 95%
Z95 = 1.96  # the normal quantile of a 95% interval, as every report writes it


@dataclass(frozen=True)
class Interval:
    """A bootstrap interval: its lower and upper end."""

    low: float
    high: float

    def as_list(self) -> list[float]:
        """[low, high], as summary.json writes an interval."""
        return [self.low, self.high]

    def covers(self, value: float) -> bool:
        """Whether `value` lies within the interval, ends included."""
        return self.low <= value <= self.high


@dataclass(frozen=True)
class BootstrapResult:
    """A bootstrap's result: `estimate` (the statistic on the data itself), `interval` (the
    central percentile interval of the draws' statistics, `percentile_interval`) and `std` (the
    draws' standard deviation, ddof 0, as numpy's `std`); `draws`: how many statistics it is
    computed from (resamples where the statistic was undefined are left out)."""

    estimate: float
    interval: Interval
    std: float
    draws: int

    @classmethod
    def of_draws(
        cls, estimate: float, draws: Iterable[float], level: float = LEVEL
    ) -> BootstrapResult:
        """The result of `draws` (the statistic of each resample; not empty) around `estimate`."""
        values = [float(v) for v in draws]
        interval = percentile_interval(values, level)
        return cls(estimate, interval, statistics.pstdev(values), len(values))


def normal_interval(center: float, std: float, z: float = Z95) -> Interval:
    """center +- z * std (a bootstrap's standard deviation), clipped to [0, 1]: the interval of
    every score the reports show (the headline's, and the bridged score's since SPEC 7.5
    revision 2)."""
    return Interval(max(0.0, center - z * std), min(1.0, center + z * std))


def percentile(ordered: Sequence[float], share: float) -> float:
    """The `share` quantile (0 to 1) of the ascending `ordered` values, numpy's `linear`
    method: index h = (n - 1) * share, then x[floor h] + (x[floor h + 1] - x[floor h]) * g, g
    the fraction of h (from the upper neighbour, x[up] - diff * (1 - g), where g >= 0.5, as
    numpy computes it)."""
    last = len(ordered) - 1
    index = last * share
    below = math.floor(index)
    if index >= last:
        return float(ordered[last])
    low, high = float(ordered[below]), float(ordered[below + 1])
    fraction = index - below
    diff = high - low
    return high - diff * (1 - fraction) if fraction >= 0.5 else low + diff * fraction


def percentile_interval(values: Iterable[float], level: float = LEVEL) -> Interval:
    """The central `level` percentile interval of `values` (see the module docstring); `values`
    must not be empty."""
    ordered = sorted(float(v) for v in values)
    if not ordered:
        raise ValueError("percentile_interval of no values")
    tail = (100 - 100 * level) / 2  # 2.5 at 0.95, exactly
    return Interval(percentile(ordered, tail / 100), percentile(ordered, (100 - tail) / 100))
