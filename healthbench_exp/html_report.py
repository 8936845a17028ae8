"""Self-contained HTML reports (inline CSS and SVG; no scripts, nothing fetched): open from disk.

- `write_run_report`: one run's score with CI, bar charts by theme and axis, consensus criteria
  and every example (conversation, reply, each criterion with verdict and explanation, the
  criteria that cost points first).
- `sweep_report`: a sweep's summary table, overall score per job with CI, theme x job and
  axis x job heat maps, paired differences with CIs, and links to each job's files.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from .scoring import ci95, tag_metric_names

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1150px;color:#1d2430;
padding:0 16px}h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #d5dae1}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d5dae1;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f1f3f6}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#68707d}.bad{color:#a4161a}.good{color:#1b6e3a}.failed{background:#fde8e8}
details{border:1px solid #d5dae1;border-radius:4px;margin:6px 0;padding:4px 8px}
summary{cursor:pointer}pre{white-space:pre-wrap;background:#f7f8fa;padding:6px;margin:4px 0}
.verdict{font-weight:600;white-space:nowrap}svg text{font:12px system-ui,sans-serif}
"""


def _page_parts(title: str) -> tuple[str, str]:
    """The markup before and after a page's body."""
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}"
        f"</title><style>{STYLE}</style></head><body>",
        "</body></html>\n",
    )


def _page(title: str, body: str) -> str:
    before, after = _page_parts(title)
    return before + body + after


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return escape(str(value))


