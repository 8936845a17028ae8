"""HTML reports that open from disk, offline (inline CSS and SVG; nothing fetched).

Every report opens with a context header: model, judge, data and count, sampling, date, cost,
protocol, and DEMO / PARTIAL / status banners (`run_context`).

- `write_run_report`: one run's `report.html`: score with CI, bar charts by theme and axis,
  consensus criteria, and every example (conversation, reply, each criterion with verdict and
  explanation), paged from the companion `report_examples.js` (`output.html.examples`), so the page
  stays small at any run size.
- `write_meta_eval_report`: a meta-eval's judge vs physicians overall, by category, each jury
  member's figures (a jury), per physician.
- `refresh_report`: rewrite a run's page (not its companion) once its final status is known.
- `sweep_report`: a comparison's runs table (one short line per cell: the model, judge, data and
  temperature columns only where the runs differ, a protocol cell naming how many settings
  deviate, listed under the table), each run's headline score with CI, theme x run and axis x run
  heat maps, paired differences and judge agreement, runs labelled by the overrides that set
  them apart, and links to each run's files.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from healthbench_exp.core.intervals import normal_interval
from healthbench_exp.core.protocol_record import OVERALL_SCORE
from healthbench_exp.core.summary import Metrics, RunSummary, read_summary
from healthbench_exp.grading.scoring import EXAMPLE_TAG_KINDS, slice_names, tag_metric_names
from healthbench_exp.output.html.bridged import bridged_section
from healthbench_exp.output.html.calibrated import calibrated_section
from healthbench_exp.output.html.charts import (
    bar_chart,
    cells,
    context_header,
    fmt,
    page,
    table,
)
from healthbench_exp.output.html.examples import examples_section, write_companion
from healthbench_exp.output.html.jury import jury_html, meta_jury_html
from healthbench_exp.output.html.published import published_section
from healthbench_exp.output.html.sweep_page import sweep_report as sweep_report  # re-exported
from healthbench_exp.output.run_context import RunContext, run_context


def _score_items(metrics: Metrics, prefix: str) -> list[tuple[str, float, float | None]]:
    names = slice_names(metrics, prefix)
    items = [(n[len(prefix) :], metrics[n], metrics.get(f"{n}:bootstrap_std")) for n in names]
    return [(name, mean, std) for name, mean, std in items if mean is not None]


def _ci(metrics: Metrics, name: str = "overall_score") -> str:
    mean, std = metrics[name], metrics[f"{name}:bootstrap_std"]
    if mean is None or std is None:
        return "undefined"
    low, high = normal_interval(mean, std).as_list()
    return f"{mean:.4f} (95% CI {low:.4f}–{high:.4f}, n={metrics[f'{name}:n_samples']})"


def _read_json(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _context(output_dir: Path, summary: RunSummary) -> RunContext:
    """The run's context from its summary, its status.json, and when summary.json was written."""
    summary_file = output_dir / RunSummary.FILE
    written_at = summary_file.stat().st_mtime if summary_file.exists() else None
    return run_context(summary, _read_json(output_dir / "status.json"), written_at=written_at)


def _write_if_changed(path: Path, text: str) -> None:
    """Write atomically, and not at all when the file already holds `text`."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def meta_eval_page(summary: RunSummary, context: RunContext) -> str:
    """report.html of a meta-eval: judge vs physicians overall, by category, per physician."""
    metrics, counts = summary.metrics, summary.meta_counts
    assert summary.agreement is not None, "a meta-eval's summary has its agreement"
    judge = context.judge or "?"
    physicians = "physicians_weighted_mean:pairwise_physician_f1_balanced"
    headline = [
        "<tr>" + cells(who, metrics[f"{prefix}f1_balanced"], metrics[f"{prefix}f1_pos"],
                       metrics[f"{prefix}f1_neg"]) + "</tr>"
        for who, prefix in (
            (f"judge {judge}", "pairwise_model_"),
            ("physicians (n-weighted mean)", "physicians_weighted_mean:pairwise_physician_"),
            ("physicians (mean)", "physicians_mean:pairwise_physician_"),
        )
    ]  # fmt: skip
    categories = [
        "<tr>"
        + cells(
            c.category.removeprefix("cluster:"),
            c.model_f1_balanced,
            c.physicians_weighted_mean_f1_balanced,
            c.physicians,
            c.rows_graded,
            c.rows,
        )
        + "</tr>"
        for c in summary.by_category or []
    ]
    per_physician = [
        "<tr>"
        + cells(
            pid,
            m["pairwise_physician_f1_balanced"].value,
            m["pairwise_physician_f1_pos"].value,
            m["pairwise_physician_f1_neg"].value,
            m["pairwise_physician_f1_balanced"].n,
        )
        + "</tr>"
        for pid, m in summary.agreement.physicians.items()
    ]
    body = (
        context_header(f"HealthBench meta-eval: judge {judge}", context)
        + f"<p class='muted'>{counts.rows_graded} of {counts.rows} rows graded, "
        f"{counts.physicians} physicians, {counts.categories} categories; pairwise F1 "
        "against every other rater's label on the same row; – = undefined (no pairs).</p>"
        f"<p><b>pairwise_model_f1_balanced</b> <span id='headline'>"
        f"{fmt(metrics['pairwise_model_f1_balanced'])}</span>; physicians "
        f"{fmt(metrics.get(physicians))}</p>"
        + table(["rater", "balanced F1", "pos F1", "neg F1"], headline)
        + "<h2>By category (cluster)</h2>"
        + table(
            ["category", "judge F1", "physicians F1", "physicians", "graded", "rows"],
            categories,
            "categories",
        )
        + meta_jury_html(summary.jury, counts.rows)  # a jury: each judge's figures
        + "<h2>Per physician (each against the others)</h2>"
        + table(["physician", "balanced F1", "pos F1", "neg F1", "n"], per_physician)
    )
    return page(f"HealthBench meta-eval · {context.title()}", body)


def write_meta_eval_report(output_dir: Path, summary: RunSummary) -> Path:
    """Write a meta-eval's report.html (see `meta_eval_page`)."""
    path = output_dir / "report.html"
    _write_if_changed(path, meta_eval_page(summary, _context(output_dir, summary)))
    return path


