"""A comparison's report.html (`sweep_report`): its context header, the runs table (one short
line per cell: the model, judge, data and temperature columns only where the runs differ, a
protocol cell naming how many settings deviate, listed under the table), each run's headline
score with its CI, theme x run and axis x run heat maps, meta-eval agreement, judge agreement
and paired differences, runs labelled by the overrides that set them apart, and links to each
run's files."""

from __future__ import annotations

import os
from collections.abc import Mapping
from html import escape
from pathlib import Path

from healthbench_exp.core.run_end import Status
from healthbench_exp.output.html.bridged import sweep_bridged_html
from healthbench_exp.output.html.charts import (
    banner_html,
    bar_chart,
    cells,
    context_parts,
    difference_chart,
    fmt,
    heat_map,
    listed,
    number,
    page,
    records,
    table,
    text,
)
from healthbench_exp.output.html.judge_table import judge_table_html
from healthbench_exp.output.html.jury import sweep_jury_html
from healthbench_exp.output.html.regrade_page import regrades_html
from healthbench_exp.output.run_context import Banner


def _link_base(job: Mapping[str, object], out_dir: Path) -> str:
    """The path from the comparison's folder to a run's folder, for links."""
    return Path(os.path.relpath(text(job, "path"), out_dir.resolve())).as_posix()


def _number(value: object) -> object:
    """A number in its shortest form (0.7, not 0.7000); anything else as it is."""
    return f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else value


def _files(job: Mapping[str, object]) -> dict[str, object]:
    """A run's files (name -> whether it is there)."""
    files = job.get("files")
    return files if isinstance(files, dict) else {}


LINK_NAMES = {"report.html": "report", "summary.json": "summary", "per_criterion.jsonl": "criteria"}


def _protocol(job: Mapping[str, object]) -> str:
    """The protocol cell, one short line (the deviations are listed under the table and in its
    tooltip): the set, and `reference` or how many settings deviate."""
    if job.get("protocol") is None:
        return "<td></td>"
    if job.get("reference"):
        return f"<td>{escape(text(job, 'protocol'))} reference</td>"
    deviations = str(job.get("deviations") or "")
    count = len(deviations.split("; "))
    return (
        f"<td title='{escape(deviations)}'>{escape(text(job, 'protocol'))}: NOT reference "
        f"({count} deviation{'s' * (count != 1)})</td>"
    )


# the run columns shown only when the runs differ in them (the context header names them)
VARYING = (("model", "replies"), ("judge", "judge"), ("data", "data"), ("T", "temperature"))


def _varying(jobs: list[Mapping[str, object]]) -> list[tuple[str, str]]:
    return [(name, key) for name, key in VARYING if len({str(j.get(key)) for j in jobs}) > 1]


def _job_row(
    job: Mapping[str, object], out_dir: Path, estimates: bool, varying: list[tuple[str, str]]
) -> str:
    done = job.get("overall_score") is not None
    ci = f"{job['ci_low']:.4f}–{job['ci_high']:.4f}" if done else escape(text(job, "error"))
    base = _link_base(job, out_dir)
    links = " ".join(
        f"<a href='{escape(base)}/{name}' title='{name}'>{LINK_NAMES.get(name, name)}</a>"
        for name, present in _files(job).items()
        if present
    )
    css = "" if job["status"] in (Status.COMPLETED, Status.DRY_RUN) else "failed"
    headline = text(job, "headline")
    metric = f"<br><span class='muted'>{escape(headline)}</span>" if headline else ""
    return (
        f"<tr class='{css}'>"
        + cells(job["job"], job["label"], f"{job['status']} {job['banners']}", numeric=False)
        + cells(*(_number(job[key]) for _, key in varying), numeric=False)
        + _protocol(job)
        + f"<td class='num job-headline'>{fmt(job.get('headline_score'))}{metric}</td>"
        + f"<td class='num job-score'>{fmt(job.get('overall_score'))}</td><td>{ci}</td>"
        + cells(job.get("n"), job.get("ungraded_criteria"), job.get("cost_usd"))
        + (cells(job.get("estimated_cost_usd")) if estimates else "")
        + f"<td class='num'>{fmt(job.get('wall_time_s'), 1)}</td><td>{links}</td></tr>"
    )


def _deviations(jobs: list[Mapping[str, object]]) -> str:
    """Under the runs table: each non-reference run's deviations."""
    items = [
        f"<li>{escape(str(j['job']))} <code>{escape(str(j['label']))}</code> "
        f"({escape(text(j, 'protocol'))}): {escape(text(j, 'deviations'))}</li>"
        for j in jobs
        if j.get("protocol") is not None and not j.get("reference")
    ]
    if not items:
        return ""
    return (
        "<p class='muted'>Deviations from the reference protocol (scores not comparable to "
        f"published):</p><ul class='deviations'>{''.join(items)}</ul>"
    )


