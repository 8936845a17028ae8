"""A model the reference has a sampler for is compared with that sampler (simple-evals'
simple_evals.py): its API, system message, temperature and max tokens; the protocol records each
endpoint's API, system message and service tier."""

from __future__ import annotations

from healthbench_exp.cli.startup import run_protocol
from healthbench_exp.config.schema import REFERENCE_SYSTEM_MESSAGE
from tests.config.test_config import composed


def model_deviations(*overrides: str) -> list[str]:
    check = run_protocol(composed(*overrides))
    return [d for d in check.deviations if d.startswith(("model.", "sampling.t", "sampling.max"))]


def test_the_o3_and_o4mini_presets_are_the_reference_samplers() -> None:
    for preset in ("o3", "o4mini"):
        assert model_deviations(f"model={preset}") == [], preset
        check = run_protocol(composed(f"model={preset}"))
        assert check.endpoints["model"] == {
            "api": "responses", "system_message": None, "service_tier": None,
        }  # fmt: skip
    # a reasoning effort is another of the reference's samplers (o3_high), not a deviation
    assert model_deviations("model=o3", "model.reasoning_effort=high") == []


def test_an_o3_sampled_otherwise_is_a_recorded_deviation() -> None:
    assert model_deviations(
        "model=o3", "model.api=chat", f"model.system_message={REFERENCE_SYSTEM_MESSAGE}"
    ) == [
        "model.api: responses -> chat",
        f"model.system_message: null -> {REFERENCE_SYSTEM_MESSAGE}",
    ]


def test_a_chat_sampler_model_compares_its_sampling() -> None:
    assert model_deviations("model=gpt41mini") == []
    assert model_deviations(
        "model=gpt41mini", "sampling.temperature=1.0", "sampling.max_tokens=1024"
    ) == ["sampling.temperature: 0.5 -> 1.0", "sampling.max_tokens: 2048 -> 1024"]
    assert model_deviations("model=gpt41mini", "model.api=responses") == [
        "model.api: chat -> responses"
    ]


def test_a_model_without_a_reference_sampler_is_not_compared() -> None:
    assert (
        model_deviations("model=offline", "model.api=responses", "model.system_message=null") == []
    )
    check = run_protocol(composed("model=offline", "model.api=responses"))
    assert check.endpoints["model"]["api"] == "responses"
    assert check.endpoints["judge"] == {
        "api": "chat", "system_message": REFERENCE_SYSTEM_MESSAGE, "service_tier": None,
    }  # fmt: skip


def test_the_jury_members_are_recorded_beside_the_endpoints_and_deviate_from_nothing() -> None:
    plain = run_protocol(composed("model=gpt41mini"))
    check = run_protocol(composed("model=gpt41mini", "jury=[gpt54]"))
    assert set(check.endpoints) == {"model", "judge", "jury:gpt-5.4-2026-03-05"}
    assert check.endpoints["jury:gpt-5.4-2026-03-05"] == {
        "api": "chat", "system_message": REFERENCE_SYSTEM_MESSAGE, "service_tier": None,
    }  # fmt: skip
    assert check.deviations == plain.deviations  # the metrics stay the judge's
