"""The calibrated consensus rates of an eval run in its report.html (summary.json's
`calibrated`, SPEC 7.3), shown beside the reference scores, never instead of them."""

from __future__ import annotations

from html import escape

from healthbench_exp.core.summary import Calibrated
from healthbench_exp.output.html.charts import cells, fmt, table

HEADER = ["category", "n", "observed", "Se", "Sp", "n pos", "n neg", "corrected (95% CI)"]


def calibrated_section(calibrated: Calibrated | None) -> str:
    """The section: one row per `cluster:` category; a category not corrected says why."""
    if calibrated is None:
        return ""
    rows = []
    for c in calibrated.criteria:
        if c.corrected is None:
            corrected = f"<td class='muted'>not corrected: {escape(c.reason or '')}</td>"
        else:
            corrected = (
                f"<td class='num'>{fmt(c.corrected)} [{fmt(c.ci_low)}, {fmt(c.ci_high)}]</td>"
            )
        rows.append(
            "<tr>"
            + cells(c.category.removeprefix("cluster:"), numeric=False)
            + cells(c.n_eval, c.observed, c.sensitivity, c.specificity, c.n_pos, c.n_neg)
            + corrected
            + "</tr>"
        )
    return (
        "<h2 id='calibrated'>Calibrated consensus rates (Rogan-Gladen; not a reference metric)</h2>"
        f"<p class='muted'>The judge {escape(calibrated.judge)}'s met rate per consensus "
        "category, corrected by its sensitivity and specificity against the physicians' "
        f"majority in the meta-eval run {escape(calibrated.meta_eval_run)}.</p>"
        + table(HEADER, rows)
    )
