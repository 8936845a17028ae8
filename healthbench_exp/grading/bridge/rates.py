"""A judge's error rates and what they correct, written once for the bridge and for the
calibrated consensus rates (`grading.calibration`, SPEC 7.3).

- `jeffreys(k, n)`: (k + 0.5) / (n + 1), the share of n with k met (0.5 when n is 0).
- `error_rates(n1, a, n0, b)`: (se, sp) by Jeffreys: se of a agreeing of n1 where the reference
  said met, sp of b agreeing of n0 where it said not met.
- `rogan_gladen(observed, se, sp)`: the true met share behind an observed one,
  clip((observed - (1 - sp)) / (se + sp - 1), 0, 1); each caller keeps its own threshold on
  se + sp - 1 below which it does not correct (the bridge's `label_shift.MIN_J`,
  calibration's `MIN_YOUDEN`). Where J is at most 0 (a bootstrap resample past a caller's
  threshold), it divides by a tiny positive J rather than by 0 or a negative.

Scalars or numpy arrays alike (elementwise).
"""

from __future__ import annotations

from typing import overload

import numpy as np

SMALLEST_J = 1e-9  # the floor of se + sp - 1 in the division (see the module docstring)


@overload
def jeffreys(k: float, n: float) -> float: ...
@overload
def jeffreys(k: np.ndarray, n: np.ndarray) -> np.ndarray: ...
def jeffreys(k: float | np.ndarray, n: float | np.ndarray) -> float | np.ndarray:
    """(k + 0.5) / (n + 1): the share of n with k met, Jeffreys' estimate (0.5 when n is 0)."""
    share: float | np.ndarray = (k + 0.5) / (n + 1)
    return share


def error_rates(
    n1: np.ndarray, a: np.ndarray, n0: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(se, sp) by Jeffreys: a of n1 agree where the reference said met, b of n0 where not."""
    return jeffreys(a, n1), jeffreys(b, n0)


@overload
def rogan_gladen(observed: float, se: float, sp: float) -> float: ...
@overload
def rogan_gladen(observed: np.ndarray, se: np.ndarray, sp: np.ndarray) -> np.ndarray: ...
def rogan_gladen(
    observed: float | np.ndarray, se: float | np.ndarray, sp: float | np.ndarray
) -> float | np.ndarray:
    """clip((observed - (1 - sp)) / (se + sp - 1), 0, 1) (see the module docstring)."""
    youden = se + sp - 1
    # mutmut: J <= 0 only in a resample past a caller's threshold; the floor keeps the division
    # finite there and never moves a value where J is above it
    floor = np.maximum(youden, SMALLEST_J)  # pragma: no mutate
    corrected: np.ndarray = np.clip((observed - (1 - sp)) / floor, 0.0, 1.0)
    return corrected if isinstance(observed, np.ndarray) else float(corrected)