def _table(header: list[str], rows: list[str]) -> str:
    """A table from header labels and ready-made `<tr>` rows."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _cells(*values: Any, numeric: bool = True) -> str:
    """`<td>` cells: numbers right-aligned and formatted, anything else escaped."""
    out = []
    for v in values:
        number = numeric and isinstance(v, int | float) and not isinstance(v, bool)
        out.append(f"<td class='num'>{_fmt(v)}</td>" if number else f"<td>{_fmt(v)}</td>")
    return "".join(out)


def bar_chart(items: list[tuple[str, float, float | None]], width: int = 640) -> str:
    """Horizontal bars on a 0..1 axis; the whisker is +- 1.96 std (clipped to the axis)."""
    label_w, row_h = 230, 22
    plot_w = width - label_w - 70
    height = row_h * len(items) + 24
    parts = [f"<svg width='{width}' height='{height}' role='img'>"]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + tick * plot_w
        parts.append(
            f"<line x1='{x:.1f}' y1='0' x2='{x:.1f}' y2='{height - 18}' stroke='#e3e6ea'/>"
            f"<text x='{x:.1f}' y='{height - 4}' text-anchor='middle' fill='#68707d'>"
            f"{tick:g}</text>"
        )
    for i, (label, value, std) in enumerate(items):
        y = i * row_h + 3
        mid = y + (row_h - 6) / 2
        width_px = max(0.0, min(1.0, value)) * plot_w
        parts.append(
            f"<text x='{label_w - 6}' y='{y + 14}' text-anchor='end'>{escape(label)}</text>"
            f"<rect x='{label_w}' y='{y}' width='{width_px:.1f}' height='{row_h - 6}' "
            "fill='#4c78a8'/>"
        )
        if std:
            low, high = ci95(value, std)
            lo, hi = label_w + low * plot_w, label_w + high * plot_w
            parts.append(f"<line x1='{lo:.1f}' y1='{mid}' x2='{hi:.1f}' y2='{mid}' stroke='#000'/>")
        parts.append(f"<text x='{label_w + plot_w + 6}' y='{y + 14}'>{value:.4f}</text>")
    parts.append("</svg>")
    return "".join(parts)


def difference_chart(items: list[tuple[str, float, float, float]], width: int = 720) -> str:
    """Paired differences (label, mean, ci_low, ci_high) around a zero line."""
    label_w, row_h = 300, 22
    plot_w = width - label_w - 80
    bound = max([0.05] + [max(abs(lo), abs(hi)) for _, _, lo, hi in items]) * 1.1

    def x(v: float) -> float:
        return label_w + (v + bound) / (2 * bound) * plot_w

    height = row_h * len(items) + 24
    zero = x(0)
    parts = [
        f"<svg width='{width}' height='{height}' role='img'>",
        f"<line x1='{zero:.1f}' y1='0' x2='{zero:.1f}' y2='{height - 18}' stroke='#68707d'/>",
        f"<text x='{zero:.1f}' y='{height - 4}' text-anchor='middle' fill='#68707d'>0</text>",
    ]
    for i, (label, mean, lo, hi) in enumerate(items):
        y = i * row_h + 3
        mid = y + (row_h - 6) / 2
        color = "#1b6e3a" if lo > 0 else "#a4161a" if hi < 0 else "#8a8f98"
        left, right = sorted((zero, x(mean)))
        parts.append(
            f"<text x='{label_w - 6}' y='{y + 14}' text-anchor='end'>{escape(label)}</text>"
            f"<rect x='{left:.1f}' y='{y}' width='{right - left:.1f}' height='{row_h - 6}' "
            f"fill='{color}' opacity='0.75'/>"
            f"<line x1='{x(lo):.1f}' y1='{mid}' x2='{x(hi):.1f}' y2='{mid}' stroke='#000'/>"
            f"<text x='{label_w + plot_w + 6}' y='{y + 14}'>{mean:+.4f}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def heat_map(
    row_labels: list[str], col_labels: list[str], values: dict[tuple[str, str], float]
) -> str:
    """A table whose cells are shaded by value in [0, 1] (darker blue = higher)."""
    rows = []
    for r in row_labels:
        cells = []
        for c in col_labels:
            v = values.get((r, c))
            if v is None:
                cells.append("<td class='num muted'>–</td>")
                continue
            shade = int(255 - 120 * max(0.0, min(1.0, v)))
            style = f"background:rgb({shade},{min(255, shade + 20)},255)"
            cells.append(f"<td class='num' style='{style}'>{v:.3f}</td>")
        rows.append(f"<tr><th>{escape(r)}</th>{''.join(cells)}</tr>")
    return _table(["", *col_labels], rows)


def _score_items(metrics: dict[str, Any], prefix: str) -> list[tuple[str, float, float | None]]:
    names = tag_metric_names(metrics, prefix)
    return [(n[len(prefix) :], metrics[n], metrics.get(f"{n}:bootstrap_std")) for n in names]


def _ci(metrics: dict[str, Any], name: str = "overall_score") -> str:
    mean, std = metrics[name], metrics[f"{name}:bootstrap_std"]
    low, high = ci95(mean, std)
    return f"{mean:.4f} (95% CI {low:.4f}–{high:.4f}, n={metrics[f'{name}:n_samples']})"


def _outcome(row: dict[str, Any]) -> tuple[int, str, str]:
    """(sort key, label, css class): criteria that cost the reply points come first."""
    met, points = row["criteria_met"], row["points"]
    if met is None:
        return 1, "ungraded", "muted"
    label = "met" if met else "not met"
    return (0, label, "bad") if (points > 0) != met else (2, label, "good")


def _example_html(example: dict[str, Any], criteria: list[dict[str, Any]]) -> str:
    score = "failed" if example["error"] else _fmt(example["score"])
    rows = []
    for c in sorted(criteria, key=lambda c: _outcome(c)[0]):
        _, label, css = _outcome(c)
        explanation = c["explanation"] or c["error"] or ""
        rows.append(
            f"<tr>{_cells(c['points'])}<td class='verdict {css}'>{label}</td>"
            f"{_cells(c['criterion'])}<td class='muted'>{escape(explanation)}</td></tr>"
        )
    conversation = "".join(
        f"<pre><b>{escape(m['role'])}</b>: {escape(m['content'])}</pre>"
        for m in example["messages"]
    )
    if example["completion"]:
        reply = f"<pre><b>assistant (reply)</b>: {escape(example['completion'])}</pre>"
    else:
        reply = f"<p class='bad'>{escape(example['error'] or 'no reply')}</p>"
    return (
        f"<details{' class=failed' if example['error'] else ''}><summary>"
        f"{escape(example['prompt_id'])} · {escape(example['theme'])} · rollout "
        f"{example['rollout']} · score {score}</summary>{conversation}{reply}"
        + _table(["points", "verdict", "criterion", "judge explanation"], rows)
        + "</details>"
    )


def replies_label(summary: dict[str, Any]) -> str:
    """Whose replies a run graded: the model's name, or the physician / file source."""
    completions = summary.get("completions") or {"source": "model"}
    if completions["source"] == "model":
        return str(((summary.get("config") or {}).get("model") or {}).get("name", "?"))
    if completions["source"] == "file":
        return f"replies from {completions.get('path')}"
    return f"{completions['source']} completions, Group {completions.get('group')}"


