"""The run beside the published numbers in its W&B run (summary.json's `published`,
docs/reproducing.md): summary keys for the best-matching source, and a table of every source."""

from __future__ import annotations

from healthbench_exp.core.published_record import PublishedComparison
from healthbench_exp.core.summary import RunSummary

PREFIX = "published/"
TABLE = "published"
COLUMNS = [
    "source", "status", "model", "set", "metric", "value", "uncertainty", "score", "difference",
    "interval", "verdict", "why", "not_stated",
]  # fmt: skip


def published_metrics(summary: RunSummary) -> dict[str, object]:
    """`published/verdict`, `/value`, `/difference`, `/interval`, `/source`, `/why` of the
    best-matching source, `published/sources` and `published/consistent`, `/differs`,
    `/not_comparable` (counts); `published/note` when nothing published applies; {} for a
    summary without them (a meta-eval, an older version)."""
    if summary.published_note:
        return {f"{PREFIX}note": summary.published_note}
    comparisons = summary.published or []
    if not comparisons:
        return {}
    best = comparisons[0]
    out: dict[str, object] = {
        f"{PREFIX}sources": len(comparisons),
        f"{PREFIX}verdict": best.verdict,
        f"{PREFIX}source": best.source,
        f"{PREFIX}value": best.value,
        f"{PREFIX}why": "; ".join(best.why),
    }
    if best.difference is not None:
        out[f"{PREFIX}difference"] = best.difference
        out[f"{PREFIX}interval"] = best.interval
    for verdict in ("consistent", "differs", "not comparable"):
        key = f"{PREFIX}{verdict.replace(' ', '_')}"
        out[key] = sum(c.verdict == verdict for c in comparisons)
    return out


def published_table_rows(comparisons: list[PublishedComparison] | None) -> list[list[object]]:
    """The `published` table's rows, one per source, best-matching first."""
    return [
        [
            c.source,
            c.status,
            c.model,
            c.set,
            c.metric,
            c.value,
            c.uncertainty,
            c.score,
            c.difference,
            c.interval,
            c.verdict,
            "; ".join(c.why),
            ", ".join(c.not_stated),
        ]
        for c in comparisons or []
    ]
