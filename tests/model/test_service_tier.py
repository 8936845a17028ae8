"""`<role>.service_tier`: sent with each request, the tier the provider reports recorded, priced
by `price.tiers` (the dry run, the summary and the budget), an unknown tier's price said to be
unknown, and flex's 429 "Resource Unavailable" waited out; against real loopback servers."""

from __future__ import annotations

import json
import typing
from dataclasses import replace
from pathlib import Path

import pytest
from openai.types.responses import Response

from healthbench_exp import run as run_eval
from healthbench_exp.config.checks import validate
from healthbench_exp.config.schema import (
    SERVICE_TIERS,
    Api,
    BudgetConfig,
    CacheConfig,
    ConfigError,
    EndpointConfig,
    RunnerConfig,
)
from healthbench_exp.model.costs import cost_usd
from healthbench_exp.model.transport import Transport
from tests.config.test_config import composed
from tests.e2e.test_e2e import run_cli
from tests.model.test_costs import JUDGE_PRICE, MODEL_PRICE, priced_config
from tests.model.test_responses_api import received

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")


def tiered(config, tier: str | None, factors: dict[str, float], api: Api = Api.chat):
    """`config` with both roles at service tier `tier`, priced by `factors`."""
    return replace(
        config,
        model=replace(
            config.model,
            service_tier=tier,
            api=api,
            price=replace(MODEL_PRICE, tiers=factors),
        ),
        judge=replace(
            config.judge,
            service_tier=tier,
            api=api,
            price=replace(JUDGE_PRICE, tiers=factors),
        ),
    )


# tiers the harness allows that an older SDK it supports (openai 2.54, as the [verifiers] extra
# installs it) does not list yet: sent as they are, the SDK passes them through
NEWER_TIERS = {"ultrafast"}


def sdk_tiers() -> set[str]:
    """The tiers the installed SDK lists for a response's `service_tier` (an alias of a Literal
    in openai 3, the Literal itself in openai 2)."""
    annotation = Response.model_fields["service_tier"].annotation
    while typing.get_origin(annotation) is not typing.Literal:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return set(typing.get_args(annotation))


def test_the_allowed_tiers_are_the_sdks() -> None:
    allowed, sdk = set(SERVICE_TIERS), sdk_tiers()
    assert sdk <= allowed and allowed - sdk <= NEWER_TIERS, (allowed, sdk)
    if "ultrafast" in sdk:  # an SDK as new as the harness: exactly its tiers
        assert allowed == sdk


def test_an_unknown_tier_is_refused_naming_the_valid_ones() -> None:
    valid = r"judge\.service_tier must be one of auto, default, flex"
    with pytest.raises(ConfigError, match=valid):
        validate(composed("judge.service_tier=turbo"))


def test_flex_waits_as_long_as_openai_advises() -> None:
    runner = RunnerConfig()
    assert Transport.of(runner, EndpointConfig(name="m", service_tier="flex")).timeout_s == 900.0
    assert Transport.of(runner, EndpointConfig(name="m")).timeout_s == runner.request_timeout_s


@pytest.mark.parametrize("api", [Api.chat, Api.responses])
def test_the_tier_is_sent_reported_and_priced(loopback_server, tmp_path: Path, api: Api) -> None:
    server = loopback_server()
    config = tiered(priced_config(server.base_url), "priority", {"priority": 1.75}, api)
    summary = run_eval(config, tmp_path, {})
    bodies = [b["body"] for b in received(server.base_url) if b["body"]]
    assert bodies and all(b["service_tier"] == "priority" for b in bodies)
    usage = summary["usage"]
    for role, price in (("model", MODEL_PRICE), ("judge", JUDGE_PRICE)):
        entry = usage[role]
        assert entry["service_tiers"] == {"priority": entry["requests"]}  # as the server said
        standard = cost_usd(
            price, entry["prompt_tokens"], entry["cached_prompt_tokens"], entry["completion_tokens"]
        )
        assert entry["cost_usd"] == pytest.approx(1.75 * standard, rel=1e-12)
    assert summary["protocol"]["endpoints"]["judge"]["service_tier"] == "priority"


