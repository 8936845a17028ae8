"""What a job's W&B run holds at the end: summary metrics, tables with charts, the artifact.

- summary: the headline (`headline`, `headline/score`), the protocol (`protocol/*`; the run's
  config gets `protocol` too), every metric of summary.json under its reference name, plus
  `counts/*`, cost, usage, and with `calibration.meta_eval_run` `calibrated/<category>/*`;
- tables: `per_example`, `by_theme`, `by_axis`, `by_consensus_criterion` with bar charts (a
  meta-eval: `by_category`, `per_physician`, `per_row`); a jury run adds `jury/...`
  (`output.wandb.jury`) and a `verdict:<judge>` column per judge to `per_criterion` (a
  meta-eval's: to `per_row`);
- artifact `results-<run id>` (type `healthbench-results`): summary.json, the JSONL files, the HF
  results dataset and the `per_criterion` table (too large for `run.log`, which keeps 10,000 rows).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from healthbench_exp.core.summary import USAGE_FIELDS, RunSummary
from healthbench_exp.grading.scoring import tag_metric_names
from healthbench_exp.output.run_context import scored_of
from healthbench_exp.output.wandb.bridged import bridged_metrics
from healthbench_exp.output.wandb.jury import (
    jury_metrics,
    verdict_cells,
    verdict_columns,
    verdict_members,
)
from healthbench_exp.output.wandb.published import COLUMNS as PUBLISHED_COLUMNS
from healthbench_exp.output.wandb.published import TABLE as PUBLISHED_TABLE
from healthbench_exp.output.wandb.published import published_metrics, published_table_rows

if TYPE_CHECKING:  # imported when needed: loading wandb takes seconds
    import wandb

ARTIFACT_TYPE = "healthbench-results"
TABLE_LOG_MAX_ROWS = 10_000  # what run.log keeps of a table
ARTIFACT_TABLE_MAX_ROWS = 200_000  # what one artifact table holds; larger ones are split


def log_eval(run: wandb.Run, summary: RunSummary, output_dir: Path) -> None:
    """An eval's summary metrics, tables with bar charts, and the results artifact."""
    import wandb

    update_summary(run, summary)
    per_example = example_table(output_dir / "examples.jsonl")
    breakdowns = breakdown_tables(summary)
    logged: dict[str, object] = dict(breakdowns)
    if summary.published:  # every published number of the run's model and set
        logged[PUBLISHED_TABLE] = plain_table(
            PUBLISHED_COLUMNS, published_table_rows(summary.published)
        )
    if len(per_example.data) <= TABLE_LOG_MAX_ROWS:
        logged["per_example"] = per_example
    for name, table in breakdowns.items():
        logged[f"{name}_chart"] = wandb.plot.bar(
            table, "name", "score", title=f"HealthBench score {name.replace('_', ' ')}"
        )
    run.log(logged)

    artifact = wandb.Artifact(f"results-{run.id}", type=ARTIFACT_TYPE)
    for name in ("summary.json", "per_criterion.jsonl", "examples.jsonl"):
        artifact.add_file(str(output_dir / name), name=name)
    artifact.add_dir(str(output_dir / "results"), name="results")
    with tempfile.TemporaryDirectory() as staging:
        add_table(artifact, "per_example", PER_EXAMPLE_COLUMNS, per_example.data, Path(staging))
        criteria = output_dir / "per_criterion.jsonl"
        # a jury run: a verdict column per judge (the summary's members; else the rows')
        members = summary.jury.members if summary.jury else verdict_members(criteria)
        columns = PER_CRITERION_COLUMNS + verdict_columns(members)
        for index, part in enumerate(criterion_rows(criteria, members)):
            name = "per_criterion" if index == 0 else f"per_criterion_{index}"
            add_table(artifact, name, columns, part, Path(staging))
        run.log_artifact(artifact)


