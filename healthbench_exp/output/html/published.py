"""The run beside the published numbers in its report.html (summary.json's `published`,
docs/reproducing.md): one row per source, best-matching first, or why nothing applies."""

from __future__ import annotations

from html import escape

from healthbench_exp.core.published_record import PublishedComparison
from healthbench_exp.output.html.charts import cells, table

HEADER = [
    "source", "status", "published", "as stated", "this run", "difference ± 95%", "verdict",
    "why", "not stated by the source",
]  # fmt: skip


def _row(c: PublishedComparison) -> str:
    source = escape(c.source)
    if c.url:
        source = f"<a href='{escape(c.url)}'>{source}</a>"
    difference = "–" if c.difference is None else f"{c.difference:+.4f} ± {c.interval:.4f}"
    return (
        f"<tr><td>{source}</td>"
        + cells(c.status, numeric=False)
        + cells(c.value, c.uncertainty, c.score)
        + f"<td class='num'>{difference}</td>"
        + f"<td class='published-verdict'>{escape(c.verdict)}</td>"
        + cells("; ".join(c.why), ", ".join(c.not_stated), numeric=False)
        + "</tr>"
    )


def published_section(comparisons: list[PublishedComparison] | None, note: str | None) -> str:
    """The section; "" for a summary without either (a meta-eval, an older version)."""
    title = "<h2 id='published'>Beside the published numbers</h2>"
    if note:
        return f"{title}<p class='muted'>Nothing published applies: {escape(note)}.</p>"
    if not comparisons:
        return ""
    return (
        title + "<p class='muted'>Comparable only with the same grader, set and length policy; the "
        "verdict is a 95% test on run-to-run noise (docs/reproducing.md).</p>"
        + table(HEADER, [_row(c) for c in comparisons])
    )