def write_meta_eval_report(output_dir: Path, summary: dict[str, Any]) -> Path:
    """report.html of a meta-eval: judge vs physicians overall, by category, per physician."""
    metrics, counts = summary["metrics"], summary["counts"]
    judge = ((summary.get("config") or {}).get("judge") or {}).get("name", "?")
    physicians = "physicians_weighted_mean:pairwise_physician_f1_balanced"
    headline = [
        "<tr>" + _cells(who, metrics[f"{prefix}f1_balanced"], metrics[f"{prefix}f1_pos"],
                        metrics[f"{prefix}f1_neg"]) + "</tr>"
        for who, prefix in (
            (f"judge {judge}", "pairwise_model_"),
            ("physicians (n-weighted mean)", "physicians_weighted_mean:pairwise_physician_"),
            ("physicians (mean)", "physicians_mean:pairwise_physician_"),
        )
    ]  # fmt: skip
    categories = [
        "<tr>"
        + _cells(
            c["category"],
            c["model_f1_balanced"],
            c["physicians_weighted_mean_f1_balanced"],
            c["physicians"],
            c["rows_graded"],
            c["rows"],
        )
        + "</tr>"
        for c in summary["by_category"]
    ]
    per_physician = [
        "<tr>"
        + _cells(
            pid,
            m["pairwise_physician_f1_balanced"]["value"],
            m["pairwise_physician_f1_pos"]["value"],
            m["pairwise_physician_f1_neg"]["value"],
            m["pairwise_physician_f1_balanced"]["n"],
        )
        + "</tr>"
        for pid, m in summary["agreement"]["physicians"].items()
    ]
    body = (
        f"<h1>HealthBench meta-eval: judge {escape(str(judge))}</h1>"
        f"<p class='muted'>{counts['rows_graded']} of {counts['rows']} rows graded, "
        f"{counts['physicians']} physicians, {counts['categories']} categories; pairwise F1 "
        "against every other rater's label on the same row; – = undefined (no pairs).</p>"
        f"<p><b>pairwise_model_f1_balanced</b> <span id='headline'>"
        f"{_fmt(metrics['pairwise_model_f1_balanced'])}</span>; physicians "
        f"{_fmt(metrics.get(physicians))}</p>"
        + _table(["rater", "balanced F1", "pos F1", "neg F1"], headline)
        + "<h2>By category</h2>"
        + _table(
            ["category", "judge", "physicians", "physicians (n)", "graded", "rows"], categories
        )
        + "<h2>Per physician (each against the others)</h2>"
        + _table(["physician", "balanced F1", "pos F1", "neg F1", "n"], per_physician)
    )
    path = output_dir / "report.html"
    path.write_text(_page(f"HealthBench meta-eval {judge}", body), encoding="utf-8")
    return path