def _headline_chart(done: list[Mapping[str, object]]) -> str:
    """Each run's headline score (its `headline` metric: `length_adjusted_score` for a
    Professional run, else `overall_score`) with its 95% whisker; the metric is named in the
    label when the runs' headlines differ, else under the title."""
    metrics = {text(j, "headline") or "overall_score" for j in done}
    bars: list[tuple[str, float, float | None]] = []
    for j in done:
        metric = text(j, "headline") or "overall_score"
        score = number(j, "headline_score")
        value, std = (
            (score, number(j, "headline_std"))
            if score is not None
            else (number(j, "overall_score") or 0.0, None)
        )
        label = (
            text(j, "label")[:48] if len(metrics) == 1 else f"{text(j, 'label')[:30]} ({metric})"
        )
        bars.append((label, value, std))
    named = ", ".join(f"<code>{escape(m)}</code>" for m in sorted(metrics))
    return f"<p class='muted'>the metric each run is quoted by: {named}</p>" + bar_chart(bars, 760)


def sweep_header(data: Mapping[str, object]) -> str:
    """The comparison's opening: inputs, banners naming their runs, and the context table."""
    fields, banners = context_parts(data)  # `cost`: with the estimate of what was abandoned
    rows = [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in fields]
    return (
        "<h1>HealthBench comparison</h1>"
        f"<p class='muted'>{escape(', '.join(map(str, listed(data, 'inputs'))))} · written "
        f"{escape(text(data, 'written_at'))} · {len(listed(data, 'jobs'))} runs, {data['failed']} "
        "failed or unfinished</p>"
        + banner_html([Banner(label, reason) for label, reason in banners])
        + f"<div class='wide'><table class='context' id='context'>{''.join(rows)}</table></div>"
    )


def sweep_report(data: Mapping[str, object], out_dir: Path) -> str:
    """The comparison's report.html, written into `out_dir` (links are relative to it)."""
    meta = [j for j in records(data.get("jobs")) if j.get("task") == "meta_eval"]
    jobs = [j for j in records(data.get("jobs")) if j.get("task") != "meta_eval"]
    body = [sweep_header(data)]
    if jobs:
        varying = _varying(jobs)
        header = ["job", "label", "status", *(name for name, _ in varying)]
        estimates = any(j["status"] == Status.DRY_RUN for j in jobs)
        header += ["protocol", "headline", "overall score", "95% CI", "n", "ungraded", "cost $"]
        header += ["estimated $", "wall s"] if estimates else ["wall s"]
        rows = [_job_row(j, out_dir, estimates, varying) for j in jobs]
        body.append("<h2>Runs</h2>" + table([*header, "files"], rows, "runs") + _deviations(jobs))
        body.append(sweep_jury_html(jobs))  # runs graded by a jury (SPEC 7.1)
        body.append(sweep_bridged_html(jobs))  # bridge.runs: beside each job's own score
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
        header = ["job", "label", "banners", "judge", "judge F1"]
        header += ["physicians F1 (pair-weighted)", "rows"]
        body.append(
            "<h2>Meta-eval: agreement with physicians (pairwise balanced F1)</h2>"
            + table([*header, "ungraded"], rows)
        )
        body.append(judge_table_html(records(data.get("judge_table"))))
    if data.get("judge_agreement"):
        rows = [
            "<tr>"
            + cells(p["a_label"], p["b_label"], f"{p['a_judge']} vs {p['b_judge']}", numeric=False)
            + cells(p["n"], p["agreement"], p["kappa"])
            + "</tr>"
            for p in records(data["judge_agreement"])
        ]
        body.append(
            "<h2>Judge agreement (items both judges graded)</h2>"
            + table(["A", "B", "judges", "n", "agreement", "Cohen's kappa"], rows)
        )
    done = [
        j for j in jobs if j["status"] == Status.COMPLETED and j.get("overall_score") is not None
    ]
    if done:
        body.append("<h2>Headline score per run</h2>" + _headline_chart(done))
        columns = [text(j, "label") for j in done]
        for kind in ("theme", "axis"):
            names = sorted(
                {k.split(":", 1)[1] for j in done for k in j if k.startswith(kind + ":")}
            )
            values = {
                (n, text(j, "label")): value
                for j in done
                for n in names
                if (value := number(j, f"{kind}:{n}")) is not None
            }
            body.append(f"<h2>{kind.title()} x run</h2>" + heat_map(names, columns, values))
    if data.get("not_compared"):
        rows = [
            "<tr>" + cells(p["a_label"], p["b_label"], p["reason"], numeric=False) + "</tr>"
            for p in records(data["not_compared"])
        ]
        body.append(
            "<h2>Not compared pairwise (not the same examples)</h2>"
            + table(["A", "B", "why"], rows)
        )
    pairs = records(data["pairs"])
    if pairs:
        items = [
            (f"{p['a_label']} − {p['b_label']}"[:64], number(p, "mean_difference") or 0.0,
             number(p, "ci_low") or 0.0, number(p, "ci_high") or 0.0)
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
    body.append(regrades_html(records(data.get("regrades"))))
    return page("HealthBench comparison", "".join(body))
