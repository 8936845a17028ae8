"""Each job beside the published numbers in the sweep summary (summary.json's `published`,
docs/reproducing.md): the columns of its job row (`published_verdict`, `published_value`,
`published_difference`, `published_interval`, `published_source`, `published_why`, or
`published_note` when nothing applies) and its markdown cell."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from healthbench_exp.core.summary import RunSummary


def published_columns(summary: RunSummary) -> dict[str, object]:
    """A job row's columns for its best-matching published number; {} for a summary without
    them (a meta-eval, an older version)."""
    if summary.published_note:
        return {"published_note": summary.published_note}
    if not summary.published:
        return {}
    best = summary.published[0]
    return {
        "published_verdict": best.verdict,
        "published_value": best.value,
        "published_difference": best.difference,
        "published_interval": best.interval,
        "published_source": best.source,
        "published_why": "; ".join(best.why),
    }


def has_published(rows: Sequence[Mapping[str, object]]) -> bool:
    """Whether any job has a published column (the markdown table gains its column)."""
    return any("published_verdict" in r or "published_note" in r for r in rows)


def published_cell(row: Mapping[str, object]) -> str:
    """`differs: -0.0078 ± 0.0044 vs 0.4778` (the verdict, the difference and its interval,
    the published value), or why nothing applies."""
    if "published_note" in row:
        return f"nothing applies: {row['published_note']}"
    verdict = row.get("published_verdict")
    if verdict is None:
        return ""
    difference, interval = row.get("published_difference"), row.get("published_interval")
    if isinstance(difference, float) and isinstance(interval, float):
        return f"{verdict}: {difference:+.4f} ± {interval:.4f} vs {row['published_value']}"
    return f"{verdict} ({row.get('published_why')})"
