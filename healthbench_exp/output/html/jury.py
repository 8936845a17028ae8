"""A jury run in its report.html (summary.json's `jury`, SPEC 7.1; `grading.jury`), shown
beside the primary judge's metrics, never instead of them.

- `jury_html`: the members, the jury's metrics beside each judge's (overall with its 95% CI,
  by theme and axis), and every pair's agreement (n, share equal, Cohen's kappa) overall and by
  axis and theme.
- `meta_jury_html`: a meta-eval's report.html: each judge's agreement with physicians (the
  paper's criterion-mean and the pooled balanced F1, each with its 95% interval) and its
  ungraded rows.
- `judge_verdicts` and `JUDGES_SCRIPT`: the per-criterion view's column of every judge's
  verdict (from per_criterion.jsonl's `verdicts` and `explanations`), for the example pager.
- `sweep_jury_html`: a comparison's report.html: the jury runs' primary and jury scores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape

from healthbench_exp.core.intervals import normal_interval
from healthbench_exp.core.summary import Jury, JuryPair
from healthbench_exp.grading.scoring import tag_metric_names
from healthbench_exp.output.html.charts import cells, fmt, table

OVERALL = "overall_score"
META_HEADLINE = "pairwise_model_f1_balanced"


def _score(metrics: Mapping[str, float | int | None], name: str) -> str:
    """A metric's cell: the value, with its 95% CI for the overall score."""
    value = metrics.get(name)
    std = metrics.get(f"{name}:bootstrap_std")
    if value is None:
        return "<td class='num'>–</td>"
    if name != OVERALL or std is None:
        return f"<td class='num'>{fmt(value)}</td>"
    interval = normal_interval(float(value), float(std))
    return f"<td class='num'>{fmt(value)} [{fmt(interval.low)}, {fmt(interval.high)}]</td>"


def _metric_rows(jury: Jury) -> list[str]:
    sources = [jury.metrics, *(jury.by_judge.get(name, {}) for name in jury.members)]
    names = [OVERALL]
    for prefix in ("theme:", "axis:"):
        names += sorted({n for m in sources for n in tag_metric_names(m, prefix)})
    rows = []
    for name in names:
        n = jury.metrics.get(f"{name}:n_samples")
        rows.append(
            "<tr>"
            + cells(name, numeric=False)
            + "".join(_score(m, name) for m in sources)
            + cells(n)
            + "</tr>"
        )
    return rows


def _pair(p: JuryPair) -> str:
    return f"{p.a} – {p.b}"


def _slice_rows(agreement: list[JuryPair]) -> list[str]:
    slices = sorted({s for p in agreement for s in p.by})
    rows = []
    for s in slices:
        parts = []
        for p in agreement:
            stats = p.by.get(s)
            if stats is None:
                parts.append("<td class='num muted'>–</td>")
            else:
                parts.append(
                    f"<td class='num'>{fmt(stats.agreement, 3)} / {fmt(stats.kappa, 3)} "
                    f"<span class='muted'>(n={stats.n})</span></td>"
                )
        rows.append("<tr>" + cells(s, numeric=False) + "".join(parts) + "</tr>")
    return rows


def jury_html(jury: Jury | None) -> str:
    """The report's jury section; "" for a run graded by one judge."""
    if jury is None:
        return ""
    primary, *others = jury.members
    members = f"<b>{escape(primary)}</b> (primary)" + "".join(f", {escape(m)}" for m in others)
    header = ["metric", f"jury ({jury.rule})", *jury.members, "n (jury)"]
    pairs = [
        "<tr>" + cells(_pair(p), numeric=False) + cells(p.n, p.agreement, p.kappa) + "</tr>"
        for p in jury.agreement
    ]
    out = (
        "<h2 id='jury'>Jury (not a reference metric)</h2>"
        f"<p>Judges: {members}. The run's headline and metrics above are the primary judge's."
        "</p><p class='muted'>Rule "
        f"<code>{escape(jury.rule)}</code>: each criterion counts its points times the share of "
        "the judges that graded it and said met; a criterion no judge graded is left out. Each "
        "judge's column is scored from its own verdicts, as a run with that judge alone.</p>"
        + table(header, _metric_rows(jury), "jury-metrics")
        + "<h3>Agreement between judges (criteria both graded)</h3>"
        + table(["judges", "n", "agreement", "Cohen's kappa"], pairs, "jury-agreement")
    )
    slices = _slice_rows(jury.agreement)
    if slices:
        header = ["slice", *(f"{_pair(p)}: agreement / kappa" for p in jury.agreement)]
        out += "<h3>Agreement by axis and theme</h3>" + table(header, slices, "jury-by")
    return out + (
        "<p class='muted'>– = undefined (no criterion both graded; kappa also when both judges "
        "gave every criterion one same verdict).</p>"
    )


