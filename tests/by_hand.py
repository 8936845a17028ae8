"""Statistics written out by hand for tests to compare the package's numpy code against."""

from __future__ import annotations

from collections.abc import Sequence


def percentile_by_hand(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile of `ordered` (sorted ascending), by linear interpolation between the
    order statistics around rank q / 100 * (n - 1): numpy's default method, written out."""
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