def test_a_budget_pays_the_tiers_price(loopback_server, tmp_path: Path) -> None:
    """A run that costs C at the standard price: capped at 0.75 C, it stops at the standard
    tier and finishes at flex (half price)."""
    server = loopback_server()
    uncached = CacheConfig(enabled=False)  # every run pays every call
    full = run_eval(priced_config(server.base_url, cache=uncached), tmp_path / "full", {})
    cap = BudgetConfig(max_usd=0.75 * full["usage"]["total_cost_usd"])
    for tier, finishes in ((None, False), ("flex", True)):
        capped = priced_config(server.base_url, budget=cap, cache=uncached)
        config = tiered(capped, tier, {"flex": 0.5})
        summary = run_eval(config, tmp_path / str(tier), {})
        assert (summary["counts"]["rows_not_run"] == 0) is finishes, tier
        assert summary["budget"]["stopped"] is not finishes
        assert summary["usage"]["total_cost_usd"] == pytest.approx(summary["budget"]["spent_usd"])
    flex = json.loads((tmp_path / "flex" / "summary.json").read_text())["usage"]
    assert flex["total_cost_usd"] == pytest.approx(full["usage"]["total_cost_usd"] / 2)


def test_the_dry_run_prices_the_tier(tmp_path: Path) -> None:
    estimates = {}
    for tier in ("default", "flex"):
        run_dir = tmp_path / tier
        result = run_cli(
            *DEMO, "dry_run=true", f"model.service_tier={tier}", f"judge.service_tier={tier}",
            f"hydra.run.dir={run_dir}", env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        estimates[tier] = json.loads((run_dir / "estimate.json").read_text())
    for role in ("model", "judge"):  # the offline presets: flex at half the listed price
        standard = estimates["default"][role]["cost_usd"]
        assert standard > 0 and estimates["flex"][role]["cost_usd"] == pytest.approx(standard / 2)
    total = estimates["default"]["total_cost_usd"]
    assert estimates["flex"]["total_cost_usd"] == pytest.approx(total / 2)


def test_a_tier_without_a_known_price_says_so(tmp_path: Path) -> None:
    env = {"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")}
    result = run_cli(
        *DEMO, "dry_run=true", "model.service_tier=scale", f"hydra.run.dir={tmp_path / 'dry'}",
        env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    note = "service_tier=scale of offline-model has no known price"
    assert note in result.stdout + result.stderr
    estimate = json.loads((tmp_path / "dry" / "estimate.json").read_text())
    assert estimate["model"]["cost_usd"] is None and estimate["total_cost_usd"] is None
    assert estimate["model"]["cost_note"].startswith(note)
    assert estimate["judge"]["cost_usd"] > 0  # the judge's tier is priced
    capped = run_cli(
        *DEMO, "model.service_tier=scale", "budget.max_usd=1", f"hydra.run.dir={tmp_path / 'b'}",
        env=env,
    )  # fmt: skip
    assert capped.returncode == 2
    (line,) = [x for x in capped.stderr.splitlines() if "service_tier" in x]
    assert "model.service_tier=scale has no known price" in line


@pytest.mark.parametrize("api", [Api.chat, Api.responses])
def test_flex_resource_unavailable_is_waited_out(loopback_server, tmp_path: Path, api) -> None:
    server = loopback_server(flex_unavailable=5)
    config = tiered(priced_config(server.base_url), "flex", {"flex": 0.5}, api)
    summary = run_eval(config, tmp_path, {})
    counts = summary["counts"]
    assert server.stats()["flex_unavailable"] == 5  # refused 5 times, each sent again
    assert counts["rows_scored"] == counts["rows"] == 24 and counts["rows_failed"] == 0
    assert counts["ungraded_criteria"] == 0
    assert summary["usage"]["model"]["service_tiers"] == {"flex": 24}


def test_a_flex_responses_run_stopped_by_its_budget_resumes_like_an_uncapped_one(
    loopback_server, tmp_path: Path
) -> None:
    server = loopback_server()
    config = tiered(priced_config(server.base_url), "flex", {"flex": 0.5}, Api.responses)
    capped = replace(config, budget=BudgetConfig(max_usd=0.025))  # half of what 0.05 buys
    partial = run_eval(capped, tmp_path / "run", {})
    assert partial["budget"]["stopped"] and partial["counts"]["rows_not_run"] > 0
    assert partial["budget"]["spent_usd"] <= 0.025
    resumed = run_eval(replace(capped, budget=BudgetConfig()), tmp_path / "run", {})
    assert resumed["counts"]["rows_not_run"] == 0
    uncapped = run_eval(config, tmp_path / "uncapped", {})
    assert resumed["metrics"] == uncapped["metrics"]
    for role in ("model", "judge"):  # each call paid once, at flex, over both invocations
        usage = resumed["usage"][role]
        assert usage["service_tiers"] == {"flex": usage["requests"]}
    assert resumed["usage"]["judge"]["requests"] == resumed["counts"]["criteria"]
