"""What a run leaves on disk, and the table printed at its end.

- `per_criterion.jsonl`: one row per example x rollout x criterion, written as examples finish.
- `examples.jsonl`: one row per example x rollout (score, reward, reply, failure reason).
- `summary.json`: `{"metrics", "counts", "consensus", "failures", "protocol", "config"}`.
- `results/`: the HF dataset (`datasets.save_to_disk`) in the verifiers record schema (SPEC 5).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from healthbench_exp.core.strict_json import dumps
from healthbench_exp.engine.stops import OutputWriteError
from healthbench_exp.grading.scoring import ci95, consensus_criteria, reward, tag_metric_names
from healthbench_exp.output.html import report as html_report

if TYPE_CHECKING:
    from healthbench_exp.core.types import ExampleResult


def criterion_rows(result: ExampleResult) -> list[dict[str, Any]]:
    """The per_criterion.jsonl rows of one (example, rollout), failed examples included."""
    table = consensus_criteria()
    rows = []
    for index, criterion in enumerate(result.example.rubrics):
        grade = result.grades[index] if result.grades else None  # none: the example failed
        consensus = table.get(criterion.cluster or "", {})
        rows.append(
            {
                "prompt_id": result.example.prompt_id,
                "rollout": result.rollout,
                "criterion_index": index,
                "criterion_id": criterion.criterion_id,
                "criterion": criterion.text,
                "points": criterion.points,
                "axis": criterion.axis,
                "theme": result.example.theme,
                "tags": list(criterion.tags),
                "cluster": criterion.cluster,
                "consensus_theme": consensus.get("theme"),
                "consensus_behavior_category": consensus.get("behavior_category"),
                "consensus_criterion": consensus.get("criterion"),
                "criteria_met": grade.criteria_met if grade else None,
                "explanation": grade.explanation if grade else "",
                "judge_attempts": grade.attempts if grade else 0,
                "error": grade.error if grade else f"example failed: {result.error}",
            }
        )
    return rows


def example_row(result: ExampleResult) -> dict[str, Any]:
    score = result.score
    return {
        "prompt_id": result.example.prompt_id,
        "rollout": result.rollout,
        "theme": result.example.theme,
        "example_tags": list(result.example.example_tags),
        "score": score,
        "reward": None if score is None else reward(score),
        "criteria": len(result.example.rubrics),
        "ungraded_criteria": result.ungraded,
        "error": result.error,
        "messages": result.messages,
        "completion": result.completion,
    }


class JsonlWriter:
    """Appends rows to one JSONL file, flushing each, so nothing finished is lost."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: TextIO | None = None

    def __enter__(self) -> JsonlWriter:
        with output_errors(self.path):
            self.file = open(self.path, "w", encoding="utf-8")
        return self

    def write(self, row: dict[str, Any]) -> None:
        assert self.file is not None
        with output_errors(self.path):
            self.file.write(dumps(row, ensure_ascii=False) + "\n")
            self.file.flush()

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            with contextlib.suppress(OSError):  # a failed write already raised OutputWriteError
                self.file.close()


class ResultWriter:
    """Appends each finished example to the JSONL files and flushes, so nothing finished is lost."""

    def __init__(self, output_dir: Path) -> None:
        self.output_dir = output_dir
        self.files: dict[str, TextIO] = {}

    def __enter__(self) -> ResultWriter:
        for name in ("per_criterion", "examples"):
            with output_errors(self.output_dir / f"{name}.jsonl"):
                self.files[name] = open(self.output_dir / f"{name}.jsonl", "w", encoding="utf-8")
        return self

    def write(self, result: ExampleResult) -> None:
        lines = "".join(dumps(row, ensure_ascii=False) + "\n" for row in criterion_rows(result))
        with output_errors(self.output_dir / "per_criterion.jsonl"):
            self.files["per_criterion"].write(lines)
            self.files["per_criterion"].flush()
        with output_errors(self.output_dir / "examples.jsonl"):
            self.files["examples"].write(dumps(example_row(result), ensure_ascii=False) + "\n")
            self.files["examples"].flush()

    def __exit__(self, *exc: object) -> None:
        for f in self.files.values():
            with contextlib.suppress(OSError):  # a failed write already raised OutputWriteError
                f.close()


