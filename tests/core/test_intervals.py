"""`core.intervals`: the one percentile interval, equal to numpy's default percentile to the last
bit on samples of every size (the figures it replaced were `np.percentile(x, [2.5, 97.5])`)."""

from __future__ import annotations

import numpy as np
import pytest

from healthbench_exp.core.intervals import Interval, percentile_interval


@pytest.mark.parametrize("size", [1, 2, 3, 7, 40, 41, 199, 200, 1000, 1001])
def test_the_interval_is_numpys_percentiles_to_the_last_bit(size: int) -> None:
    rng = np.random.default_rng(size)
    for values in (rng.normal(size=size), rng.integers(0, 5, size).astype(float)):
        low, high = np.percentile(values, [2.5, 97.5])
        assert percentile_interval(values) == Interval(float(low), float(high))
        low90, high90 = np.percentile(values, [5.0, 95.0])
        assert percentile_interval(list(values), level=0.9) == Interval(low90, high90)


def test_an_interval_by_hand() -> None:
    """11 values 0..10: index 10 * 0.025 = 0.25 -> 0.25; 10 * 0.975 = 9.75 -> 9.75."""
    found = percentile_interval([float(v) for v in reversed(range(11))])
    assert found == Interval(0.25, 9.75)
    assert found.as_list() == [0.25, 9.75]
    assert found.covers(0.25) and found.covers(9.75) and not found.covers(9.76)
    assert not found.covers(0.2)
    assert percentile_interval([3.0]) == Interval(3.0, 3.0)
    with pytest.raises(ValueError, match=r"^percentile_interval of no values$"):
        percentile_interval([])