def log_meta_eval(run: wandb.Run, summary: RunSummary, output_dir: Path) -> None:
    """Tables by category and per physician, per-row verdicts, the results artifact."""
    import wandb

    update_summary(run, summary)
    by_category = meta_category_table(summary)
    rows = output_dir / "meta_eval.jsonl"
    # a jury run: a verdict column per judge (the summary's members; else the rows')
    members = summary.jury.members if summary.jury else verdict_members(rows)
    per_row = meta_row_table(rows, members)
    logged: dict[str, object] = {
        "by_category": by_category,
        "by_category_chart": wandb.plot.bar(
            by_category, "category", "model_f1_balanced", title="Judge balanced F1 by category"
        ),
        "per_physician": physician_table(summary),
    }
    if len(per_row.data) <= TABLE_LOG_MAX_ROWS:
        logged["per_row"] = per_row
    run.log(logged)
    artifact = wandb.Artifact(f"results-{run.id}", type=ARTIFACT_TYPE)
    for name in ("summary.json", "meta_eval.jsonl"):
        artifact.add_file(str(output_dir / name), name=name)
    artifact.add_dir(str(output_dir / "results"), name="results")
    with tempfile.TemporaryDirectory() as staging:
        columns = META_ROW_COLUMNS + verdict_columns(members)
        add_table(artifact, "per_row", columns, per_row.data, Path(staging))
        run.log_artifact(artifact)


def update_summary(run: wandb.Run, summary: RunSummary) -> None:
    """The headline first (`headline`: its metric's name, `headline/score` and its stats), the
    protocol (`protocol/*`, also in the run's config as `protocol`), then every defined metric
    under its reference name, `counts/*`, cost and usage."""
    run.summary.update(headline_metrics(summary))
    if summary.protocol is not None:
        run.config.update({"protocol": summary.protocol.to_dict()}, allow_val_change=True)
        run.summary.update(
            {
                "protocol/name": summary.protocol.name,
                "protocol/reference": summary.protocol.reference,
                "protocol/deviations": "; ".join(summary.protocol.deviations or []),
            }
        )
    run.summary.update({k: v for k, v in summary.metrics.items() if v is not None})
    counts = summary.counts.to_dict() if summary.counts is not None else {}
    run.summary.update({f"counts/{k}": v for k, v in counts.items()})
    run.summary.update(usage_metrics(summary))
    run.summary.update({"partial": bool(summary.partial), "demo": bool(summary.demo)})
    if summary.partial and summary.counts is not None and not summary.is_meta_eval:
        run.summary["partial_scored"] = scored_of(summary)  # `N of M examples scored (...)`
    run.summary.update(calibrated_metrics(summary))
    run.summary.update(jury_metrics(summary))
    run.summary.update(bridged_metrics(summary.bridged))
    run.summary.update(published_metrics(summary))  # beside the published numbers


CALIBRATED_FIELDS = ("observed", "sensitivity", "specificity", "corrected", "ci_low", "ci_high")


def calibrated_metrics(summary: RunSummary) -> dict[str, object]:
    """`calibrated/<category>/<field>` of summary.json's `calibrated` (SPEC 7.3), defined ones."""
    rows = summary.calibrated.criteria if summary.calibrated is not None else []
    return {
        f"calibrated/{row.category}/{name}": getattr(row, name)
        for row in rows
        for name in CALIBRATED_FIELDS
        if getattr(row, name) is not None
    }


def headline_metrics(summary: RunSummary) -> dict[str, object]:
    """`headline` (the metric's name) and `headline/score`, `headline/bootstrap_std`,
    `headline/n_samples` when the run has that metric; {} for a summary without a headline."""
    name = summary.headline
    if name is None or summary.metrics.get(name) is None:
        return {}
    out: dict[str, object] = {"headline": name, "headline/score": summary.metrics[name]}
    for stat in ("bootstrap_std", "n_samples"):
        if f"{name}:{stat}" in summary.metrics:
            out[f"headline/{stat}"] = summary.metrics[f"{name}:{stat}"]
    return out


