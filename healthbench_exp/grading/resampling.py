"""The bootstrap's resampling, written once: rows drawn with replacement, a statistic of each
resample, the result named (`core.intervals.BootstrapResult`).

`bootstrap(statistic, sizes, samples, seed)`: `samples` resamples; in each, every population
(one size per population: the eval's examples and the meta-eval's rows, say) is drawn anew,
in the order `sizes` gives, as `numpy.random.default_rng(seed).integers(0, n, n)` (indices of
n rows drawn with replacement), and `statistic` gets one index array per population. A
statistic that is undefined on a resample (None) leaves that resample out.

`reference_draws(n, samples, seed, chunk)`: where the reference's own draws must be kept. The
headline's bootstrap std (`grading.scoring.bootstrap_std`) draws what simple-evals'
`np.random.choice(values, n)` draws after `np.random.seed(seed)`, from a legacy
`numpy.random.RandomState`, so its figures equal the reference's to the last digit; a paired
comparison of two runs (`grading.comparison.paired_bootstrap`) draws that same stream, one draw
for both runs.

Two loops draw on their own, each said where: `grading.paper_figure` resamples rows within each
category at once, as weights (one vectorized draw per resample, not one index array per
population); `grading.bridge` imports only `core` and numpy (one wing, readable on its own), so
its estimator's draws and its holdout error's resamples of means (drawn as `bootstrap_draws`
draws one population) are its own. Everything else resamples here: the calibrated rates'
interval and a cost estimate's (`engine.rates.bootstrap_interval`, the pilot's rows) through
`bootstrap_draws`, the headline's std and the paired comparison through `reference_draws`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from healthbench_exp.core.intervals import LEVEL, BootstrapResult

Statistic = Callable[..., float | None]  # one index array per population -> a value or None


def reference_draws(
    n: int, samples: int, seed: int, chunk: int
) -> Iterator[tuple[slice, np.ndarray]]:
    """The reference's resamples of n rows (see the module docstring), in chunks of about
    `chunk` indices so memory stays flat (5000 examples x 1000 resamples): (which resamples,
    their indices, one row per resample). The chunks are drawn in order, the same numbers as one
    draw of them all."""
    rng = np.random.RandomState(seed)
    rows = max(1, chunk // n)
    for start in range(0, samples, rows):
        stop = min(samples, start + rows)
        yield slice(start, stop), rng.randint(0, n, size=(stop - start, n))


def bootstrap_draws(
    statistic: Statistic, sizes: Sequence[int], samples: int, seed: int
) -> list[float]:
    """The statistic of each of `samples` resamples (see the module docstring), those where it
    is defined, in the order drawn."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(samples):
        value = statistic(*(rng.integers(0, n, n) for n in sizes))
        if value is not None:
            values.append(float(value))
    return values


def bootstrap(
    statistic: Statistic,
    sizes: Sequence[int],
    samples: int,
    seed: int,
    estimate: float,
    level: float = LEVEL,
) -> BootstrapResult | None:
    """`estimate` with the `level` percentile interval and the std of `bootstrap_draws`; None
    when the statistic is defined on no resample."""
    values = bootstrap_draws(statistic, sizes, samples, seed)
    return BootstrapResult.of_draws(estimate, values, level) if values else None
