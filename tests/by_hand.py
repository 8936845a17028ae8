"""Statistics written out by hand for tests to compare the package's numpy code against."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from healthbench_exp.core.intervals import Interval


def percentile_by_hand(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile of `ordered` (sorted ascending), by linear interpolation between the
    order statistics around rank q / 100 * (n - 1): numpy's default method, written out."""
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def interval_lists(intervals: Mapping[str, Interval | None]) -> dict[str, list[float] | None]:
    """Each named interval as [low, high] (None kept): how the by-hand oracles write them."""
    return {name: None if i is None else i.as_list() for name, i in intervals.items()}
