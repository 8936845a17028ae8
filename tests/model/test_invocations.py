"""The requests an invocation abandoned in flight are counted apart, with an estimate of their
cost as the budget reserves a request, and summed over the run's invocations; a line written
before they were counted still reads (none abandoned)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from healthbench_exp.config.endpoint import EndpointConfig, PriceConfig
from healthbench_exp.core.summary import Usage
from healthbench_exp.model.costs import USAGE_FIELDS, request_estimate_usd, usage_summary
from healthbench_exp.model.endpoint_stats import EndpointStats
from healthbench_exp.model.invocations import cumulative_usage, record_invocation
from healthbench_exp.output.console import format_usage
from healthbench_exp.output.run_dir import RunDirectory

PRICE = PriceConfig(input_per_mtok=2.0, output_per_mtok=8.0, as_of="2025-01-01")


def stats(abandoned: int = 0, prompt_chars: int = 0) -> dict[str, object]:
    counted = EndpointStats(requests=3, prompt_tokens=300, completion_tokens=90)
    for _ in range(abandoned):
        counted.count_abandoned(prompt_chars)
    return counted.__dict__ | {"errors": {}, "service_tiers": {}}


def test_an_abandoned_request_is_estimated_as_the_budget_reserves_it() -> None:
    model = EndpointConfig(name="m", price=PRICE, expected_completion_tokens=600)
    usage = usage_summary(
        {"model": model, "judge": model}, ("model", "judge"), (),
        {"model": stats(abandoned=2, prompt_chars=4000), "judge": stats()},
    )  # fmt: skip
    each = request_estimate_usd(PRICE, 4000, 600)
    assert usage["model"]["abandoned_in_flight"] == 2
    assert usage["model"]["abandoned_cost_usd"] == pytest.approx(2 * each)
    assert usage["abandoned_cost_usd"] == pytest.approx(2 * each)
    assert "abandoned_in_flight" not in usage["judge"]  # none: nothing written
    # not in the measured cost: the total is what the replies said was used
    assert usage["total_cost_usd"] == pytest.approx(usage["model"]["cost_usd"] * 2)


def test_abandoned_requests_sum_over_invocations_and_an_older_line_reads(tmp_path: Path) -> None:
    def usage(cost: float, abandoned: int = 0) -> dict:
        role = {name: 1 for name in USAGE_FIELDS} | {"cost_usd": cost / 2, "price": {}}
        if abandoned:  # an older line (or an invocation that abandoned nothing) has neither
            role |= {"abandoned_in_flight": abandoned, "abandoned_cost_usd": 0.01 * abandoned}
        extra = {"abandoned_cost_usd": 0.02 * abandoned} if abandoned else {}
        return {"model": role, "judge": role, "total_cost_usd": cost, **extra}

    now = datetime.now(UTC)
    record_invocation(RunDirectory(tmp_path), usage(1.0), None, now, "a")
    record_invocation(RunDirectory(tmp_path), usage(2.0, abandoned=2), None, now, "a")
    total = cumulative_usage(record_invocation(RunDirectory(tmp_path), usage(4.0), None, now, "a"))
    assert total["total_cost_usd"] == 7.0  # the estimate is apart
    assert total["model"]["abandoned_in_flight"] == 2
    assert total["abandoned_cost_usd"] == pytest.approx(0.04)
    assert [i.get("abandoned_cost_usd") for i in total["invocations"]] == [None, 0.04, None]
    read = Usage.from_dict(total)
    assert read.abandoned() == 4
    assert "+ about $0.0400 for 4 requests abandoned in flight (estimated" in format_usage(read)
    older = {"invocation": 1, "started_at": "", "finished_at": "", "budget": None}
    plain = Usage.from_dict(cumulative_usage([older | {"usage": usage(1.0)}]))
    assert plain.abandoned() == 0 and "abandoned" not in format_usage(plain)
