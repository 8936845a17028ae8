"""Usage accounting, prices, dry-run estimates and the budget, against real loopback servers."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from healthbench_exp import dry_run
from healthbench_exp import run as run_eval
from healthbench_exp.builtin_endpoint.replies import REASONING_TOKENS, judge_reply
from healthbench_exp.config.checks import validate
from healthbench_exp.config.schema import (
    REFERENCE_SYSTEM_MESSAGE,
    BudgetConfig,
    CacheConfig,
    ConfigError,
    EndpointConfig,
    PriceConfig,
    SamplingConfig,
)
from healthbench_exp.core.endpoint_errors import BudgetExhausted
from healthbench_exp.grading.grader import grader_prompt, render_conversation
from healthbench_exp.model.costs import Budget, cost_usd
from tests.e2e.test_e2e import REPO, run_cli
from tests.engine.test_runner import make_config, read_jsonl

MODEL_PRICE = PriceConfig(input_per_mtok=0.4, cached_input_per_mtok=0.1, output_per_mtok=1.6)
JUDGE_PRICE = PriceConfig(input_per_mtok=2.0, cached_input_per_mtok=0.5, output_per_mtok=8.0)


def priced_config(base_url: str, **changes):
    config = make_config(base_url, sampling=SamplingConfig(), **changes)
    model = replace(config.model, price=MODEL_PRICE, expected_completion_tokens=55)
    judge = replace(config.judge, price=JUDGE_PRICE, expected_completion_tokens=33)
    return replace(config, model=model, judge=judge)


def test_cost_arithmetic_by_hand() -> None:
    # 1000 prompt tokens of which 400 cached, 200 completion: 600*2 + 400*0.5 + 200*8 per 1e6
    assert cost_usd(JUDGE_PRICE, 1000, 400, 200) == pytest.approx((1200 + 200 + 1600) / 1e6)
    no_cached_rate = PriceConfig(input_per_mtok=1.0, output_per_mtok=2.0)
    assert cost_usd(no_cached_rate, 1000, 400, 0) == pytest.approx(1000 / 1e6)
    assert cost_usd(PriceConfig(), 10, 0, 10) is None


def test_budget_counts_what_is_in_flight() -> None:
    budget = Budget(1.0)
    budget.reserve(0.6)
    with pytest.raises(BudgetExhausted):
        budget.reserve(0.5)  # 0.6 in flight + 0.5 > 1.0
    budget.settle(0.6, 0.3)  # it cost less than estimated
    budget.reserve(0.5)
    budget.settle(0.5, 0.5)
    assert budget.spent == pytest.approx(0.8) and budget.in_flight == pytest.approx(0.0)
    assert budget.stopped and budget.refused == 1


def test_usage_is_what_the_server_billed(loopback_server, tmp_path) -> None:
    server = loopback_server()
    config = priced_config(server.base_url)
    config = replace(
        config, model=replace(config.model, extra_body={"reasoning_effort": "low"}, reasoning=True)
    )
    summary = run_eval(config, tmp_path / "a", {})
    # recompute every call's usage as the built-in server bills it: 4 characters per token
    model_prompt = model_completion = judge_prompt = judge_completion = 0
    examples = read_jsonl(tmp_path / "a" / "examples.jsonl")
    criteria = read_jsonl(tmp_path / "a" / "per_criterion.jsonl")
    for example in examples:
        model_prompt += sum(len(m["content"]) for m in example["messages"]) // 4
        model_completion += len(example["completion"]) // 4 + REASONING_TOKENS
        conversation = render_conversation(
            [*example["messages"], {"role": "assistant", "content": example["completion"]}]
        )
        for c in criteria:
            if (c["prompt_id"], c["rollout"]) != (example["prompt_id"], example["rollout"]):
                continue
            prompt = grader_prompt(conversation, f"[{c['points']}] {c['criterion']}")
            judge_prompt += (len(REFERENCE_SYSTEM_MESSAGE) + len(prompt)) // 4
            judge_completion += len(judge_reply(prompt, "judge")) // 4
    usage = summary["usage"]
    assert usage["model"]["requests"] == 24 and usage["judge"]["requests"] == len(criteria)
    assert usage["model"]["prompt_tokens"] == model_prompt
    assert usage["model"]["completion_tokens"] == model_completion
    assert usage["model"]["reasoning_tokens"] == 24 * REASONING_TOKENS
    assert usage["judge"]["prompt_tokens"] == judge_prompt
    assert usage["judge"]["completion_tokens"] == judge_completion
    expected = cost_usd(MODEL_PRICE, model_prompt, 0, model_completion) + cost_usd(
        JUDGE_PRICE, judge_prompt, 0, judge_completion
    )
    assert usage["total_cost_usd"] == pytest.approx(expected, rel=1e-12)
    assert usage["judge"]["price"]["output_per_mtok"] == 8.0
    # run again: every call replayed from the response cache, flagged and not billed
    again = run_eval(config, tmp_path / "b", {})["usage"]
    assert again["model"]["requests"] == again["judge"]["requests"] == 0
    assert again["total_cost_usd"] == 0.0
    assert again["judge"]["cache_hits"] == len(criteria)
    assert again["judge"]["replayed_prompt_tokens"] == judge_prompt
    assert again["model"]["replayed_completion_tokens"] == model_completion


def test_shipped_openai_options_carry_dated_list_prices() -> None:
    for group in ("model", "judge"):
        for path in sorted((REPO / "healthbench_exp" / "conf" / group).glob("*.yaml")):
            option = OmegaConf.load(path)
            if str(option.get("name", "")).startswith(("gpt-", "o3", "o4")):
                price = option.price
                assert price.input_per_mtok > 0 and price.output_per_mtok > 0, path
                assert 0 < price.cached_input_per_mtok < price.input_per_mtok, path
                assert re.search(r"\b20\d\d\b", price.as_of), path  # when the price was taken
                assert "openai.com" in price.as_of, path


def test_dry_run_sends_nothing_and_lands_within_25_percent(loopback_server, tmp_path) -> None:
    server = loopback_server()
    config = priced_config(server.base_url)
    estimate = dry_run(config, tmp_path / "estimate", {})
    assert server.stats()["requests"] == 0
    assert (
        json.loads((tmp_path / "estimate" / "estimate.json").read_text())["total_cost_usd"]
        == (estimate["total_cost_usd"])
    )
    assert estimate["model"]["calls"] == 24 and estimate["judge"]["calls"] == 106
    assert estimate["model"]["cached_calls"] == estimate["judge"]["cached_calls"] == 0
    measured = run_eval(config, tmp_path / "run", {})["usage"]["total_cost_usd"]
    assert abs(estimate["total_cost_usd"] - measured) <= 0.25 * measured
    # what the cache holds is subtracted: now every call is cached and nothing is left to pay
    again = dry_run(config, tmp_path / "again", {})
    assert again["model"]["cached_calls"] == 24 and again["judge"]["cached_calls"] == 106
    assert again["total_cost_usd"] == 0.0
    assert server.stats()["requests"] == 24 + 106  # only the real run's


def test_dry_run_from_the_command_line(tmp_path) -> None:
    result = run_cli("experiment=demo", "dry_run=true", f"hydra.run.dir={tmp_path}")
    assert result.returncode == 0, result.stderr
    assert "Dry run: nothing was sent (24 rows)" in result.stdout
    assert "estimated cost $" in result.stdout
    assert json.loads((tmp_path / "status.json").read_text())["status"] == "dry_run"
    assert not (tmp_path / "wandb").exists() and not (tmp_path / "summary.json").exists()


def test_budget_stops_the_run_and_the_resumed_run_equals_an_uncapped_one(
    loopback_server, tmp_path
) -> None:
    server = loopback_server()
    capped = priced_config(server.base_url, budget=BudgetConfig(max_usd=0.05))
    partial = run_eval(capped, tmp_path / "run", {})
    budget = partial["budget"]
    assert budget["stopped"] and budget["spent_usd"] <= 0.05
    assert partial["counts"]["rows_not_run"] > 0 and partial["counts"]["rows_failed"] == 0
    assert partial["usage"]["total_cost_usd"] == pytest.approx(budget["spent_usd"])
    not_run = [e for e in read_jsonl(tmp_path / "run" / "examples.jsonl") if e["error"]]
    assert len(not_run) == partial["counts"]["rows_not_run"]
    assert all(e["error"].startswith("not run: budget.max_usd=0.05 reached") for e in not_run)
    sent = server.stats()
    assert sent["model_requests"] <= 24 and sent["judge_requests"] < 106  # it stopped early
    # resume: the same directory, no cap, a response cache of its own (empty), so only the run's
    # records say what was done: each call reaches the server once over both invocations
    fresh_cache = CacheConfig(dir=str(tmp_path / "resume-cache"))
    resumed = run_eval(
        replace(capped, budget=BudgetConfig(), cache=fresh_cache), tmp_path / "run", {}
    )
    assert resumed["counts"]["rows_not_run"] == 0
    sent = server.stats()
    assert (sent["model_requests"], sent["judge_requests"]) == (24, 106)
    # the uncapped run: its own server and an empty cache, so every call is sent
    other = loopback_server()
    uncapped_config = replace(
        priced_config(other.base_url), cache=CacheConfig(dir=str(tmp_path / "uncapped-cache"))
    )
    uncapped = run_eval(uncapped_config, tmp_path / "uncapped", {})
    assert (other.stats()["model_requests"], other.stats()["judge_requests"]) == (24, 106)
    assert resumed["metrics"] == uncapped["metrics"]
    # summed over both invocations: each call was paid once
    assert resumed["usage"]["model"]["requests"] == 24
    assert resumed["usage"]["judge"]["requests"] == 106


def test_budget_needs_prices() -> None:
    config = make_config("http://unused", budget=BudgetConfig(max_usd=1.0))
    with pytest.raises(ConfigError, match=r"budget.max_usd needs prices for model and judge"):
        validate(config)
    free_model = replace(config, model=EndpointConfig(name="m", price=MODEL_PRICE))
    with pytest.raises(ConfigError, match=r"needs prices for judge: set judge.price"):
        validate(free_model)


def test_budget_from_the_command_line_exits_4_and_resume_finishes(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "wandb=disabled", "budget.max_usd=0.05", f"hydra.run.dir={run_dir}"
    )
    assert result.returncode == 4, result.stderr
    assert "PARTIAL RUN: budget.max_usd=0.05 reached" in result.stdout
    assert f"resume={run_dir}" in result.stderr
    assert json.loads((run_dir / "status.json").read_text())["status"] == "partial"
    result = run_cli(f"resume={run_dir}", "budget.max_usd=null")
    assert result.returncode == 0, result.stderr
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["rows_scored"] == 24 and summary["budget"] is None