def _interval(figures: Mapping[str, float | int | None], name: str) -> str:
    """A figure's cell with its 95% bootstrap interval (`:ci_low`, `:ci_high`)."""
    value, low, high = (figures.get(name + suffix) for suffix in ("", ":ci_low", ":ci_high"))
    if value is None:
        return "<td class='num'>–</td>"
    band = "" if low is None or high is None else f" [{fmt(low)}, {fmt(high)}]"
    return f"<td class='num'>{fmt(value)}{band}</td>"


def meta_jury_html(jury: Jury | None, rows: int) -> str:
    """A meta-eval's jury section (summary.json's `jury.by_judge`, `tasks.meta_eval`): each
    judge's agreement with physicians as a one-judge meta-eval of it computes it, the paper's
    criterion-mean and the pooled balanced F1 with their 95% intervals, and its ungraded rows
    (of `rows`); "" for a meta-eval graded by one judge."""
    if jury is None:
        return ""
    body = []
    for index, name in enumerate(jury.members):
        figures = jury.by_judge.get(name, {})
        who = f"{escape(name)} (primary)" if index == 0 else escape(name)
        body.append(
            f"<tr><td>{who}</td>"
            + _interval(figures, f"criterion_mean:{META_HEADLINE}")
            + _interval(figures, META_HEADLINE)
            + cells(jury.ungraded.get(name), rows)
            + "</tr>"
        )
    header = ["judge", "criterion-mean balanced F1 [95% CI]", "pooled balanced F1 [95% CI]",
              "ungraded rows", "rows"]  # fmt: skip
    return (
        "<h2 id='jury'>Jury: each judge against physicians</h2>"
        "<p class='muted'>Every judge graded every row; each judge's figures are computed from "
        "its own verdicts, as a meta-eval with that judge alone computes them (the criterion "
        "mean is the paper's figure, the pooled one simple-evals'). The figures above are the "
        "primary judge's. Every judge's verdict of each row is in meta_eval.jsonl "
        "(<code>verdicts</code>, <code>explanations</code>).</p>"
        + table(header, body, "jury-members")
    )


Outcome = Callable[[dict[str, object]], tuple[int, str, str]]


def judge_verdicts(row: Mapping[str, object], outcome: Outcome) -> list[list[str]] | None:
    """Every judge's [name, verdict label, css class, explanation] for one per_criterion.jsonl
    row (`outcome` labels a verdict as the pager does); None for a row without `verdicts`."""
    verdicts = row.get("verdicts")
    if not isinstance(verdicts, dict) or not verdicts:
        return None
    explanations = row.get("explanations")
    said = explanations if isinstance(explanations, dict) else {}
    out = []
    for name, met in verdicts.items():
        _, label, css = outcome({"criteria_met": met, "points": row["points"]})
        out.append([str(name), label, css, str(said.get(name) or "")])
    return out


# The pager's column of every judge's verdict (textContent only; the explanation as a tooltip).
JUDGES_SCRIPT = """
function judgesCell(list){var td=el('td');(list||[]).forEach(function(j){
  var d=el('div','verdict '+j[2],j[0]+': '+j[1]);if(j[3])d.title=j[3];td.appendChild(d);});
  return td;}
"""


def sweep_jury_html(jobs: Sequence[Mapping[str, object]]) -> str:
    """A comparison's jury runs (rows with `jury_score`, `sweep.jury`): each run's judges, its
    primary judge's overall score and its jury's; "" when no run had a jury."""
    rows = [
        "<tr>"
        + cells(j.get("job"), j.get("label"), j.get("jury_members"), numeric=False)
        + cells(j.get("overall_score"))
        + f"<td class='num job-jury'>{fmt(j.get('jury_score'))}</td>"
        + cells(j.get("jury_std"))
        + "</tr>"
        for j in jobs
        if j.get("jury_members")
    ]
    if not rows:
        return ""
    header = ["job", "label", "judges (primary first)", "overall score", "jury", "jury std"]
    return (
        "<h2 id='juries'>Juries (overall score by the primary judge and by the jury, rule mean)"
        "</h2>" + table(header, rows)
    )
