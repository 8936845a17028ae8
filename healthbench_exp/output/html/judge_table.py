"""The judge table of a meta-eval sweep in the sweep's report.html (`sweep.judge_table` builds
the entries: plain data in sweep_summary.json's `judge_table`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from healthbench_exp.output.html.charts import cells, fmt, table

COLUMNS = {
    "judge_criterion_mean": "criterion-mean F1",
    "judge_pooled": "pooled F1",
    "physicians_criterion_mean": "physicians criterion-mean",
    "physicians_pooled": "physicians pooled",
}


def bounds(entry: Mapping[str, object], column: str) -> tuple[object, object]:
    """(low, high) of a figure's 95% interval (None: undefined)."""
    pair = entry.get(f"{column}_ci")
    return (pair[0], pair[1]) if isinstance(pair, list | tuple) else (None, None)


def category_figures(entry: Mapping[str, object]) -> Mapping[str, object]:
    """A judge's balanced F1 per category."""
    values = entry.get("by_category")
    return values if isinstance(values, dict) else {}


def _figure(entry: Mapping[str, object], column: str) -> str:
    low, high = bounds(entry, column)
    interval = "" if low is None or high is None else f" [{low:.4f}, {high:.4f}]"
    return f"<td class='num'>{fmt(entry[column])}{interval}</td>"


def judge_table_html(entries: Sequence[Mapping[str, object]]) -> str:
    """The table (each figure with its 95% interval) and the judges' F1 by category."""
    if not entries:
        return ""
    rows = [
        "<tr>"
        + cells(e["judge"], e["label"], numeric=False)
        + "".join(_figure(e, c) for c in COLUMNS)
        + cells(e["ungraded_rate"], e["cost_per_1000_graded_usd"])
        + "</tr>"
        for e in entries
    ]
    header = ["judge", "run", *COLUMNS.values(), "ungraded rate", "$ / 1,000 graded"]
    html = (
        "<h2 id='judge-table'>Judge table (agreement with physicians, balanced F1, "
        "95% intervals)</h2>" + table(header, rows)
    )
    names = sorted({c for e in entries for c in category_figures(e)})
    if names:
        by_category = [
            "<tr>"
            + cells(name, numeric=False)
            + cells(*(category_figures(e).get(name) for e in entries))
            + "</tr>"
            for name in names
        ]
        html += "<h3>Judge balanced F1 by category</h3>" + table(
            ["category", *(str(e["judge"]) for e in entries)], by_category
        )
    return html
