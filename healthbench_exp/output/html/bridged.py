"""The bridged score of an eval run in its report.html (summary.json's `bridged`,
docs/bridge.md): the run graded by its judge on the reference grader's scale, with the strata
table, the held-out check and, with several sources, the spread of q between them; beside the
run's own scores, never instead of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from healthbench_exp.core.bridged import INTERVAL_COVERS, Bridged, BridgeStratum
from healthbench_exp.output.html.charts import cells, fmt, table

STRATA = ["stratum", "sign", "n met", "n not", "q met", "q not", "pooled"]
# label_shift: the judge's error rates from the bridge, the run's own met share, the weights
SHIFT = ["stratum", "sign", "n O met", "n O not", "se", "sp", "run n", "run met", "pi"]
SHIFT += ["w met", "w not", "pooled"]
TRANSPORT = ["model", "source", "method", "own", "bridged", "error [bridged's 95% CI]", "refused"]
SPREAD = [
    "stratum",
    "sign",
    "verdict (N: q; O: se, sp)",
    "q (95% CI)",
    "by source",
    "spread",
    "chi2",
    "p",
    "beyond",
]


def _interval(ci: list[float] | None) -> str:
    return "" if ci is None else f" [{fmt(ci[0])}, {fmt(ci[1])}]"


def bridged_section(bridged: Bridged | None) -> str:
    """The section: the metrics with their intervals, the check, the strata, the spread."""
    if bridged is None:
        return ""
    metrics = [
        f"<tr><td>{escape(name)}</td><td class='num'>{fmt(value)}"
        f"{_interval(bridged.ci.get(name))}</td></tr>"
        for name, value in bridged.metrics.items()
    ]
    rates = bridged.reports_error_rates
    strata = [_stratum_row(s, rates) for s in bridged.strata]
    holdout = bridged.holdout_error
    how = bridged.describes.format(old=escape(bridged.old_judge), new=escape(bridged.new_judge))
    parts = [
        "<h2 id='bridged'>Bridged score (on the reference grader's scale; not a reference "
        "metric)</h2>",
        f"<p class='muted'>Method <b class='bridged-method'>{escape(bridged.method)}</b>: this "
        f"run's judge {escape(bridged.new_judge)}'s verdicts, {how}, from "
        f"{bridged.pairs} criteria both graded in {', '.join(escape(b) for b in bridged.bridge)}. "
        f"Held-out check ({holdout.folds}-fold, {holdout.examples} bridge examples): mean error "
        f"{fmt(holdout.mean)}{_interval(holdout.ci)}. Each 95% interval covers "
        f"{escape(INTERVAL_COVERS)}.</p>",
        *[f"<p class='bad'>{escape(w)}</p>" for w in bridged.warnings],
        table(["metric", "value [95% CI]"], metrics),
        "<h3>Strata</h3>",
        table(SHIFT if rates else STRATA, strata),
    ]
    if bridged.spread:
        rows = [
            "<tr>"
            + cells(c.stratum, c.sign, c.verdict, numeric=False)
            + f"<td class='num'>{fmt(c.q)}{_interval(c.ci)}</td>"
            + cells("; ".join(f"{k}: {v.k}/{v.n}" for k, v in c.by_source.items()), numeric=False)
            + cells(c.spread, c.chi2, c.p_value)
            + cells("yes" if c.beyond_interval else "", numeric=False)
            + "</tr>"
            for c in bridged.spread
        ]
        rate = "se (O met) and sp (O not met)" if rates else "q"
        parts += [f"<h3>{rate} between the bridge sources</h3>", table(SPREAD, rows)]
    if bridged.transport:
        moved = [
            "<tr>"
            + cells(t.model, t.source, t.method, numeric=False)
            + cells(t.own, t.bridged)
            + f"<td class='num'>{fmt(t.error)}{_interval(t.ci)}</td>"
            + cells(t.refused or "", numeric=False)
            + "</tr>"
            for t in bridged.transport
        ]
        parts += [
            "<h3>Leave one model out</h3><p class='muted'>Each source's replies bridged from "
            "the other sources, against the reference grader's own score on them: the only "
            "check that the judges disagree alike on every model.</p>",
            table(TRANSPORT, moved),
        ]
    return "".join(parts)


def _stratum_row(s: BridgeStratum, rates: bool) -> str:
    numbers = (
        cells(s.n_o_met, s.n_o_not, s.se, s.sp, s.run_n, s.run_met, s.pi, s.w_met, s.w_not)
        if rates
        else cells(s.n_met, s.n_not, s.q_met, s.q_not)
    )
    return (
        "<tr>"
        + cells(s.stratum, s.sign, numeric=False)
        + numbers
        + cells(_pooled(s), numeric=False)
        + "</tr>"
    )


def _pooled(s: BridgeStratum) -> str:
    """Which rates a stratum pools and why (`se: few_o_met`); the reasons alone where the
    record does not say which (calibration, or label_shift before revision 3)."""
    why = ", ".join(s.pooled)
    return f"{s.pooled_rates}: {why}" if s.pooled_rates else why


def sweep_bridged_html(jobs: Sequence[Mapping[str, object]]) -> str:
    """A comparison's bridged runs (rows with `bridged_score`, `sweep.bridged`): each run's own
    overall score beside its bridged score and interval; "" when no run was bridged."""
    rows = [
        "<tr>"
        + cells(j.get("job"), j.get("label"), j.get("judge"), numeric=False)
        + cells(j.get("overall_score"))
        + cells(j.get("bridged_method"), numeric=False)
        + f"<td class='num job-bridged'>{fmt(j.get('bridged_score'))}</td>"
        + cells(j.get("bridged_ci_low"), j.get("bridged_ci_high"), j.get("bridged_holdout_error"))
        + "</tr>"
        for j in jobs
        if j.get("bridged_sources")
    ]
    if not rows:
        return ""
    header = ["job", "label", "judge", "overall score", "method", "bridged", "CI low", "CI high"]
    return (
        "<h2 id='bridged'>Bridged scores (each run on the reference grader's scale)</h2>"
        + table([*header, "held-out error"], rows)
    )
