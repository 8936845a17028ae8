"""Models of set strength on the built-in endpoint (`offline_server.model_strengths`): the base
verdict on a strong or weak model's reply meets positive criteria and avoids negative ones at
the set shares, while a judge's flips and leniency keep their rates against it."""

from __future__ import annotations

import pytest

from healthbench_exp.builtin_endpoint.replies import (
    MODEL_MARKER,
    base_verdict,
    judge_met,
    model_reply,
)
from healthbench_exp.config.ranges import model_strengths
from healthbench_exp.grading.grader import grader_prompt, render_conversation

STRENGTHS = {"strong": (0.8, 0.9), "weak": (0.2, 0.5)}
FLIPS = {"old": 0.0, "new": 0.1}
LENIENT = {"new": 0.3}


def prompts(model: str, points: int, n: int = 4000, order: str = "reference") -> list[str]:
    out = []
    for i in range(n):
        question = [{"role": "user", "content": f"question {i}"}]
        reply = model_reply(model, 0.5, question, STRENGTHS)
        conversation = render_conversation([*question, {"role": "assistant", "content": reply}])
        out.append(grader_prompt(conversation, f"[{points}] criterion {i % 17}", order))
    return out


def share(values: list[bool]) -> float:
    return sum(values) / len(values)


@pytest.mark.parametrize("order", ["reference", "shared_prefix_first"])
def test_the_base_verdict_meets_and_avoids_at_the_models_shares(order: str) -> None:
    for model, (met, avoided) in STRENGTHS.items():
        positive = [base_verdict(p, STRENGTHS) for p in prompts(model, 5, order=order)]
        negative = [base_verdict(p, STRENGTHS) for p in prompts(model, -3, order=order)]
        assert share(positive) == pytest.approx(met, abs=0.025)
        assert 1 - share(negative) == pytest.approx(avoided, abs=0.025)
    # a model without a set strength: the plain hash, about half, and no marker in its reply
    plain = prompts("other", 5)
    assert MODEL_MARKER not in plain[0]
    assert [base_verdict(p, STRENGTHS) for p in plain] == [base_verdict(p) for p in plain]
    assert share([base_verdict(p) for p in plain]) == pytest.approx(0.5, abs=0.03)


def test_a_judges_error_rates_against_the_base_verdict_do_not_depend_on_the_model() -> None:
    for model in STRENGTHS:
        items = prompts(model, 4)
        old = [judge_met(p, "old", FLIPS, LENIENT, STRENGTHS) for p in items]
        new = [judge_met(p, "new", FLIPS, LENIENT, STRENGTHS) for p in items]
        assert old == [base_verdict(p, STRENGTHS) for p in items]
        se = share([n for o, n in zip(old, new, strict=True) if o])
        sp = share([not n for o, n in zip(old, new, strict=True) if not o])
        assert se == pytest.approx(0.9 + 0.1 * 0.3, abs=0.03)  # kept, or flipped then lenient
        assert sp == pytest.approx(0.9 * 0.7, abs=0.03)  # kept and not made lenient


def test_the_setting_is_parsed_and_a_bad_entry_is_one_line() -> None:
    assert model_strengths("a=0.7:0.9, b=0.3") == {"a": (0.7, 0.9), "b": (0.3, 0.3)}
    assert model_strengths("") == {}
    for bad in ("a=1.2", "a=0.5:x", "=0.5", "a", "a=0.5:-0.1"):
        with pytest.raises(ValueError, match=r"offline_server\.model_strengths: ") as raised:
            model_strengths(bad)
        assert "\n" not in str(raised.value)