def _run_header(summary: dict[str, Any]) -> str:
    """Everything of a run's page above the examples."""
    metrics, counts = summary["metrics"], summary["counts"]
    config = summary.get("config") or {}
    judge = (config.get("judge") or {}).get("name", "?")
    body = [
        f"<h1>HealthBench run: {escape(replies_label(summary))}</h1>",
        f"<p class='muted'>judge {escape(str(judge))}; {counts['rows']} rows, "
        f"{counts['rows_scored']} scored, {counts['rows_failed']} failed, "
        f"{counts['ungraded_criteria']} ungraded criteria, "
        f"wall time {counts['wall_time_s']:.1f} s</p>",
    ]
    if "overall_score" in metrics:
        body.append(f"<p><b>overall_score</b> <span id='overall-score'>{_ci(metrics)}</span></p>")
        body.append("<h2>By theme</h2>" + bar_chart(_score_items(metrics, "theme:")))
        body.append("<h2>By axis</h2>" + bar_chart(_score_items(metrics, "axis:")))
    else:
        body.append("<p class='bad'>No example could be scored.</p>")
    if summary.get("consensus"):
        rows = [
            "<tr>"
            + _cells(c["theme"], c["behavior_category"], c["criterion"], c["score"], c["n_samples"])
            + "</tr>"
            for c in summary["consensus"]
        ]
        header = ["theme", "behavior category", "criterion", "score", "n"]
        body.append("<h2>Consensus criteria</h2>" + _table(header, rows))
    body.append(
        f"<h2>Examples ({counts['rows']})</h2><p class='muted'>Lowest scores first; in each "
        "example the criteria that cost points come first.</p>"
    )
    return "".join(body)


def write_run_report(output_dir: Path) -> Path:
    """report.html of one run, from the files it wrote, streamed: memory stays flat.

    examples.jsonl and per_criterion.jsonl hold the rows of each (example, rollout) together and
    in the same order, so one pass records where each example's lines start; the page is then
    written example by example, lowest score first, reading each one's lines back by offset.
    """
    summary = json.loads((output_dir / "summary.json").read_text(encoding="utf-8"))
    index: list[tuple[bool, float, int, int, int]] = []  # sort key, offsets, criteria count
    with open(output_dir / "examples.jsonl", "rb") as examples:
        offset = 0
        for line in examples:
            row = json.loads(line)
            index.append(
                (row["score"] is not None, row["score"] or 0.0, offset, 0, row["criteria"])
            )
            offset += len(line)
    criteria_offset = 0
    with open(output_dir / "per_criterion.jsonl", "rb") as criteria:
        for position, (_, _, _, _, count) in enumerate(index):
            start = criteria_offset
            for _ in range(count):
                criteria_offset += len(criteria.readline())
            index[position] = (*index[position][:3], start, count)
    path = output_dir / "report.html"
    before, after = _page_parts(f"HealthBench run {replies_label(summary)}")
    with (
        open(path, "w", encoding="utf-8") as out,
        open(output_dir / "examples.jsonl", "rb") as examples,
        open(output_dir / "per_criterion.jsonl", "rb") as criteria,
    ):
        out.write(before + _run_header(summary))
        for _, _, example_offset, criteria_start, count in sorted(index, key=lambda i: i[:2]):
            examples.seek(example_offset)
            criteria.seek(criteria_start)
            rows = [json.loads(criteria.readline()) for _ in range(count)]
            out.write(_example_html(json.loads(examples.readline()), rows))
        out.write(after)
    return path


def _job_row(job: dict[str, Any]) -> str:
    done = job["status"] == "completed" and job.get("overall_score") is not None
    ci = f"{job['ci_low']:.4f}–{job['ci_high']:.4f}" if done else escape(job.get("error") or "")
    if job["status"] == "dry_run":
        done, ci = True, f"dry run: estimated {_fmt(job.get('estimated_cost_usd'))} $"
    links = " ".join(
        f"<a href='{escape(job['job'])}/{name}'>{name}</a>"
        for name, present in (job.get("files") or {}).items()
        if present
    )
    return (
        f"<tr class='{'' if done else 'failed'}'>"
        + _cells(job["job"], job["status"], job["overrides"], numeric=False)
        + f"<td class='num job-score'>{_fmt(job.get('overall_score'))}</td><td>{ci}</td>"
        + _cells(job.get("n"), job.get("ungraded_criteria"), job.get("tokens"))
        + f"<td class='num'>{_fmt(job.get('wall_time_s'), 1)}</td><td>{links}</td></tr>"
    )