def score_sections(metrics: Metrics, headline: str) -> list[str]:
    """The headline metric first (with its name), then `overall_score` when it is another;
    bar charts of the headline metric by each example-tag kind, and of the rubric axes."""
    plain = headline == OVERALL_SCORE
    span = "overall-score" if plain else "headline-score"
    out = [
        f"<p><b>{escape(headline)}</b> (headline) <span id='{span}'>"
        f"{_ci(metrics, headline)}</span></p>"
    ]
    if not plain:
        out.append(f"<p><b>{OVERALL_SCORE}</b> <span id='overall-score'>{_ci(metrics)}</span></p>")
    of_headline = "" if plain else f"{headline}:"
    for kind in EXAMPLE_TAG_KINDS:
        items = _score_items(metrics, of_headline + kind)
        if items:
            which = "" if plain else f" ({escape(headline)})"
            out.append(f"<h2>By {kind[:-1].replace('_', ' ')}{which}</h2>" + bar_chart(items))
    axes = _score_items(metrics, "axis:")
    if axes:  # Professional's rubric items carry no tags
        out.append("<h2>By axis</h2>" + bar_chart(axes))
    return out


def wall_text(summary: RunSummary) -> str:
    """`wall time 12.3 s`, over every invocation of the run as its cost is (`over 2
    invocations` when it took more than one; an older summary: its last invocation's)."""
    usage, counts = summary.usage, summary.eval_counts
    if usage is None or usage.wall_time_s is None:
        return f"wall time {counts.wall_time_s:.1f} s"
    count = len(usage.invocations or [])
    return f"wall time {usage.wall_time_s:.1f} s" + (f" over {count} invocations" * (count > 1))


def run_page(summary: RunSummary, context: RunContext) -> str:
    """A run's report.html: header, scores and charts, consensus criteria, the example pager."""
    metrics, counts = summary.metrics, summary.eval_counts
    not_run = 0 if counts.rows_not_run is None else counts.rows_not_run  # None: an old summary
    body = [
        context_header(f"HealthBench run: {context.title(flags=False)}", context),
        f"<p class='muted'>{counts.rows} rows, {counts.rows_scored} scored, "
        f"{counts.rows_failed} failed, {not_run} not run, "
        f"{counts.ungraded_criteria} ungraded criteria, "
        f"{wall_text(summary)}</p>",
    ]
    if OVERALL_SCORE in metrics:
        body += score_sections(metrics, summary.headline or OVERALL_SCORE)
    else:
        body.append("<p class='bad'>No example could be scored.</p>")
    if summary.consensus:
        rows = [
            "<tr>"
            + cells(c.theme, c.behavior_category, c.criterion, c.score, c.n_samples)
            + "</tr>"
            for c in summary.consensus
        ]
        header = ["theme", "behavior category", "criterion", "score", "n"]
        body.append("<h2>Consensus criteria</h2>" + table(header, rows))
    body.append(calibrated_section(summary.calibrated))  # SPEC 7.3: beside, never instead
    body.append(jury_html(summary.jury))  # SPEC 7.1: beside the primary judge's metrics
    body.append(bridged_section(summary.bridged))  # on the reference scale, beside
    body.append(published_section(summary.published, summary.published_note))
    themes = [n.removeprefix("theme:") for n in tag_metric_names(metrics, "theme:")]
    body.append(examples_section(counts.rows, themes))
    return page(f"HealthBench run · {context.title()}", "".join(body))


def write_run_report(output_dir: Path) -> Path:
    """report.html of one run and its companion report_examples.js, from the files it wrote."""
    write_companion(output_dir)
    return refresh_report(output_dir)


def refresh_report(output_dir: Path) -> Path:
    """(Re)write a run's report.html from summary.json and status.json; the companion is left
    as it is. Unchanged content is not rewritten."""
    summary = read_summary(output_dir)
    assert summary is not None, f"no summary.json in {output_dir}"
    if summary.is_meta_eval:
        return write_meta_eval_report(output_dir, summary)
    path = output_dir / "report.html"
    _write_if_changed(path, run_page(summary, _context(output_dir, summary)))
    return path
