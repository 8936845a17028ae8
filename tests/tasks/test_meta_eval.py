"""The meta-eval task end to end against real loopback servers, checked against the reference."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import datasets
import pytest

from healthbench_exp import load_meta_rows
from healthbench_exp import run as run_eval
from healthbench_exp.config.schema import (
    Config,
    DatasetConfig,
    DataSource,
    JudgeConfig,
    RunnerConfig,
    SamplingConfig,
    TaskConfig,
    TaskKind,
    WandbConfig,
    WandbMode,
)
from healthbench_exp.data.healthbench import THEMES, DataError
from healthbench_exp.data.meta_eval import parse_meta_row
from healthbench_exp.grading.grader import grader_prompt, grader_template
from healthbench_exp.tasks.meta_eval import row_conversation
from tests.engine.test_runner import read_jsonl
from tests.grading.test_agreement import reference_physicians, reference_rater_metrics


def meta_config(base_url: str, **changes) -> Config:
    config = Config(
        task=TaskConfig(kind=TaskKind.meta_eval),
        judge=JudgeConfig(name="judge", base_url=base_url, api_key_env=None, max_parse_retries=8),
        dataset=DatasetConfig(difficulty="sample", source=DataSource.bundled, sha256=None),
        runner=RunnerConfig(progress=False, max_retries=6, bootstrap_samples=50),
        wandb=WandbConfig(mode=WandbMode.disabled),
    )
    return replace(config, **changes)


def meta_row(**changes) -> dict:
    row = {
        "prompt": [{"role": "user", "content": "Is a fever of 38.5 C dangerous for an adult?"}],
        "prompt_id": "m1",
        "completion": "Usually not; rest, fluids, and seek care if it lasts over three days.",
        "completion_id": "c1",
        "rubric": "Advises when to seek care.",
        "category": "cluster:hedging_no-uncertainty_accurate",
        "binary_labels": [True, False],
        "anonymized_physician_ids": ["p1", "p2"],
        "canary": "test",
    }
    row.update(changes)
    return row


def test_bundled_sample_covers_themes_and_several_physicians() -> None:
    config = meta_config("http://unused")
    rows = load_meta_rows(config.dataset, config.task)
    assert 20 <= len(rows) <= 40
    physicians = {p for r in rows for p in r.physician_ids}
    assert len(physicians) >= 5
    themes = {t for t in THEMES for r in rows if r.category.startswith(f"cluster:{t}_")}
    assert themes == set(THEMES)
    # every category has labels of both classes, so its F1s are defined
    for category in {r.category for r in rows}:
        labels = {x for r in rows if r.category == category for x in r.binary_labels}
        assert labels == {True, False}, category


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"binary_labels": [True, "no"]}, "'binary_labels' must be a non-empty list of true/false"),
        ({"anonymized_physician_ids": ["p1"]}, "2 binary_labels but 1 anonymized_physician_ids"),
        ({"rubric": 5}, "'rubric' must be a string"),
        ({"prompt": []}, "'prompt' must be a non-empty list"),
    ],
)
def test_bad_rows_name_their_line_and_prompt_id(change, message, write_jsonl) -> None:
    path = write_jsonl([meta_row(), meta_row(prompt_id="m2", **change)], "meta.jsonl")
    config = meta_config("http://unused", dataset=DatasetConfig(path=str(path)))
    with pytest.raises(DataError) as error:
        load_meta_rows(config.dataset, config.task)
    assert "meta.jsonl line 2 (prompt_id m2)" in str(error.value)
    assert message in str(error.value)


def test_grader_prompt_inserts_the_rubric_as_given() -> None:
    row = parse_meta_row(meta_row(), "x")
    expected = (
        grader_template()
        .replace(
            "<<conversation>>",
            "user: Is a fever of 38.5 C dangerous for an adult?\n\nassistant: Usually not; rest, "
            "fluids, and seek care if it lasts over three days.",
        )
        .replace("<<rubric_item>>", "Advises when to seek care.")
    )
    assert grader_prompt(row_conversation(row), row.rubric) == expected
    assert "[" not in expected[expected.index("Advises when") - 2 :]  # no [points] prefix


def check_against_reference(summary: dict, output: Path, rows_expected: int) -> None:
    """Every judge and physician metric equals the reference computed from the written rows."""
    records = read_jsonl(output / "meta_eval.jsonl")
    assert len(records) == rows_expected
    graded = [r for r in records if r["criteria_met"] is not None]
    reference = reference_rater_metrics(
        [r["criteria_met"] for r in graded],
        [r["binary_labels"] for r in graded],
        [r["category"] for r in graded],
        "model",
    )
    metrics = summary["metrics"]
    for key, expected in reference.items():
        assert metrics[key] == pytest.approx(expected["value"], abs=1e-12), key
        assert summary["agreement"]["model"][key]["n"] == pytest.approx(expected["n"], abs=1e-9)
    for key, value in summary["agreement"]["model"].items():
        assert key in reference or value["value"] is None, key
    assert metrics["score"] == metrics["pairwise_model_f1_balanced"]
    physicians = reference_physicians(
        [r["binary_labels"] for r in records],
        [r["anonymized_physician_ids"] for r in records],
        [r["category"] for r in records],
    )
    ours = summary["agreement"]["physicians"]
    assert set(ours) == set(physicians)
    for physician, expected_metrics in physicians.items():
        for key, expected in expected_metrics.items():
            assert ours[physician][key]["value"] == pytest.approx(expected["value"], abs=1e-12)
    # the physicians' averages of the headline, over physicians with a defined value
    headline = [m.get("pairwise_physician_f1_balanced") for m in physicians.values()]
    headline = [m for m in headline if m is not None]
    assert metrics["physicians_mean:pairwise_physician_f1_balanced"] == pytest.approx(
        sum(m["value"] for m in headline) / len(headline), abs=1e-12
    )
    assert metrics["physicians_weighted_mean:pairwise_physician_f1_balanced"] == pytest.approx(
        sum(m["value"] * m["n"] for m in headline) / sum(m["n"] for m in headline), abs=1e-12
    )
    # the reference's per-row means (simple-evals' aggregate_results over the graded rows)
    assert metrics["model_predicted_positive"] == pytest.approx(
        sum(r["criteria_met"] for r in graded) / len(graded), abs=1e-12
    )
    assert metrics["percent_physician_pos"] == pytest.approx(
        sum(sum(r["binary_labels"]) / len(r["binary_labels"]) for r in graded) / len(graded)
    )
    assert metrics["model_predicted_positive:n_samples"] == len(graded)


def test_meta_eval_equals_the_reference_computation(loopback_server, tmp_path) -> None:
    server = loopback_server()
    summary = run_eval(meta_config(server.base_url), tmp_path, {})
    check_against_reference(summary, tmp_path, 40)
    assert summary["task"] == "meta_eval"
    assert summary["counts"]["rows_graded"] == 40 and summary["counts"]["physicians"] == 6
    assert server.stats()["judge_requests"] == 40 and server.stats()["model_requests"] == 0
    # per category: the judge's balanced F1 equals the reference's category key
    for row in summary["by_category"]:
        key = f"{row['category']}: pairwise_model_f1_balanced"
        assert row["model_f1_balanced"] == summary["metrics"][key]
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["metrics"] == summary["metrics"]
    results = datasets.load_from_disk(str(tmp_path / "results"))
    assert len(results) == 40 and set(results["category"]) == {
        r["category"] for r in summary["by_category"]
    }
    report = (tmp_path / "report.html").read_text()
    assert f"{summary['metrics']['pairwise_model_f1_balanced']:.4f}" in report


def test_ungraded_rows_are_left_out_and_reported(loopback_server, tmp_path) -> None:
    server = loopback_server(malformed_rate=0.4, seed=5)
    config = meta_config(server.base_url)
    config = replace(config, judge=replace(config.judge, max_parse_retries=0))
    # every row graded or not: the failure-fraction stop off (it would halt at the first)
    config = replace(config, runner=replace(config.runner, max_failure_fraction=1.0))
    summary = run_eval(config, tmp_path, {})
    ungraded = summary["counts"]["rows_failed"]
    assert 0 < ungraded < 40
    assert len(summary["failures"]) == ungraded
    assert all("no valid verdict" in f["error"] for f in summary["failures"])
    check_against_reference(summary, tmp_path, 40)  # over the graded rows only
    assert summary["metrics"]["model_predicted_positive:n_samples"] == 40 - ungraded


def test_num_examples_samples_like_the_reference_and_repeats_regrade(
    loopback_server, tmp_path
) -> None:
    server = loopback_server()
    config = meta_config(server.base_url, sampling=SamplingConfig(num_examples=10, seed=0))
    summary = run_eval(config, tmp_path / "a", {})
    every = load_meta_rows(config.dataset, config.task)
    chosen = random.Random(0).sample(every, 10)  # HealthBenchMetaEval's rng.sample
    records = read_jsonl(tmp_path / "a" / "meta_eval.jsonl")
    assert sorted(r["completion_id"] for r in records) == sorted(r.completion_id for r in chosen)
    assert summary["counts"]["rows"] == 10
    repeated = replace(config, sampling=SamplingConfig(num_examples=10, rollouts_per_example=2))
    summary = run_eval(repeated, tmp_path / "b", {})
    check_against_reference(summary, tmp_path / "b", 20)
    assert {r["repeat"] for r in read_jsonl(tmp_path / "b" / "meta_eval.jsonl")} == {0, 1}
