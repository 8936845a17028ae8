"""A comparison of runs as text: `sweep_summary.md` (also printed) and `sweep_summary.csv`.

The markdown opens with the comparison's context (runs, models, judges, data, sampling, dates,
cost, protocol) and its banners (DEMO, PARTIAL, ...), then one row per run labelled by the
overrides that set it apart, with model, judge, data, temperature, banners, its protocol (the
set's reference bundle, or how many settings deviate, listed under the table) and its headline
metric first (`length_adjusted_score` for Professional, else `overall_score`), then
`overall_score` (and with a jury, the jury's overall score); scores by theme; meta-eval runs;
judge agreement; the pairs not compared and why; paired differences.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

from healthbench_exp.core.run_end import Status
from healthbench_exp.output.html.charts import context_parts, listed, records, text
from healthbench_exp.sweep.abandoned import abandoned_of, cost_total_text
from healthbench_exp.sweep.bridged import bridged_cell, has_bridged
from healthbench_exp.sweep.judge_table import judge_table_markdown
from healthbench_exp.sweep.jury import has_jury, jury_cell
from healthbench_exp.sweep.published import has_published, published_cell
from healthbench_exp.sweep.regrade_compare import regrade_markdown


def _usd(value: object) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _num(value: object) -> str:
    return "undefined" if value is None else f"{value:.4f}"


def _cell(value: object) -> str:
    """A table cell: `–` for nothing, pipes escaped."""
    return "–" if value in (None, "") else str(value).replace("|", "\\|")


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(_cell(v) for v in row) + " |" for row in rows),
    ]


def context_lines(data: Mapping[str, object]) -> list[str]:
    """The header: banners first, then one line per context field."""
    fields, banners = context_parts(data)
    lines = [f"**{label}**: {reason}  " for label, reason in banners]
    lines += [f"- {name}: {value}" for name, value in fields]
    return lines


def protocol_cell(r: Mapping[str, object]) -> str | None:
    """`<set>` for a reference run, `<set>: NOT reference (k deviations)` otherwise."""
    if r.get("protocol") is None:
        return None
    if r.get("reference"):
        return f"{r['protocol']} (reference)"
    count = len(text(r, "deviations").split("; "))
    return f"{r['protocol']}: NOT reference ({count} deviation{'s' * (count != 1)})"


def _headline_cells(r: Mapping[str, object]) -> list[object]:
    """The headline metric's name, its value ± std and 95% CI."""
    if r.get("headline_score") is None:
        return [r.get("headline"), None, None]
    std = r.get("headline_std")
    ci = f"{r['headline_ci_low']:.4f}–{r['headline_ci_high']:.4f}" if std is not None else None
    value = f"{r['headline_score']:.4f}" + (f" ± {std:.4f}" if std is not None else "")
    return [f"`{r['headline']}`", value, ci]


def _score_cells(r: Mapping[str, object]) -> list[object]:
    """headline (metric, value ± std, 95% CI), overall score ± std, n, ungraded, tokens, cost,
    estimate, wall time."""
    if r.get("overall_score") is not None:
        return [
            *_headline_cells(r),
            f"{r['overall_score']:.4f} ± {r['bootstrap_std']:.4f}",
            r["n"],
            r["ungraded_criteria"],
            r["tokens"],
            _usd(r["cost_usd"]),
            None,
            f"{r['wall_time_s']:.1f}",
        ]
    if r["status"] == Status.DRY_RUN:
        return [None, None, None, None, None, None, None, None, _usd(r["estimated_cost_usd"]), None]
    # no score: what it paid all the same (a job that paid is never shown as free)
    wall = r.get("wall_time_s")
    spent = [r.get("tokens"), _usd(r.get("cost_usd")), None]
    return [None, None, None, None, None, None, *spent, None if wall is None else f"{wall:.1f}"]


def deviation_lines(rows: Sequence[Mapping[str, object]]) -> list[str]:
    """Under the table: each non-reference run's deviations from its set's protocol."""
    deviating = [r for r in rows if r.get("protocol") is not None and not r.get("reference")]
    if not deviating:
        return []
    lines = ["", "Deviations from the reference protocol (scores not comparable to published):"]
    lines += [
        f"- {r['job']} `{r['label']}` ({r['protocol']}): {r['deviations']}" for r in deviating
    ]
    return lines


def _estimates(data: Mapping[str, object]) -> dict[str, Mapping[str, object]]:
    """`estimated_usage`: role -> the sweep's estimated figures."""
    usage = data.get("estimated_usage")
    if not isinstance(usage, dict):
        return {}
    return {str(role): f for role, f in usage.items() if isinstance(f, dict)}


