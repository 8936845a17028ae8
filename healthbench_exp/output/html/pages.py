"""HTML reports that open from disk, offline (inline CSS and SVG; nothing fetched).

Every report opens with a context header: model, judge, data and count, sampling, date, cost,
protocol, and DEMO / PARTIAL / status banners (`run_context`).

- `write_run_report`: one run's `report.html`: score with CI, bar charts by theme and axis,
  consensus criteria, and every example (conversation, reply, each criterion with verdict and
  explanation), paged from the companion `report_examples.js` (`output.html.examples`), so the page
  stays small at any run size.
- `write_meta_eval_report`: a meta-eval's judge vs physicians overall, by category, per
  physician.
- `refresh_report`: rewrite a run's page (not its companion) once its final status is known.
- `sweep_report`: a comparison's table, overall score per run with CI, theme x run and axis x run
  heat maps, paired differences and judge agreement, runs labelled by the overrides that set
  them apart, and links to each run's files.
"""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from typing import Any

from healthbench_exp.core.protocol_record import OVERALL_SCORE
from healthbench_exp.core.summary import RunSummary, read_summary
from healthbench_exp.grading.scoring import EXAMPLE_TAG_KINDS, ci95, slice_names, tag_metric_names
from healthbench_exp.output.html.charts import (
    banner_html,
    bar_chart,
    cells,
    context_header,
    difference_chart,
    fmt,
    heat_map,
    page,
    table,
)
from healthbench_exp.output.html.examples import examples_section, write_companion
from healthbench_exp.output.html.judge_table import judge_table_html
from healthbench_exp.output.run_context import Banner, RunContext, run_context


def _score_items(metrics: dict[str, Any], prefix: str) -> list[tuple[str, float, float | None]]:
    names = slice_names(metrics, prefix)
    return [(n[len(prefix) :], metrics[n], metrics.get(f"{n}:bootstrap_std")) for n in names]


def _ci(metrics: dict[str, Any], name: str = "overall_score") -> str:
    mean, std = metrics[name], metrics[f"{name}:bootstrap_std"]
    low, high = ci95(mean, std)
    return f"{mean:.4f} (95% CI {low:.4f}–{high:.4f}, n={metrics[f'{name}:n_samples']})"


def _read_json(path: Path) -> dict[str, Any] | None:
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
        + "<h2>Per physician (each against the others)</h2>"
        + table(["physician", "balanced F1", "pos F1", "neg F1", "n"], per_physician)
    )
    return page(f"HealthBench meta-eval · {context.title()}", body)


def write_meta_eval_report(output_dir: Path, summary: RunSummary) -> Path:
    """Write a meta-eval's report.html (see `meta_eval_page`)."""
    path = output_dir / "report.html"
    _write_if_changed(path, meta_eval_page(summary, _context(output_dir, summary)))
    return path


def score_sections(metrics: dict[str, Any], headline: str) -> list[str]:
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