@contextlib.contextmanager
def output_errors(path: Path) -> Iterator[None]:
    """An OSError writing `path` becomes OutputWriteError, which names the path."""
    try:
        yield
    except OSError as exc:
        raise OutputWriteError(path, exc) from None


def write_json(path: Path, data: Any) -> None:
    """Write strict JSON (no NaN/Infinity: null) atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
        partial.replace(path)
    except BaseException:  # a full disk or a signal: leave no half-written .partial behind
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


def write_summary(output_dir: Path, summary: dict[str, Any]) -> None:
    write_json(output_dir / "summary.json", summary)


OWN_FILES = {
    ".hydra", "healthbench.log", "status.json", "summary.json", "per_criterion.jsonl",
    "examples.jsonl", "results", "report.html", "wandb", "meta_eval.jsonl",
    "estimate.json", "batches.json", "invocations.jsonl", ".lock", "report_examples.js",
}  # fmt: skip


def foreign_files(output_dir: Path) -> list[str]:
    """Names in `output_dir` that a healthbench-exp run would not have written."""
    if not output_dir.is_dir():
        return []
    return sorted(
        p.name
        for p in output_dir.iterdir()
        if p.name not in OWN_FILES and not p.name.endswith(".partial")
    )


def write_status(output_dir: Path, status: str, error: str | None = None) -> None:
    """`status.json`: running, completed or failed (with the error), for sweep summaries.

    A final status refreshes the run's report.html (written before the status was known), so
    its banners say how the run ended; a report that cannot be refreshed is only logged.
    """
    write_json(output_dir / "status.json", {"status": status, "error": error})
    if status != "running" and (output_dir / "report.html").exists():
        try:
            html_report.refresh_report(output_dir)
        except Exception as exc:  # the status is written; the report is optional
            logging.getLogger("healthbench_exp").warning("report.html not refreshed: %s", exc)


def try_write_status(output_dir: Path, status: str, error: str | None = None) -> str | None:
    """`write_status` for a run that is already failing: None when written, else a line saying
    that status.json could not be written and why (so the caller reports it, not a traceback)."""
    try:
        write_status(output_dir, status, error)
        return None
    except OSError:
        pass
    # a full disk has no room for the new copy: overwrite the old one in place (its blocks are
    # freed by the truncation and reused), not atomic but better than a status left at running
    path = output_dir / "status.json"
    try:
        with open(path, "r+", encoding="utf-8") as file:
            file.truncate(0)
            file.write(dumps({"status": status, "error": error}, indent=2))
    except OSError as exc:
        return f"{path} could not be updated ({exc.strerror or exc})"
    return None


def results_record(result: ExampleResult) -> dict[str, Any]:
    """One row of the results dataset, in the verifiers environment's schema (SPEC section 5)."""
    table = consensus_criteria()
    example = result.example
    score = result.score
    assert score is not None and result.completion is not None
    clipped = reward(score)
    return {
        "prompt": result.messages,
        "completion": [{"role": "assistant", "content": result.completion}],
        "reward": clipped,
        "reward_healthbench": clipped,
        "score": score,
        "rollout": result.rollout,
        "answer": "",
        "task": "default",
        "info": {
            "prompt_id": example.prompt_id,
            "theme": example.theme,
            "criteria": [c.text for c in example.rubrics],
            "criterion_ids": [c.criterion_id for c in example.rubrics],
            "points_list": [c.points for c in example.rubrics],
            "axes": [c.axis for c in example.rubrics],
            "consensus_criteria": [
                table.get(c.cluster) if c.cluster else None for c in example.rubrics
            ],
        },
        "performance_by_rubric": [
            {"criteria_met": g.criteria_met, "judge_explanation": g.explanation or None}
            for g in result.grades
        ],
    }


