"""The judge table of a meta-eval sweep over judges (`-m task=meta_eval judge=a,b,c`).

One entry per completed meta-eval run (and, for a run graded by a jury, one per further judge
after its primary's, from its `jury`): its judge; the paper's criterion-mean balanced F1 and
simple-evals' pooled figure (SPEC 7.2), for the judge and for physicians, each with its 95%
bootstrap interval (`grading.paper_figure`); the judge's balanced F1 per category; the ungraded
rate (rows the judge gave no verdict, of the rows run); and the cost per 1,000 graded criteria
(`grading_cost` over the rows it graded; one meta-eval row is one criterion; calls replayed
from the response cache are priced as if sent, so a rerun shows what grading costs).
Written into sweep_summary.json (`judge_table`), the markdown and the sweep's report.html.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from healthbench_exp.core.run_end import Status
from healthbench_exp.core.usage_record import RoleUsage
from healthbench_exp.grading.paper_figure import (
    MODEL_CRITERION_MEAN,
    MODEL_POOLED,
    PHYSICIAN_CRITERION_MEAN,
    PHYSICIAN_POOLED,
)
from healthbench_exp.output.html.judge_table import bounds, category_figures
from healthbench_exp.sweep.jobs import Job

FIGURES = {  # column prefix -> metric
    "judge_criterion_mean": MODEL_CRITERION_MEAN,
    "judge_pooled": MODEL_POOLED,
    "physicians_criterion_mean": PHYSICIAN_CRITERION_MEAN,
    "physicians_pooled": PHYSICIAN_POOLED,
}


def judge_entry(job: Job, label: str) -> dict[str, object]:
    """One judge's line of the table (a completed meta-eval job)."""
    assert job.summary is not None
    summary = job.summary
    metrics, counts = summary.metrics, summary.meta_counts
    entry: dict[str, object] = {"job": job.name, "label": label, "judge": job.context.judge}
    for column, name in FIGURES.items():
        entry[column] = metrics.get(name)
        entry[f"{column}_ci"] = [metrics.get(f"{name}:ci_low"), metrics.get(f"{name}:ci_high")]
    entry["by_category"] = {
        row.category: row.model_f1_balanced for row in summary.by_category or []
    }
    run = counts.rows - counts.rows_not_run
    entry["rows_graded"] = counts.rows_graded
    entry["ungraded_rate"] = counts.rows_failed / run if run else None
    judge = summary.usage.judge if summary.usage else None
    cost = grading_cost(judge)
    graded = counts.rows_graded
    entry["judge_cost_usd"] = cost
    entry["cost_per_1000_graded_usd"] = per_1000_graded(cost, graded)
    return entry


def per_1000_graded(cost: float | None, graded: int) -> float | None:
    """A judge's cost per 1,000 graded criteria (None: no cost known, or nothing graded)."""
    return None if cost is None or not graded else cost / graded * 1000


CATEGORY_SUFFIX = f": {MODEL_POOLED}"  # `<category>: pairwise_model_f1_balanced`


def member_entries(job: Job, primary: Mapping[str, object]) -> list[dict[str, object]]:
    """A meta-eval graded by a jury: one line per further judge (the run's `jury.by_judge`,
    `jury.ungraded` and `usage.jury`), made from its primary judge's line `primary` (the
    physicians' figures are the run's); [] without a jury."""
    assert job.summary is not None
    summary = job.summary
    jury, counts = summary.jury, summary.meta_counts
    if jury is None:
        return []
    run = counts.rows - counts.rows_not_run
    entries = []
    for name in jury.members[1:]:
        mine = jury.by_judge.get(name, {})
        entry = {**primary, "judge": name, "label": f"{primary['label']} (jury member)"}
        for column in ("judge_criterion_mean", "judge_pooled"):
            metric = FIGURES[column]
            entry[column] = mine.get(metric)
            entry[f"{column}_ci"] = [mine.get(f"{metric}:ci_low"), mine.get(f"{metric}:ci_high")]
        entry["by_category"] = {
            key.removesuffix(CATEGORY_SUFFIX): value
            for key, value in mine.items()
            if key.endswith(CATEGORY_SUFFIX)
        }
        graded = counts.rows - jury.ungraded.get(name, 0)
        entry["rows_graded"] = graded
        entry["ungraded_rate"] = (run - graded) / run if run else None
        cost = grading_cost((summary.usage.jury or {}).get(name) if summary.usage else None)
        entry["judge_cost_usd"] = cost
        entry["cost_per_1000_graded_usd"] = per_1000_graded(cost, graded)
        entries.append(entry)
    return entries