def usage_metrics(summary: RunSummary) -> dict[str, object]:
    """`cost/{model,judge,total}_usd` and `usage/<role>/<counter>` for the run summary; where a
    stop abandoned requests in flight, `usage/<role>/abandoned_in_flight` and their estimated
    cost `cost/abandoned_estimated_usd` (not in `cost/total_usd`; absent when none was)."""
    usage = summary.usage
    metrics: dict[str, object] = {}
    if usage is None:
        return metrics
    if usage.total_cost_usd is not None:
        metrics["cost/total_usd"] = usage.total_cost_usd
    if usage.abandoned() and usage.abandoned_cost_usd is not None:
        metrics["cost/abandoned_estimated_usd"] = usage.abandoned_cost_usd
    for role in ("model", "judge"):
        entry = usage.role(role)
        if entry.cost_usd is not None:
            metrics[f"cost/{role}_usd"] = entry.cost_usd
        counters = entry.to_dict()  # a counter an older summary lacks is left out
        metrics.update(
            {f"usage/{role}/{k}": counters[k] for k in USAGE_FIELDS if counters[k] is not None}
        )
        if entry.abandoned_in_flight:
            metrics[f"usage/{role}/abandoned_in_flight"] = entry.abandoned_in_flight
    return metrics


def _jsonl(path: Path) -> Iterator[dict[str, object]]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


PER_CRITERION_COLUMNS = [
    "prompt_id", "rollout", "criterion_index", "criterion_id", "criterion", "points", "axis",
    "theme", "tags", "cluster", "consensus_theme", "consensus_behavior_category",
    "consensus_criterion", "criteria_met", "explanation", "judge_attempts", "error",
]  # fmt: skip
PER_EXAMPLE_COLUMNS = [
    "prompt_id", "theme", "rollout", "score", "reward", "completion", "ungraded_criteria", "error",
]  # fmt: skip


def plain_table(columns: list[str], rows: list[list[object]]) -> wandb.Table:
    """A W&B table of JSON values (str, number, bool, None), every column of any type.

    `wandb.Table(data=...)` infers a type union cell by cell (50 s of CPU for the 23,000
    criteria of a 2,000-example run); these rows come from our own JSONL files and are JSON
    already, so they are set as they are on a table whose columns take anything.
    """
    import wandb

    table = wandb.Table(columns=[*columns], data=[], allow_mixed_types=True)
    table.data = rows
    return table


def add_table(
    artifact: wandb.Artifact, name: str, columns: list[str], rows: list[list[object]], staging: Path
) -> None:
    """Add `<name>.table.json` to `artifact`: what `artifact.add(table, name)` writes, without
    its cell-by-cell conversion (another 15 s of CPU for 23,000 criteria), since the rows are
    JSON values already. W&B writes the envelope (columns, column types) itself."""
    document = plain_table(columns, []).to_json(artifact)
    document.update(data=rows, nrows=len(rows))
    path = staging / f"{name}.table.json"
    # json.dumps, not json.dump: the same text, from the C encoder (json.dump always encodes in
    # Python, token by token: 0.7 s of CPU for the 23,000 criteria of a 2,000-example run)
    path.write_text(json.dumps(document, ensure_ascii=False, allow_nan=False), encoding="utf-8")
    artifact.add_file(str(path), name=f"{name}.table.json")


def criterion_rows(path: Path, members: list[str] | None = None) -> Iterator[list[list[object]]]:
    """per_criterion.jsonl as table rows, in parts of at most ARTIFACT_TABLE_MAX_ROWS rows;
    with a jury's `members`, each judge's verdict after the columns."""
    rows: list[list[object]] = []
    for row in _jsonl(path):
        tags = row["tags"]
        row["tags"] = ",".join(map(str, tags)) if isinstance(tags, list) else tags
        rows.append([row[c] for c in PER_CRITERION_COLUMNS] + verdict_cells(row, members or []))
        if len(rows) == ARTIFACT_TABLE_MAX_ROWS:
            yield rows
            rows = []
    if rows or path.stat().st_size == 0:
        yield rows


