"""Loading through HF datasets, validation errors that name line and prompt_id, sampling."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from healthbench_exp.config.schema import DatasetConfig, DataSource
from healthbench_exp.data.healthbench import (
    AXES,
    DataError,
    bundled_sample_path,
    load_examples,
    sample_examples,
)
from tests.conftest import make_row


def load(path) -> list:
    return load_examples(DatasetConfig(path=str(path)))


def test_local_file_keeps_types_and_line_numbers(write_jsonl) -> None:
    rows = [
        make_row("a"),
        "",
        make_row("b", rubrics=[{"criterion": "x", "points": 2.5, "tags": ["axis:accuracy"]}]),
    ]
    examples = load(write_jsonl(rows))
    assert [e.prompt_id for e in examples] == ["a", "b"]
    assert examples[0].rubrics[0].points == 5 and isinstance(examples[0].rubrics[0].points, int)
    assert examples[1].rubrics[0].points == 2.5
    assert examples[1].where == "data.jsonl line 3"  # the blank line 2 still counts
    assert examples[0].theme == "hedging"
    assert examples[0].rubrics[1].axis == "accuracy"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"rubrics": []}, "'rubrics' is missing or empty"),
        ({"rubrics": None}, "'rubrics' is missing or empty"),
        (
            {"rubrics": [{"criterion": "bad", "points": -3, "tags": []}]},
            "no criterion has positive points",
        ),
        (
            {"rubrics": [{"criterion": "c", "points": "five", "tags": []}]},
            "'points' must be a number, got 'five'",
        ),
        (
            {"rubrics": [{"criterion": "c", "points": True, "tags": []}]},
            "'points' must be a number, got True",
        ),
        ({"example_tags": ["physician_agreed_category:x"]}, "needs exactly one 'theme:' tag"),
        (
            {"rubrics": [{"criterion": "c", "points": 3, "tags": ["axis:kindness"]}]},
            "unknown axis 'axis:kindness'",
        ),
        ({"prompt": []}, "'prompt' must be a non-empty list"),
        ({"prompt": [{"role": "user"}]}, "prompt[0] must be an object"),
    ],
)
def test_bad_rows_name_line_and_prompt_id(write_jsonl, override, message) -> None:
    path = write_jsonl([make_row("good"), make_row("bad-one", **override)])
    with pytest.raises(DataError) as error:
        load(path)
    assert "data.jsonl line 2 (prompt_id bad-one)" in str(error.value)
    assert message in str(error.value)


def test_unknown_axis_error_lists_the_valid_axes(write_jsonl) -> None:
    path = write_jsonl([make_row(rubrics=[{"criterion": "c", "points": 3, "tags": ["axis:x"]}])])
    with pytest.raises(DataError, match="communication_quality"):
        load(path)


def test_duplicate_prompt_id_names_both_lines(write_jsonl) -> None:
    path = write_jsonl([make_row("x"), make_row("y"), make_row("x")])
    with pytest.raises(
        DataError, match=r"line 3: duplicate prompt_id x \(first at data.jsonl line 1\)"
    ):
        load(path)


def test_invalid_json_and_missing_prompt_id(write_jsonl) -> None:
    with pytest.raises(DataError, match="line 2: not valid JSON"):
        load(write_jsonl([make_row("a"), '{"prompt_id": "b", '], "broken.jsonl"))
    row = make_row()
    del row["prompt_id"]
    with pytest.raises(DataError, match="line 1: missing or empty 'prompt_id'"):
        load(write_jsonl([row], "noid.jsonl"))


def test_missing_file_is_a_config_error(tmp_path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        load(tmp_path / "nope.jsonl")


def test_sampling_matches_the_reference_subset() -> None:
    examples = load_examples(DatasetConfig(source=DataSource.bundled))
    picked = sample_examples(examples, 5, seed=0)
    assert picked == random.Random(0).sample(examples, 5)
    assert sample_examples(examples, 5, seed=0) == picked
    assert sample_examples(examples, 5, seed=1) != picked
    assert sample_examples(examples, None, 0) == examples
    assert sample_examples(examples, 10_000, 0) == examples


def test_bundled_sample_covers_the_schema() -> None:
    lines = bundled_sample_path().read_text(encoding="utf-8").splitlines()
    assert 20 <= len(lines) <= 30
    assert all("SYNTHETIC" in json.loads(line)["canary"] for line in lines)
    examples = load_examples(DatasetConfig(source=DataSource.bundled))
    themes = Counter(e.theme for e in examples)
    assert set(themes) == {
        "emergency_referrals",
        "context_seeking",
        "global_health",
        "health_data_tasks",
        "communication",
        "hedging",
        "complex_responses",
    }
    criteria = [c for e in examples for c in e.rubrics]
    assert {c.axis for c in criteria} == AXES
    assert any(c.cluster for c in criteria) and any(c.points < 0 for c in criteria)
    assert any(len(e.prompt) > 1 for e in examples)
    assert any(e.ideal_completions_data for e in examples)
    assert any(e.ideal_completions_data is None for e in examples)
    from healthbench_exp.grading.scoring import consensus_criteria

    assert all(c.cluster in consensus_criteria() for c in criteria if c.cluster)


def test_hf_source_reads_a_dataset_repo_layout(tmp_path) -> None:
    # the same code path as the HF mirrors, on a local folder laid out like a dataset repo
    repo = tmp_path / "mirror"
    repo.mkdir()
    rows = [make_row("m1"), make_row("m2", example_tags=["theme:global_health"])]
    (repo / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    examples = load_examples(
        DatasetConfig(source=DataSource.hf, hf_repo=str(repo), hf_split="test")
    )
    assert [e.prompt_id for e in examples] == ["m1", "m2"]
    assert examples[1].theme == "global_health" and examples[0].where.endswith("row 0")
    assert examples[0].rubrics[2].points == -6 and isinstance(examples[0].rubrics[2].points, int)


def test_hf_source_failure_says_what_to_use_instead(tmp_path) -> None:
    config = DatasetConfig(source=DataSource.hf, hf_repo=str(tmp_path / "absent"), hf_split="test")
    with pytest.raises(ValueError, match=r"dataset\.source=openai"):
        load_examples(config)


def test_official_file_is_sha256_verified(tmp_path) -> None:
    body = json.dumps(make_row("official")) + "\n"
    (tmp_path / "hard.jsonl").write_text(body)  # already in the cache: no download
    digest = __import__("hashlib").sha256(body.encode()).hexdigest()
    config = DatasetConfig(
        source=DataSource.openai, openai_file="hard.jsonl", sha256=digest, cache_dir=str(tmp_path)
    )
    assert [e.prompt_id for e in load_examples(config)] == ["official"]
    wrong = DatasetConfig(
        source=DataSource.openai, openai_file="hard.jsonl", sha256="0" * 64, cache_dir=str(tmp_path)
    )
    with pytest.raises(DataError, match="does not match the expected"):
        load_examples(wrong)
