"""Per criterion on consensus: a run's `cluster:` metrics beside the paper's Table 8.

Table 8 gives, for nine models, the share of each consensus criterion's examples whose reply
met it (graded by GPT-4.1). A cell is a simple met rate over the n examples of its category, so
it is a sensitive check of grader parity: a run of the same model, graded alike, should differ
from the paper in about 5% of cells by chance.

A cell's interval: the difference of two runs' met rates over the same n examples varies run to
run by at most 2 p(1 - p) / n (each example's verdict drawn anew in each run; less where
verdicts repeat), p the two rates' mean, shrunk off 0 and 1 as (k + 0.5) / (n + 1); the 95%
interval is +- 1.96 of its square root. Being an upper bound, the count outside is at most the
chance count when the run matches; `unlikely_above` is the count that chance exceeds with
probability under 5% (binomial, 5% per cell).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from healthbench_exp.published.compare import Z95
from healthbench_exp.published.models import model_id
from healthbench_exp.published.table import published_rows

CHANCE = 0.05


@dataclass(frozen=True)
class ClusterCell:
    """One consensus criterion: the paper's rate, the run's, and their difference."""

    cluster: str  # the metric name, cluster:<theme>_<category>_<behavior>
    published: float
    run: float
    n: int  # examples of its category
    difference: float
    interval: float  # 95% half-width
    outside: bool


@dataclass(frozen=True)
class ClusterTable:
    """Every Table 8 cell of a model that the run scored, and the count outside by chance."""

    model: str
    cells: list[ClusterCell]
    outside: int
    expected: float  # cells x 5%
    unlikely_above: int  # P(more than this many outside by chance) < 5%


def _binomial_upper(cells: int, p: float = CHANCE) -> int:
    """The smallest k with P(X > k) < 5% for X ~ Binomial(cells, p)."""
    total = 0.0
    for k in range(cells + 1):
        total += math.comb(cells, k) * p**k * (1 - p) ** (cells - k)
        if 1 - total < CHANCE:
            return k
    return cells


def cluster_table(model: str, run_metrics: Mapping[str, float | None]) -> ClusterTable | None:
    """The run's `cluster:` metrics beside Table 8's for `model`; None: the model is not one of
    Table 8's nine, or the run scored none of its clusters."""
    wanted = model_id(model)
    cells: list[ClusterCell] = []
    for row in published_rows():
        if row.model_id != wanted or not row.metric.startswith("cluster:") or not row.n_examples:
            continue
        value = run_metrics.get(row.metric)
        if value is None:
            continue
        n = row.n_examples
        mean = ((row.value + value) / 2 * n + 0.5) / (n + 1)
        half = Z95 * math.sqrt(2 * mean * (1 - mean) / n)
        difference = value - row.value
        cells.append(
            ClusterCell(row.metric, row.value, value, n, difference, half, abs(difference) > half)
        )
    if not cells:
        return None
    outside = sum(c.outside for c in cells)
    return ClusterTable(model, cells, outside, CHANCE * len(cells), _binomial_upper(len(cells)))
