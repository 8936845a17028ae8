"""Physician and file completions: which rows are graded, with which replies, and no model calls."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace

import pytest

from healthbench_exp import run as run_eval
from healthbench_exp.config.checks import validate
from healthbench_exp.config.schema import (
    CompletionsConfig,
    CompletionSource,
    ConfigError,
    DatasetConfig,
    DataSource,
    EndpointConfig,
    SamplingConfig,
)
from healthbench_exp.data.completions import work_items
from healthbench_exp.data.healthbench import DataError, load_examples
from tests.engine.test_runner import make_config, read_jsonl, verdicts

BUNDLED = DatasetConfig(source=DataSource.bundled, sha256=None)


def physician(group: int | None, references: bool = False) -> CompletionsConfig:
    source = CompletionSource.physician_references if references else CompletionSource.physician
    return CompletionsConfig(source=source, group=group)


def group_rows(group: int) -> list:
    return [
        e
        for e in load_examples(BUNDLED)
        if e.ideal_completions_data
        and e.ideal_completions_data["ideal_completions_group"] == f"Group {group}"
    ]


def test_physician_mode_grades_the_ideal_completions_of_one_group(
    loopback_server, tmp_path
) -> None:
    server = loopback_server()
    # the model's key variable is unset: physician modes never need the model
    model = EndpointConfig(name="unused", base_url="http://127.0.0.1:9", api_key_env="HB_UNSET")
    config = make_config(
        server.base_url, completions=physician(1), sampling=SamplingConfig(), model=model
    )
    summary = run_eval(config, tmp_path, {})
    expected = group_rows(1)
    examples = read_jsonl(tmp_path / "examples.jsonl")
    assert sorted(e["prompt_id"] for e in examples) == sorted(e.prompt_id for e in expected)
    ideal = {e.prompt_id: e.ideal_completions_data["ideal_completion"] for e in expected}
    for row in examples:
        assert row["completion"] == ideal[row["prompt_id"]]
        assert row["messages"][0]["role"] == "user"  # no system message: nothing was sent
    stats = server.stats()
    assert stats["model_requests"] == 0
    assert stats["judge_requests"] == sum(len(e.rubrics) for e in expected)
    assert summary["counts"]["model_requests"] == 0
    assert summary["completions"] == {"source": "physician", "group": 1, "rows_in_group": 3}
    assert summary["metrics"]["overall_score:n_samples"] == 3


def test_reference_completions_are_four_rows_per_example(loopback_server, tmp_path) -> None:
    server = loopback_server()
    config = make_config(
        server.base_url, completions=physician(2, references=True), sampling=SamplingConfig()
    )
    summary = run_eval(config, tmp_path, {})
    expected = group_rows(2)
    examples = read_jsonl(tmp_path / "examples.jsonl")
    assert len(examples) == 4 * len(expected) == summary["counts"]["rows"]
    refs = {
        e.prompt_id: e.ideal_completions_data["ideal_completions_ref_completions"] for e in expected
    }
    for row in examples:
        assert row["completion"] == refs[row["prompt_id"]][row["rollout"]]
    assert server.stats()["model_requests"] == 0


def test_physician_sampling_draws_from_the_group_like_the_reference() -> None:
    examples = load_examples(BUNDLED)
    items, _ = work_items(
        examples, physician(2), SamplingConfig(num_examples=2, seed=0), system_message=None
    )
    subset = group_rows(2)
    assert [i.example.prompt_id for i in items] == [
        e.prompt_id for e in random.Random(0).sample(subset, 2)
    ]
    # references: the sample is drawn from the (example, reference) items
    items, _ = work_items(
        examples,
        physician(3, references=True),
        SamplingConfig(num_examples=3, seed=1),
        system_message=None,
    )
    pairs = [(e.prompt_id, k) for e in group_rows(3) for k in range(4)]
    assert [(i.example.prompt_id, i.rollout) for i in items] == random.Random(1).sample(pairs, 3)


@pytest.mark.parametrize(
    ("completions", "message"),
    [
        (physician(None), "completions=physician needs completions.group=1 or 2 or 3, got None"),
        (physician(1, references=True), "Group 1 has no reference completions"),
        (
            CompletionsConfig(source=CompletionSource.file),
            "completions=file needs completions.path",
        ),
    ],
)
def test_incomplete_completions_settings_are_rejected(completions, message) -> None:
    with pytest.raises(ConfigError, match=message):
        validate(make_config("http://unused", completions=completions))


def test_a_group_with_no_rows_says_which_groups_exist(write_jsonl) -> None:
    examples = [e for e in load_examples(BUNDLED) if e.ideal_completions_data is None]
    with pytest.raises(DataError, match=r"no example has physician completions of Group 2"):
        work_items(examples, physician(2), SamplingConfig(), system_message=None)


def test_file_completions_regrade_a_run_without_sampling_again(loopback_server, tmp_path) -> None:
    server = loopback_server()
    first = run_eval(make_config(server.base_url), tmp_path / "first", {})
    server.reset()
    regrade = make_config(
        server.base_url,
        completions=CompletionsConfig(
            source=CompletionSource.file, path=str(tmp_path / "first" / "examples.jsonl")
        ),
    )
    second = run_eval(regrade, tmp_path / "second", {})
    # the same replies on the same conversations (system message included): the same grader
    # prompts, so every judge call is answered by the cache and every verdict is the same
    assert verdicts(tmp_path / "second") == verdicts(tmp_path / "first")
    # the same sampling settings take the rows in the first run's order: bootstrap stds too
    assert second["metrics"] == first["metrics"]
    assert server.stats()["requests"] == 0
    assert second["counts"]["judge_cache_hits"] == second["counts"]["judge_replies"] > 0
    assert second["counts"]["model_requests"] == 0
    assert second["completions"]["examples_without_completion"] == 24 - 8


def test_file_completions_accept_plain_and_verifiers_replies(
    loopback_server, tmp_path, write_jsonl
) -> None:
    server = loopback_server()
    examples = load_examples(BUNDLED)
    a, b = examples[0], examples[1]
    path = write_jsonl(
        [
            {"prompt_id": a.prompt_id, "completion": "Call emergency services."},
            {"prompt_id": a.prompt_id, "completion": "Rest and see."},  # rollout 1
            {"prompt_id": b.prompt_id, "completion": [{"role": "assistant", "content": "Ok."}]},
            {"prompt_id": examples[2].prompt_id, "completion": None},
        ],
        "replies.jsonl",
    )
    config = make_config(
        server.base_url,
        completions=CompletionsConfig(source=CompletionSource.file, path=str(path)),
        sampling=SamplingConfig(),
    )
    summary = run_eval(config, tmp_path / "out", {})
    rows = {(r["prompt_id"], r["rollout"]): r for r in read_jsonl(tmp_path / "out/examples.jsonl")}
    assert rows[a.prompt_id, 0]["completion"] == "Call emergency services."
    assert rows[a.prompt_id, 1]["completion"] == "Rest and see."
    assert rows[b.prompt_id, 0]["completion"] == "Ok."
    assert "replies.jsonl line 4" in rows[examples[2].prompt_id, 0]["error"]
    assert summary["counts"]["rows_failed"] == 1 and summary["counts"]["rows_scored"] == 3
    assert server.stats()["model_requests"] == 0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"prompt_id": "nope", "completion": "x"}, "line 1 (prompt_id nope): no example with"),
        ({"prompt_id": "P", "completion": 5}, "'completion' must be a string, null, or a list"),
        ({"prompt_id": "P"}, "no 'completion'"),
        (
            {"prompt_id": "P", "completion": "x", "messages": [{"role": "user", "content": "hi"}]},
            "differ from the dataset's prompt",
        ),
    ],
)
def test_bad_completion_files_name_the_line(line, message, write_jsonl) -> None:
    examples = load_examples(BUNDLED)
    line = json.loads(json.dumps(line).replace('"P"', json.dumps(examples[0].prompt_id)))
    path = write_jsonl([line], "replies.jsonl")
    completions = CompletionsConfig(source=CompletionSource.file, path=str(path))
    with pytest.raises(DataError, match=re.escape(message)) as error:
        work_items(examples, completions, SamplingConfig(), system_message=None)
    assert "replies.jsonl line 1" in str(error.value)


def test_file_mode_refuses_repeats(write_jsonl) -> None:
    examples = load_examples(BUNDLED)
    path = write_jsonl([{"prompt_id": examples[0].prompt_id, "completion": "x"}])
    completions = CompletionsConfig(source=CompletionSource.file, path=str(path))
    with pytest.raises(ConfigError, match="rollouts_per_example=1"):
        work_items(
            examples,
            completions,
            replace(SamplingConfig(), rollouts_per_example=2),
            system_message=None,
        )