def markdown(data: Mapping[str, object]) -> str:
    inputs = ", ".join(f"`{p}`" for p in listed(data, "inputs"))
    lines = [f"# HealthBench comparison of {inputs}", "", *context_lines(data)]
    evals = [r for r in records(data["jobs"]) if r.get("task") != "meta_eval"]
    if evals:
        header = ["job", "label", "status", "banners", "model", "judge", "data", "T", "protocol"]
        header += ["headline", "score", "95% CI", "overall_score", "n", "ungraded", "tokens"]
        header += ["cost", "estimated cost", "wall s"]
        jury = has_jury(evals)  # a jury run: its jury's overall score beside the primary's
        header += ["jury overall_score"] * jury
        bridged = has_bridged(evals)  # bridge.runs: the bridged score beside the job's own
        header += ["bridged_score [95% CI]"] * bridged
        published = has_published(evals)  # beside the best-matching published number
        header += ["published (best match)"] * published
        rows: list[list[object]] = [
            [
                *(r["job"], f"`{r['label']}`", r["status"], r["banners"], r["replies"]),
                *(r["judge"], r["data"], r["temperature"], protocol_cell(r), *_score_cells(r)),
                *[jury_cell(r)] * jury,
                *[bridged_cell(r)] * bridged,
                *[published_cell(r)] * published,
            ]
            for r in evals
        ]
        lines += ["", "## Runs", "", *_table(header, rows)]
        errors = [(r["job"], r["error"]) for r in evals if r.get("error")]
        lines += [f"- {job}: {error}" for job, error in errors]
        lines += deviation_lines(evals)
        themes = sorted({k for r in evals for k in r if k.startswith("theme:")})
        # runs with themes (Professional's examples have none)
        scored = [
            r for r in evals if r.get("overall_score") is not None and any(t in r for t in themes)
        ]
        if themes and scored:
            rows = [[f"`{r['label']}`", *(_num(r.get(t)) for t in themes)] for r in scored]
            header = ["run", *(t.removeprefix("theme:") for t in themes)]
            lines += ["", "## Scores by theme", "", *_table(header, rows)]
    meta = [r for r in records(data["jobs"]) if r.get("task") == "meta_eval"]
    if meta:
        header = ["job", "label", "banners", "judge", "judge F1", "physicians F1 (pair-weighted)"]
        header += ["mean over categories: judge, physicians", "rows", "ungraded"]
        rows = [
            [
                *(r["job"], f"`{r['label']}`", r["banners"], r["judge"]),
                _num(r.get("pairwise_model_f1_balanced")),
                _num(r.get("physicians_f1_balanced")),
                f"{_num(r.get('category_mean_model_f1_balanced'))}, "
                f"{_num(r.get('category_mean_physicians_f1_balanced'))}",
                r.get("rows"),
                r.get("ungraded_rows"),
            ]
            for r in meta
        ]
        title = "## Meta-eval jobs (agreement with physicians, pairwise balanced F1)"
        lines += ["", title, "", *_table(header, rows)]
    lines += judge_table_markdown(records(data.get("judge_table")))
    if data["judge_agreement"]:
        rows = [
            [
                *(f"`{p['a_label']}`", f"`{p['b_label']}`", f"{p['a_judge']} vs {p['b_judge']}"),
                *(p["n"], _num(p["agreement"]), _num(p["kappa"])),
            ]
            for p in records(data["judge_agreement"])
        ]
        header = ["A", "B", "judges", "n", "agreement", "Cohen's kappa"]
        lines += ["", "## Judge agreement (items both jobs' judges graded)", ""]
        lines += _table(header, rows)
    sums = abandoned_of(data)
    if data.get("cost_usd") is not None or sums:  # with the estimate of what was abandoned
        cost = dict(context_parts(data)[0]).get("cost", "")
        note = " (from illustrative prices, not a provider's bill)" * ("illustrative" in cost)
        spent = data.get("cost_usd")
        known = float(spent) if isinstance(spent, int | float) else None
        total_text = cost_total_text(known, note, sums)
        lines += ["", f"Cost of the sweep: {total_text}"]
    if data.get("estimated_cost_usd") is not None:
        lines += ["", f"Estimated cost of the sweep (dry run): {_usd(data['estimated_cost_usd'])}"]
    if data.get("estimated_usage"):
        lines += ["", "Estimated for the whole sweep (dry run; what the response cache holds is "]
        lines[-1] += "not paid again):"
        lines += [""] + [
            f"- {role}: {f['calls']:,.0f} calls ({f['cached_calls']:,.0f} in the cache); to pay "
            f"~{f['prompt_tokens']:,.0f} input ({f['cached_prompt_tokens']:,.0f} cached) + "
            f"~{f['completion_tokens']:,.0f} output ({f['reasoning_tokens']:,.0f} reasoning) "
            f"tokens, {_usd(f['cost_usd'])}"
            for role, f in _estimates(data).items()
        ]
    if data.get("not_compared"):
        lines += ["", "## Not compared pairwise", ""]
        lines += [
            f"- `{p['a_label']}` vs `{p['b_label']}`: {p['reason']}"
            for p in records(data["not_compared"])
        ]
    if data["pairs"]:
        rows = [
            [
                *(f"`{p['a_label']}`", f"`{p['b_label']}`", p["n"], f"{p['mean_difference']:+.4f}"),
                f"{p['ci_low']:+.4f} – {p['ci_high']:+.4f}",
                f"{p['sign_flip_fraction']:.3f}",
            ]
            for p in records(data["pairs"])
        ]
        header = ["A", "B", "n", "mean diff", "95% CI", "sign flips"]
        lines += ["", "## Paired differences (A − B)", "", *_table(header, rows)]
    lines += regrade_markdown(records(data.get("regrades")))
    return "\n".join(lines) + "\n"


def write_csv(path: Path, rows: Sequence[Mapping[str, object]]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns and k != "files"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