def sweep_report(data: dict[str, Any]) -> str:
    meta = [j for j in data["jobs"] if j.get("task") == "meta_eval"]
    jobs = [j for j in data["jobs"] if j.get("task") != "meta_eval"]
    header = ["job", "status", "overrides", "overall_score", "95% CI", "n", "ungraded", "tokens"]
    body = [
        f"<h1>HealthBench sweep</h1><p class='muted'>{escape(data['sweep_dir'])} · "
        f"{len(data['jobs'])} jobs, {data['failed']} failed or unfinished</p>",
    ]
    if jobs:
        body.append(
            "<h2>Jobs</h2>" + _table([*header, "wall s", "files"], [_job_row(j) for j in jobs])
        )
    if meta:
        rows = [
            "<tr>"
            + _cells(j["job"], j["judge"], j["overrides"], numeric=False)
            + "<td class='num job-f1'>"
            + _fmt(j["pairwise_model_f1_balanced"])
            + "</td>"
            + _cells(j["physicians_f1_balanced"], j["rows"], j["ungraded_rows"], j["tokens"])
            + "</tr>"
            for j in meta
        ]
        header = ["job", "judge", "overrides", "judge F1", "physicians F1", "rows", "ungraded"]
        body.append(
            "<h2>Meta-eval: agreement with physicians (pairwise balanced F1)</h2>"
            + _table([*header, "tokens"], rows)
        )
    if data.get("judge_agreement"):
        rows = [
            "<tr>"
            + _cells(p["a"], p["b"], f"{p['a_judge']} vs {p['b_judge']}", numeric=False)
            + _cells(p["n"], p["agreement"], p["kappa"])
            + "</tr>"
            for p in data["judge_agreement"]
        ]
        body.append(
            "<h2>Judge agreement (items both judges graded)</h2>"
            + _table(["A", "B", "judges", "n", "agreement", "Cohen's kappa"], rows)
        )
    done = [j for j in jobs if j["status"] == "completed" and j.get("overall_score") is not None]
    if done:
        bars = [(j["label"][:48], j["overall_score"], j["bootstrap_std"]) for j in done]
        body.append("<h2>Overall score per job (whisker: 95% CI)</h2>" + bar_chart(bars, 760))
        columns = [j["job"] for j in done]
        for kind in ("theme", "axis"):
            names = sorted(
                {k.split(":", 1)[1] for j in done for k in j if k.startswith(kind + ":")}
            )
            values = {
                (n, j["job"]): j[f"{kind}:{n}"] for j in done for n in names if f"{kind}:{n}" in j
            }
            body.append(f"<h2>{kind.title()} x job</h2>" + heat_map(names, columns, values))
    pairs = data["pairs"]
    if pairs:
        items = [
            (f"{p['a']} − {p['b']}", p["mean_difference"], p["ci_low"], p["ci_high"]) for p in pairs
        ]
        rows = [
            "<tr>"
            + _cells(p["a"], p["b"], numeric=False)
            + _cells(
                p["n"], p["mean_difference"], p["ci_low"], p["ci_high"], p["sign_flip_fraction"]
            )
            + "</tr>"
            for p in pairs
        ]
        header = ["A", "B", "n", "mean diff", "CI low", "CI high", "sign flips"]
        body.append(
            "<h2>Paired differences (A − B, bootstrap over shared prompt_ids)</h2>"
            + difference_chart(items)
            + _table(header, rows)
        )
    return _page("HealthBench sweep", "".join(body))