def write_results_dataset(path: Path, results: list[ExampleResult]) -> None:
    """Save the scored rows as an HF dataset; failed and unscorable rows stay in examples.jsonl."""
    import datasets
    from datasets import Features, Sequence, Value

    datasets.disable_progress_bars()
    records = [results_record(r) for r in results if r.metrics is not None]
    integral = all(isinstance(p, int) for r in records for p in r["info"]["points_list"])
    message = {"role": Value("string"), "content": Value("string")}
    features = Features(
        {
            "prompt": [message],
            "completion": [message],
            "reward": Value("float64"),
            "reward_healthbench": Value("float64"),
            "score": Value("float64"),
            "rollout": Value("int32"),
            "answer": Value("string"),
            "task": Value("string"),
            "info": {
                "prompt_id": Value("string"),
                "theme": Value("string"),
                "criteria": Sequence(Value("string")),
                "criterion_ids": Sequence(Value("string")),
                "points_list": Sequence(Value("int64" if integral else "float64")),
                "axes": Sequence(Value("string")),
                "consensus_criteria": [
                    {
                        "theme": Value("string"),
                        "behavior_category": Value("string"),
                        "criterion": Value("string"),
                    }
                ],
            },
            "performance_by_rubric": [
                {"criteria_met": Value("bool"), "judge_explanation": Value("string")}
            ],
        }
    )
    columns = {name: [record[name] for record in records] for name in features}
    # one shard even when empty: `load_from_disk` cannot read back a zero-shard dataset
    datasets.Dataset.from_dict(columns, features=features).save_to_disk(str(path), num_shards=1)


def write_meta_eval_dataset(path: Path, records: list[dict[str, Any]]) -> None:
    """Save the meta-eval's per-row verdicts (the rows of meta_eval.jsonl) as an HF dataset."""
    import datasets
    from datasets import Features, Sequence, Value

    datasets.disable_progress_bars()
    features = Features(
        {
            "prompt_id": Value("string"),
            "completion_id": Value("string"),
            "repeat": Value("int32"),
            "category": Value("string"),
            "rubric": Value("string"),
            "criteria_met": Value("bool"),
            "explanation": Value("string"),
            "judge_attempts": Value("int32"),
            "error": Value("string"),
            "binary_labels": Sequence(Value("bool")),
            "anonymized_physician_ids": Sequence(Value("string")),
        }
    )
    columns = {name: [record[name] for record in records] for name in features}
    datasets.Dataset.from_dict(columns, features=features).save_to_disk(str(path), num_shards=1)


def _ci(metrics: dict[str, Any], name: str) -> str:
    mean, std = metrics[name], metrics[f"{name}:bootstrap_std"]
    low, high = ci95(mean, std)
    return f"{mean:.4f}  [{low:.4f}, {high:.4f}]  n={metrics[f'{name}:n_samples']}"


