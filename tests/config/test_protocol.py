"""The run's protocol: its set's reference bundle and every deviation, from composed configs."""

from __future__ import annotations

import pytest

from healthbench_exp.cli.startup import protocol_problem, run_protocol
from healthbench_exp.config.protocol import ProtocolCheck
from tests.config.test_config import composed

OFFICIAL = "dataset.source=openai"  # the official file, sha256-checked


def check(*overrides: str) -> ProtocolCheck:
    return run_protocol(composed(*overrides))


@pytest.mark.parametrize(
    ("difficulty", "name"),
    [("all", "healthbench"), ("hard", "healthbench-hard"), ("consensus", "healthbench-consensus")],
)
def test_the_reference_settings_are_the_reference_protocol(difficulty: str, name: str) -> None:
    result = check(f"difficulty={difficulty}", OFFICIAL)
    assert (result.name, result.deviations, result.reference) == (name, [], True)


def test_endpoint_address_and_key_are_not_deviations() -> None:
    result = check(
        OFFICIAL,
        "judge.base_url=http://localhost:9/v1",
        "judge.api_key_env=OTHER_KEY",
        "judge.max_concurrency=3",
        "model=o3",  # the policy model is what is measured, not the protocol
    )
    assert result.reference, result.deviations


def test_every_deviation_is_named_with_the_reference_value_and_the_runs() -> None:
    result = check(
        "judge=gpt41mini",
        "judge.prompt_order=shared_prefix_first",
        "judge.batch=true",
        "scoring.length_penalty_per_500_chars=0.03",
        "dataset.source=hf",
        "sampling.num_examples=5",
    )
    assert result.name == "healthbench" and not result.reference
    assert result.deviations == [
        "judge.name: gpt-4.1-2025-04-14 -> gpt-4.1-mini-2025-04-14",
        "judge.prompt_order: reference -> shared_prefix_first",
        "judge.batch: false -> true",
        "scoring.length_penalty_per_500_chars: null -> 0.03",
        "dataset.source: openai -> hf",
        "sampling.num_examples: null -> 5",
    ]


def test_judge_sampling_and_data_checks() -> None:
    result = check(
        OFFICIAL,
        "judge.temperature=0.0",
        "judge.max_tokens=512",
        "judge.system_message=null",
        "judge.reasoning_effort=low",
        "dataset.sha256=null",
    )
    assert result.deviations == [
        "judge.temperature: 0.5 -> 0.0",
        "judge.max_tokens: 2048 -> 512",
        "judge.reasoning_effort: null -> low",
        "judge.system_message: You are a helpful assistant. -> null",
        "dataset.sha256: e99dd3c6372c10d6fcc5e385c5fae69d0dd40392dae56836ef9493ae324ecd2f -> null",
    ]
    assert check("dataset.path=/tmp/no-such-x.jsonl", OFFICIAL).deviations == [
        "dataset.path: 2025-05-07-06-14-12_oss_eval.jsonl -> no-such-x.jsonl (unreadable)"
    ]


def test_the_demo_deviates_in_judge_and_data() -> None:
    result = check("experiment=demo")
    assert result.name == "healthbench"
    assert result.deviations == [
        "judge.name: gpt-4.1-2025-04-14 -> offline-judge",
        "dataset.source: openai -> bundled",
    ]


def test_the_meta_eval_has_its_own_bundle() -> None:
    assert check("task=meta_eval").deviations == []
    assert check("task=meta_eval").name == "healthbench-meta-eval"
    result = check("task=meta_eval", "judge=o4mini", "dataset.source=bundled")
    assert result.deviations[:2] == [
        "judge.name: gpt-4.1-2025-04-14 -> o4-mini-2025-04-16",
        "judge.reasoning: false -> true",
    ]
    assert "dataset.source: openai -> bundled" in result.deviations


def test_strict_refusal_names_every_deviation_and_the_fix() -> None:
    result = check("judge=gpt41mini", "sampling.num_examples=5", OFFICIAL)
    assert protocol_problem(result, strict=False) is None
    message = protocol_problem(result, strict=True)
    assert message is not None
    assert "judge.name: gpt-4.1-2025-04-14 -> gpt-4.1-mini-2025-04-14" in message
    assert "sampling.num_examples: null -> 5" in message
    assert "judge.name=gpt-4.1-2025-04-14 sampling.num_examples=null" in message
    assert protocol_problem(check(OFFICIAL), strict=True) is None