def example_table(path: Path) -> wandb.Table:
    return plain_table(
        PER_EXAMPLE_COLUMNS, [[row[c] for c in PER_EXAMPLE_COLUMNS] for row in _jsonl(path)]
    )


def breakdown_tables(summary: RunSummary) -> dict[str, wandb.Table]:
    """by_theme, by_axis, by_consensus_criterion: name, score, bootstrap_std, n_samples."""
    import wandb

    metrics = summary.metrics
    columns = ["name", "score", "bootstrap_std", "n_samples"]
    tables = {}
    for table_name, prefix in (("by_theme", "theme:"), ("by_axis", "axis:")):
        names = tag_metric_names(metrics, prefix)
        data = [
            [n[len(prefix) :], metrics[n], metrics[f"{n}:bootstrap_std"], metrics[f"{n}:n_samples"]]
            for n in names
        ]
        tables[table_name] = wandb.Table(columns=[*columns], data=data)
    consensus = [
        [
            f"{row.theme} / {row.behavior_category} / {row.criterion}",
            row.score,
            row.bootstrap_std,
            row.n_samples,
        ]
        for row in summary.consensus or []
    ]
    tables["by_consensus_criterion"] = wandb.Table(columns=[*columns], data=consensus)
    return tables


META_CATEGORY_COLUMNS = [
    "category", "model_f1_balanced", "model_n", "physicians_mean_f1_balanced",
    "physicians_weighted_mean_f1_balanced", "physicians", "rows", "rows_graded",
]  # fmt: skip
META_ROW_COLUMNS = [
    "prompt_id", "completion_id", "repeat", "category", "rubric", "criteria_met",
    "binary_labels", "explanation", "judge_attempts", "error",
]  # fmt: skip


def meta_category_table(summary: RunSummary) -> wandb.Table:
    """The judge's and the physicians' balanced F1 per category (undefined: empty cell)."""
    import wandb

    rows = [row.to_dict() for row in summary.by_category or []]
    data = [[row[c] for c in META_CATEGORY_COLUMNS] for row in rows]
    return wandb.Table(columns=[*META_CATEGORY_COLUMNS], data=data, allow_mixed_types=True)


def physician_table(summary: RunSummary) -> wandb.Table:
    """Each physician's leave-one-out precision, recall and F1 (pos, neg, balanced), overall."""
    import wandb

    names = [f"pairwise_physician_{k}_{c}" for k in ("f1", "precision", "recall")
             for c in ("balanced", "pos", "neg")]  # fmt: skip
    columns = ["physician", *(n.removeprefix("pairwise_physician_") for n in names), "n_f1"]
    data = [
        [pid, *(m[n].value for n in names), m["pairwise_physician_f1_balanced"].n]
        for pid, m in (summary.agreement.physicians if summary.agreement else {}).items()
    ]
    return wandb.Table(columns=[*columns], data=data, allow_mixed_types=True)


def meta_row_table(path: Path, members: list[str] | None = None) -> wandb.Table:
    """meta_eval.jsonl as a table; with a jury's `members`, each judge's verdict after the
    columns (`verdict:<judge>`), as an eval's per_criterion table has them."""
    data: list[list[object]] = []
    for row in _jsonl(path):
        labels = row["binary_labels"]
        if isinstance(labels, list):
            row["binary_labels"] = ",".join("1" if x else "0" for x in labels)
        data.append([row[c] for c in META_ROW_COLUMNS] + verdict_cells(row, members or []))
    return plain_table(META_ROW_COLUMNS + verdict_columns(members or []), data)