def _value(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


def format_meta_report(summary: dict[str, Any]) -> str:
    """The end-of-run table of a meta-eval: judge vs physicians, overall and by category."""
    metrics, counts = summary["metrics"], summary["counts"]
    judge, physicians = (
        "pairwise_model_f1_balanced",
        "physicians_weighted_mean:pairwise_physician_f1_balanced",
    )
    lines = [
        "",
        "HealthBench meta-eval: agreement with physicians (pairwise balanced F1; "
        "physicians: n-weighted mean, each vs the others)",
        f"  judge    pairwise_model_f1_balanced  {_value(metrics[judge])}"
        f"   (pos F1 {_value(metrics['pairwise_model_f1_pos'])}, "
        f"neg F1 {_value(metrics['pairwise_model_f1_neg'])})",
        f"  physicians                           {_value(metrics.get(physicians))}"
        f"   ({counts['physicians']} physicians)",
        f"  mean over categories: judge {_value(metrics[f'category_mean:{judge}'])}, "
        f"physicians {_value(metrics[f'category_mean:{physicians}'])}",
        f"  by category:{'':<53} judge  physicians  rows",
    ]
    for row in summary["by_category"]:
        lines.append(
            f"    {row['category'].removeprefix('cluster:')[:60]:<60} "
            f"{_value(row['model_f1_balanced']):>9} "
            f"{_value(row['physicians_weighted_mean_f1_balanced']):>10} {row['rows']:>5}"
        )
    lines.append(
        f"  rows graded {counts['rows_graded']}/{counts['rows']}, ungraded {counts['rows_failed']}"
        f"; judge requests {counts['judge_requests']} (from the cache: "
        f"{counts['judge_cache_hits']}); wall time {counts['wall_time_s']:.1f} s"
    )
    if counts["rows_failed"]:
        lines.append("  ungraded rows are left out of the judge's metrics (see meta_eval.jsonl)")
    lines += _cost_lines(summary)
    return "\n".join(lines)


def _cost_lines(summary: dict[str, Any]) -> list[str]:
    """Usage and cost per endpoint over every invocation of the run, each invocation's cost
    when there were several, and the budget's verdict if one was set."""
    from healthbench_exp.model.costs import format_usage

    usage = summary["usage"]
    lines = [format_usage(usage)]
    invocations = usage.get("invocations") or []
    if len(invocations) > 1:
        costs = ", ".join(
            f"#{i['invocation']} "
            + ("unknown" if i["total_cost_usd"] is None else f"${i['total_cost_usd']:.4f}")
            for i in invocations
        )
        lines.append(f"  over {len(invocations)} invocations of this run: {costs}")
    budget = summary.get("budget")
    if budget and budget["stopped"]:
        lines.append(
            f"  PARTIAL RUN: budget.max_usd={budget['max_usd']:g} reached after spending "
            f"${budget['spent_usd']:.4f} in this invocation; {summary['counts']['rows_not_run']} "
            f"of {summary['counts']['rows']} rows not run (resume to finish them; finished "
            "calls are not paid again)"
        )
    elif budget:
        lines.append(
            f"  budget: ${budget['spent_usd']:.4f} of ${budget['max_usd']:g} spent in this "
            "invocation"
        )
    return lines


def format_report(summary: dict[str, Any]) -> str:
    """The end-of-run table: overall score with a 95% CI, by theme, by axis, counts."""
    if summary.get("task") == "meta_eval":
        return format_meta_report(summary)
    metrics, counts = summary["metrics"], summary["counts"]
    lines = [
        "",
        "HealthBench results (mean clipped to [0, 1]; 95% CI = mean +- 1.96 bootstrap std)",
    ]
    if summary.get("demo"):
        lines.append("  DEMO: the built-in offline endpoint answered; these scores mean nothing")
    if summary.get("partial"):
        lines.append(
            f"  PARTIAL: {counts['rows_not_run']} of {counts['rows']} rows not run; the scores "
            "cover the finished rows only"
        )
    if "overall_score" in metrics:
        lines.append(f"  overall_score          {_ci(metrics, 'overall_score')}")
        for prefix in ("theme:", "axis:"):
            names = tag_metric_names(metrics, prefix)
            if names:
                lines.append(f"  by {prefix[:-1]}:")
                lines.extend(f"    {n[len(prefix) :]:<22} {_ci(metrics, n)}" for n in names)
    else:
        lines.append("  no example could be scored")
    unscorable = counts.get("rows_unscorable", 0)
    lines.append(
        f"  rows scored {counts['rows_scored']}/{counts['rows']}, failed {counts['rows_failed']}, "
        + (f"unscorable {unscorable}, " if unscorable else "")
        + f"not run {counts['rows_not_run']}; "
        f"ungraded criteria {counts['ungraded_criteria']}/{counts['criteria']}"
    )
    several = len(summary["usage"].get("invocations") or []) > 1
    lines.append(
        f"  requests{' this invocation' if several else ''}: model {counts['model_requests']}, "
        f"judge {counts['judge_requests']} "
        f"(from the cache, not paid again: model {counts['model_cache_hits']}, "
        f"judge {counts['judge_cache_hits']}); wall time {counts['wall_time_s']:.1f} s"
    )
    if summary["failures"]:
        first = summary["failures"][0]
        lines.append(
            f"  first failure: {first['prompt_id']} rollout {first['rollout']}: {first['error']}"
        )
    if counts["ungraded_criteria"]:
        lines.append(
            "  ungraded criteria are left out of the scores (see per_criterion.jsonl, error column)"
        )
    lines += _cost_lines(summary)
    return "\n".join(lines)