def grading_cost(judge: RoleUsage | None) -> float | None:
    """What the judge's calls cost at its configured price: those billed, plus those replayed
    from the response cache priced as if sent (at the input and output rates: how much of their
    prompt the provider would have cached is unknown). None without a price."""
    if judge is None or judge.cost_usd is None:
        return None
    price = judge.price
    replayed = judge.replayed_prompt_tokens + judge.replayed_completion_tokens
    if not replayed:
        return judge.cost_usd
    if price is None or price.input_per_mtok is None or price.output_per_mtok is None:
        return None
    return (
        judge.cost_usd
        + judge.replayed_prompt_tokens * price.input_per_mtok / 1e6
        + judge.replayed_completion_tokens * price.output_per_mtok / 1e6
    )


def judge_table(jobs: list[Job], labels: dict[str, str]) -> list[dict[str, object]]:
    """The table's entries, one per completed meta-eval job and one per further judge of its
    jury (empty: no such job)."""
    entries = []
    for job in jobs:
        if (
            job.status == Status.COMPLETED
            and job.summary is not None
            and job.summary.is_meta_eval
            and job.summary.counts is not None
        ):
            primary = judge_entry(job, labels[job.name])
            entries += [primary, *member_entries(job, primary)]
    return entries


def _num(value: object) -> str:
    return "–" if value is None else f"{value:.4f}"


def figure_text(entry: Mapping[str, object], column: str) -> str:
    """`0.7090 [0.6950, 0.7230]`: a figure and its interval."""
    low, high = bounds(entry, column)
    interval = "" if low is None or high is None else f" [{low:.4f}, {high:.4f}]"
    return _num(entry[column]) + interval


def category_names(table: Sequence[Mapping[str, object]]) -> list[str]:
    return sorted({c for entry in table for c in category_figures(entry)})


def judge_table_markdown(table: Sequence[Mapping[str, object]]) -> list[str]:
    """The judge table and the per-category F1 (categories down, judges across)."""
    if not table:
        return []
    header = ["judge", "run", "criterion-mean F1 [95% CI]", "pooled F1 [95% CI]"]
    header += ["physicians criterion-mean", "physicians pooled", "ungraded", "$ / 1,000 graded"]
    rows = [
        "| "
        + " | ".join(
            [
                str(e["judge"]),
                f"`{e['label']}`".replace("|", "\\|"),
                *(figure_text(e, c) for c in FIGURES),
                "–" if e["ungraded_rate"] is None else f"{e['ungraded_rate']:.2%}",
                "unknown"
                if e["cost_per_1000_graded_usd"] is None
                else f"${e['cost_per_1000_graded_usd']:.4f}",
            ]
        )
        + " |"
        for e in table
    ]
    lines = ["", "## Judge table (meta-eval: agreement with physicians, balanced F1)", ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *rows]
    lines += [
        "",
        "Criterion-mean: the paper's figure (the mean over categories of each category's "
        "balanced F1; GPT-4.1 0.709, physicians 0.647 in the paper); pooled: simple-evals' "
        "`pairwise_model_f1_balanced` over every pair. Intervals: 95% bootstrap over rows "
        "within category.",
    ]
    names = category_names(table)
    if names:
        header = ["category", *(str(e["judge"]) for e in table)]
        lines += ["", "### Judge balanced F1 by category", ""]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += [
            f"| {name} | " + " | ".join(_num(category_figures(e).get(name)) for e in table) + " |"
            for name in names
        ]
    return lines
