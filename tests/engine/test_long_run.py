"""The dry run warns when a run would take more than a day at the stated rate limits, and names
the ways out with their time and cost (engine/long_run.py), through the printout itself."""

from __future__ import annotations

from pathlib import Path

from healthbench_exp.engine.estimate_text import format_estimate
from healthbench_exp.engine.long_run import DAY_S, long_run_lines
from tests.engine.test_estimate_text import estimate

# HealthBench Hard at a first-tier limit, twice over: 24,000 judge calls of 3,500 reserved tokens
# at 30,000 tokens a minute
JUDGE_S = 60.0 * 24_000 * 3_500 / 30_000


def limited(seconds: float) -> dict[str, object]:
    judge = {
        "seconds": seconds,
        "requests": 24_000,
        "tokens": 24_000 * 3_500,
        "requests_per_minute": None,
        "tokens_per_minute": 30_000,
    }
    plain = estimate()
    return {
        **plain,
        "judge": {**plain["judge"], "calls": 24_000, "cost_usd": 40.0},  # type: ignore[dict-item]
        "total_cost_usd": 50.0,
        "rate_limited_duration": {"judge": judge, "seconds": seconds},
    }


def test_a_run_of_more_than_a_day_at_the_stated_limits_names_the_ways_out() -> None:
    text = format_estimate(limited(JUDGE_S), Path("/runs/x"))
    assert "judge rate limits: at least 46.7 h (~84,000,000 tokens at 30,000/min)" in text
    assert "warning: at the stated rate limits this run takes at least 46.7 h; ways out:" in text
    # the Batch API: within its 24-hour window, the judge at half price ($50 - $20)
    assert "judge.batch=true (the Batch API): outside the per-minute limits, done within " in text
    assert "24.0 h, ~$30.00 in all (the judge at half price)" in text
    assert "judge.service_tier=flex: ~$30.00 in all (the judge at half price), still at " in text
    assert "about 3.1 h at that limit, ~$50.00 as now" in text  # a 15x higher limit


def test_a_run_of_a_day_or_less_gets_no_warning() -> None:
    assert "warning:" not in format_estimate(limited(DAY_S), Path("/runs/x"))
    assert long_run_lines(DAY_S, DAY_S, 1.0, 2.0) == []
    # a model slower than the judge: the Batch API does not shorten the model's time
    lines = long_run_lines(3 * DAY_S, DAY_S / 2, None, None)
    assert "done within 3.0 days, at a price not configured" in lines[1]
