"""The paper's agreement figure in the meta-eval (SPEC 7.2) and the judge table of a meta-eval
sweep over judges, end to end against the built-in endpoint, checked against simple-evals'
computation (an independent transcription) category by category."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean

import pytest

from tests.e2e.test_e2e import run_cli
from tests.engine.test_runner import read_jsonl
from tests.grading.test_agreement import reference_physicians, reference_rater_metrics

META = ("task=meta_eval", "judge=offline", "dataset.source=bundled", "wandb=disabled")
BALANCED = "pairwise_{}_f1_balanced"


def criterion_means(records: list[dict]) -> tuple[float, float]:
    """The judge's and the physicians' criterion-mean balanced F1, by SPEC 7.2's recipe, from the
    reference's per-category metrics."""
    graded = [r for r in records if r["criteria_met"] is not None]
    judge = reference_rater_metrics(
        [r["criteria_met"] for r in graded], [r["binary_labels"] for r in graded],
        [r["category"] for r in graded], "model",
    )  # fmt: skip
    categories = sorted({r["category"] for r in records})
    judge_values = [
        judge[key]["value"]
        for c in categories
        if (key := f"{c}: {BALANCED.format('model')}") in judge
    ]
    physicians = reference_physicians(
        [r["binary_labels"] for r in records],
        [r["anonymized_physician_ids"] for r in records],
        [r["category"] for r in records],
    )
    per_category = []
    for c in categories:
        key = f"{c}: {BALANCED.format('physician')}"
        values = [m[key]["value"] for m in physicians.values() if key in m]
        if values:
            per_category.append(mean(values))
    return mean(judge_values), mean(per_category)


def test_a_meta_eval_reports_both_figures_with_intervals(tmp_path: Path) -> None:
    result = run_cli(*META, "runner.bootstrap_samples=200", f"hydra.run.dir={tmp_path}")
    assert result.returncode == 0, result.stderr
    metrics = json.loads((tmp_path / "summary.json").read_text())["metrics"]
    judge, physicians = criterion_means(read_jsonl(tmp_path / "meta_eval.jsonl"))
    assert metrics["criterion_mean:pairwise_model_f1_balanced"] == pytest.approx(judge)
    assert metrics["criterion_mean:pairwise_physician_f1_balanced"] == pytest.approx(physicians)
    for name in (
        "criterion_mean:pairwise_model_f1_balanced",
        "pairwise_model_f1_balanced",
        "criterion_mean:pairwise_physician_f1_balanced",
        "physicians_mean:pairwise_physician_f1_balanced",
    ):
        low, high = metrics[f"{name}:ci_low"], metrics[f"{name}:ci_high"]
        assert 0 <= low < high <= 1, name
    assert "then the mean over categories (the paper's figure))" in result.stdout


def test_a_meta_eval_sweep_over_judges_ends_in_a_judge_table(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    result = run_cli(
        "-m", *META, "judge.name=judge-a,judge-b", "cache.enabled=false",
        "offline_server.malformed_rate=0.25", "judge.max_parse_retries=0",
        "runner.bootstrap_samples=100", "runner.max_failure_fraction=0.5",
        f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    table = json.loads((sweep / "sweep_summary.json").read_text())["judge_table"]
    assert [e["judge"] for e in table] == ["judge-a", "judge-b"]
    for entry in table:
        summary = json.loads((Path(sweep) / entry["job"] / "summary.json").read_text())
        metrics, counts = summary["metrics"], summary["counts"]
        assert entry["judge_criterion_mean"] == metrics["criterion_mean:pairwise_model_f1_balanced"]
        assert entry["judge_pooled_ci"] == [
            metrics["pairwise_model_f1_balanced:ci_low"],
            metrics["pairwise_model_f1_balanced:ci_high"],
        ]
        assert entry["by_category"] == {
            r["category"]: r["model_f1_balanced"] for r in summary["by_category"]
        }
        assert 0 < counts["rows_failed"] < 40
        assert entry["ungraded_rate"] == pytest.approx(counts["rows_failed"] / 40)
        # the offline judge's price: $2 per million input tokens, $0.50 cached, $8 output
        judge = summary["usage"]["judge"]
        dollars = (
            (judge["prompt_tokens"] - judge["cached_prompt_tokens"]) * 2.0
            + judge["cached_prompt_tokens"] * 0.5
            + judge["completion_tokens"] * 8.0
        ) / 1e6
        assert entry["cost_per_1000_graded_usd"] == pytest.approx(
            dollars / counts["rows_graded"] * 1000
        )
    text = (sweep / "sweep_summary.md").read_text()
    assert "## Judge table" in text and "### Judge balanced F1 by category" in text
    low, high = table[0]["judge_criterion_mean_ci"]
    assert f"{table[0]['judge_criterion_mean']:.4f} [{low:.4f}, {high:.4f}]" in text
    page = (sweep / "report.html").read_text()
    assert "id='judge-table'" in page and "Judge balanced F1 by category" in page
