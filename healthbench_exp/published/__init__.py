"""Published HealthBench scores, and a run's score beside them (docs/reproducing.md).

`published_rows()` is every published number with its source and stated settings;
`compare(RunSide)` is a score beside those of its model and set: comparable or not and why,
and a verdict on run-to-run noise; `run_side(summary)` reads a finished run's side from its
summary; `cluster_table` compares a consensus run per criterion with the paper's Table 8.
"""

from healthbench_exp.core.published_record import PublishedComparison, Verdict
from healthbench_exp.published.compare import DataKind, RunSide, compare, rows_for
from healthbench_exp.published.models import model_id
from healthbench_exp.published.table import PublishedRow, Source, published_rows

__all__ = [
    "DataKind",
    "PublishedComparison",
    "PublishedRow",
    "RunSide",
    "Source",
    "Verdict",
    "compare",
    "model_id",
    "published_rows",
    "rows_for",
]
