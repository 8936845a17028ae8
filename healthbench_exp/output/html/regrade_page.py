"""The comparison report's section on regrades: each regrade beside its source run, the two
judges' agreement and the score shift (regrade minus source) with paired bootstrap intervals,
as `sweep.regrade_compare` computed them (plain data in `sweep_summary.json`'s `regrades`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from healthbench_exp.output.html.charts import cells, table


def _shift_rows(shift: dict[str, object]) -> list[str]:
    named: list[tuple[str, object]] = [("overall", shift.get("overall"))]
    for kind, prefix in (("themes", "theme"), ("axes", "axis")):
        part = shift.get(kind)
        if isinstance(part, dict):
            named += [(f"{prefix}:{k}", v) for k, v in part.items()]
    rows = []
    for name, value in named:
        if not isinstance(value, dict):
            continue
        figures = (value["n"], value["mean_difference"], value["ci_low"], value["ci_high"])
        rows.append("<tr>" + cells(name, numeric=False) + cells(*figures) + "</tr>")
    return rows


def regrades_html(entries: Sequence[Mapping[str, object]]) -> str:
    """The section ('' without a regrade among the compared runs)."""
    if not entries:
        return ""
    body = ["<h2>Regrades: the judges' agreement and the score shift (regrade − source)</h2>"]
    for e in entries:
        body.append(
            f"<h3>{escape(str(e['regrade']))}: judge {escape(str(e['source_judge']))} → "
            f"{escape(str(e['regrade_judge']))}</h3><p class='muted'>source run "
            f"{escape(str(e['source_run']))} (model {escape(str(e['model']))})</p>"
        )
        agreement, shift = e.get("agreement"), e.get("shift")
        if not e.get("compared") or not isinstance(agreement, dict):
            body.append(f"<p>not compared: {escape(str(e.get('reason')))}</p>")
            continue
        row = cells(agreement["n"], agreement["agreement"], agreement["kappa"])
        row += cells(agreement["source_met_rate"], agreement["regrade_met_rate"])
        header = ["criteria both graded", "share equal", "Cohen's kappa", "met rate: source"]
        body.append(table([*header, "regrade"], [f"<tr>{row}</tr>"]))
        if isinstance(shift, dict):
            header = ["score", "n", "shift", "CI low (2.5%)", "CI high (97.5%)"]
            body.append(table(header, _shift_rows(shift)))
    return "".join(body)