def run_page(summary: RunSummary, context: RunContext) -> str:
    """A run's report.html: header, scores and charts, consensus criteria, the example pager."""
    metrics, counts = summary.metrics, summary.eval_counts
    not_run = 0 if counts.rows_not_run is None else counts.rows_not_run  # None: an old summary
    body = [
        context_header(f"HealthBench run: {context.title(flags=False)}", context),
        f"<p class='muted'>{counts.rows} rows, {counts.rows_scored} scored, "
        f"{counts.rows_failed} failed, {not_run} not run, "
        f"{counts.ungraded_criteria} ungraded criteria, "
        f"wall time {counts.wall_time_s:.1f} s</p>",
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


def _link_base(job: dict[str, Any], out_dir: Path) -> str:
    """The path from the comparison's folder to a run's folder, for links."""
    return Path(os.path.relpath(job["path"], out_dir.resolve())).as_posix()


def _number(value: Any) -> Any:
    """A number in its shortest form (0.7, not 0.7000); anything else as it is."""
    return f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else value


LINK_NAMES = {"report.html": "report", "summary.json": "summary", "per_criterion.jsonl": "criteria"}


def _protocol(job: dict[str, Any]) -> str | None:
    """The protocol cell: the set, and `reference` or every deviation."""
    if job.get("protocol") is None:
        return None
    if job.get("reference"):
        return f"{job['protocol']} reference"
    return f"NOT the {job['protocol']} reference: {job.get('deviations')}"


def _job_row(job: dict[str, Any], out_dir: Path, estimates: bool) -> str:
    done = job.get("overall_score") is not None
    ci = f"{job['ci_low']:.4f}–{job['ci_high']:.4f}" if done else escape(job.get("error") or "")
    base = _link_base(job, out_dir)
    links = " ".join(
        f"<a href='{escape(base)}/{name}' title='{name}'>{LINK_NAMES.get(name, name)}</a>"
        for name, present in (job.get("files") or {}).items()
        if present
    )
    css = "" if job["status"] in ("completed", "dry_run") else "failed"
    return (
        f"<tr class='{css}'>"
        + cells(job["job"], job["label"], job["status"], job["banners"], numeric=False)
        + cells(job["replies"], job["judge"], job["data"], numeric=False)
        + cells(_number(job["temperature"]), _protocol(job), job.get("headline"), numeric=False)
        + f"<td class='num job-headline'>{fmt(job.get('headline_score'))}</td>"
        + f"<td class='num job-score'>{fmt(job.get('overall_score'))}</td><td>{ci}</td>"
        + cells(job.get("n"), job.get("ungraded_criteria"), job.get("cost_usd"))
        + (cells(job.get("estimated_cost_usd")) if estimates else "")
        + f"<td class='num'>{fmt(job.get('wall_time_s'), 1)}</td><td>{links}</td></tr>"
    )


def sweep_header(data: dict[str, Any]) -> str:
    """The comparison's opening: inputs, banners naming their runs, and the context table."""
    context = data.get("context") or {"fields": [], "banners": []}
    rows = [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in context["fields"]]
    return (
        "<h1>HealthBench comparison</h1>"
        f"<p class='muted'>{escape(', '.join(data.get('inputs', [])))} · written "
        f"{escape(data.get('written_at') or '')} · {len(data['jobs'])} runs, {data['failed']} "
        "failed or unfinished</p>"
        + banner_html([Banner(label, reason) for label, reason in context["banners"]])
        + f"<div class='wide'><table class='context' id='context'>{''.join(rows)}</table></div>"
    )


def sweep_report(data: dict[str, Any], out_dir: Path) -> str:
    """The comparison's report.html, written into `out_dir` (links are relative to it)."""
    meta = [j for j in data["jobs"] if j.get("task") == "meta_eval"]
    jobs = [j for j in data["jobs"] if j.get("task") != "meta_eval"]
    body = [sweep_header(data)]
    if jobs:
        header = ["job", "label", "status", "banners", "model", "judge", "data", "T"]
        estimates = any(j["status"] == "dry_run" for j in jobs)
        header += ["protocol", "headline", "headline score", "overall score", "95% CI", "n"]
        header += ["ungraded", "cost $"]
        header += ["estimated $", "wall s"] if estimates else ["wall s"]
        rows = [_job_row(j, out_dir, estimates) for j in jobs]
        body.append("<h2>Runs</h2>" + table([*header, "files"], rows))
    if meta:
        rows = [
            "<tr>"
            + cells(j["job"], j["label"], j["banners"], j["judge"], numeric=False)
            + "<td class='num job-f1'>"
            + fmt(j.get("pairwise_model_f1_balanced"))
            + "</td>"
            + cells(j.get("physicians_f1_balanced"), j.get("rows"), j.get("ungraded_rows"))
            + "</tr>"
            for j in meta
        ]
        header = ["job", "label", "banners", "judge", "judge F1", "physicians F1", "rows"]
        body.append(
            "<h2>Meta-eval: agreement with physicians (pairwise balanced F1)</h2>"
            + table([*header, "ungraded"], rows)
        )
        body.append(judge_table_html(data.get("judge_table") or []))
    if data.get("judge_agreement"):
        rows = [
            "<tr>"
            + cells(p["a_label"], p["b_label"], f"{p['a_judge']} vs {p['b_judge']}", numeric=False)
            + cells(p["n"], p["agreement"], p["kappa"])
            + "</tr>"
            for p in data["judge_agreement"]
        ]
        body.append(
            "<h2>Judge agreement (items both judges graded)</h2>"
            + table(["A", "B", "judges", "n", "agreement", "Cohen's kappa"], rows)
        )
    done = [j for j in jobs if j["status"] == "completed" and j.get("overall_score") is not None]
    if done:
        bars = [(j["label"][:48], j["overall_score"], j["bootstrap_std"]) for j in done]
        body.append("<h2>Overall score per run</h2>" + bar_chart(bars, 760))
        columns = [j["label"] for j in done]
        for kind in ("theme", "axis"):
            names = sorted(
                {k.split(":", 1)[1] for j in done for k in j if k.startswith(kind + ":")}
            )
            values = {
                (n, j["label"]): j[f"{kind}:{n}"] for j in done for n in names if f"{kind}:{n}" in j
            }
            body.append(f"<h2>{kind.title()} x run</h2>" + heat_map(names, columns, values))
    if data.get("not_compared"):
        rows = [
            "<tr>" + cells(p["a_label"], p["b_label"], p["reason"], numeric=False) + "</tr>"
            for p in data["not_compared"]
        ]
        body.append(
            "<h2>Not compared pairwise (not the same examples)</h2>"
            + table(["A", "B", "why"], rows)
        )
    pairs = data["pairs"]
    if pairs:
        items = [
            (f"{p['a_label']} − {p['b_label']}"[:64], p["mean_difference"], p["ci_low"],
             p["ci_high"])
            for p in pairs
        ]  # fmt: skip
        rows = [
            "<tr>"
            + cells(p["a_label"], p["b_label"], numeric=False)
            + cells(
                p["n"], p["mean_difference"], p["ci_low"], p["ci_high"], p["sign_flip_fraction"]
            )
            + "</tr>"
            for p in pairs
        ]
        header = ["A", "B", "n", "mean diff", "CI low", "CI high", "sign flips"]
        body.append(
            "<h2>Paired differences (A − B, bootstrap over shared prompt_ids)</h2>"
            + difference_chart(items)
            + table(header, rows)
        )
    return page("HealthBench comparison", "".join(body))
