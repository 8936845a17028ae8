"""The dry run's printout reads estimate.json's data through typed records: every part shown."""

from __future__ import annotations

from pathlib import Path

from healthbench_exp.core.intervals import Interval
from healthbench_exp.engine.estimate_record import Estimate
from healthbench_exp.engine.estimate_text import format_estimate
from healthbench_exp.engine.rates import CostInterval

CALLS = {
    "calls": 10,
    "cached_calls": 4,
    "prompt_tokens": 1200,
    "cached_prompt_tokens": 0,
    "completion_tokens": 300,
    "reasoning_tokens": 0,
    "cost_usd": 0.25,
}
RATES = {
    "replies": 12,
    "completion_tokens": 50.0,
    "reasoning_tokens": 0.0,
    "reply_chars": 200.0,
    "tokens_per_char": 0.25,
    "cached_share": 0.5,
    "source": "pilot",
}


def estimate() -> dict[str, object]:
    return {
        "task": "eval",
        "rows": 3,
        "model": CALLS,
        "judge": {**CALLS, "calls": 0},
        "jury": {"juror-x": {**CALLS, "cost_usd": None}},
        "total_cost_usd": 0.5,
        "interval": {"low": 0.4, "high": 0.6, "method": "bootstrap"},
        "pilot": {"rows": 2, "requests": 7, "paid_calls": {"model": 2}, "cost_usd": 0.1},
        "rates": {"model": RATES, "judge": {**RATES, "source": "assumed", "replies": 0}},
        "rate_limited_duration": {
            "judge": {
                "seconds": 120.0,
                "requests": 106,
                "tokens": 5000,
                "requests_per_minute": 53,
                "tokens_per_minute": None,
            },
            "seconds": 120.0,
        },
        "assumptions": {"tokenizer": "tiktoken o200k_base", "history_min_replies": 20},
        "rate_limits_probed": [],
    }


def test_the_interval_is_read_back_as_the_cost_interval_it_was_written_from() -> None:
    """estimate.json's `interval` is the one interval type (with its method), both ways."""
    interval = Estimate.from_dict(estimate()).interval
    assert interval == CostInterval(0.4, 0.6, "bootstrap") and isinstance(interval, Interval)
    assert interval.covers(0.5) and interval.to_dict() == estimate()["interval"]


def test_every_part_of_the_estimate_is_printed() -> None:
    lines = format_estimate(estimate(), Path("/runs/x")).splitlines()
    assert lines[1] == (
        "Dry run: the pilot's 2 rows were sent (7 paid calls, $0.1000; the run reuses them "
        "from the response cache) (3 rows)"
    )
    assert lines[2].startswith("  model 10 calls (4 already in the response cache); to pay: ~1,200")
    assert not any(line.startswith("  judge 0 calls") for line in lines)  # no calls: not shown
    assert lines[3].endswith("unknown (no price configured)") and "juror-x 10 calls" in lines[3]
    assert lines[4] == "  estimated cost $0.5000 (95% interval $0.4000 to $0.6000)"
    assert lines[5] == "  judge rate limits: at least 2.0 min (106 requests at 53/min)"
    assert lines[6] == "  expected duration at the known rate limits: at least 2.0 min"
    assert (
        "measured on 12 replies of this model and its settings to this pilot's 2 rows" in (lines[8])
    )
    assert "prompts counted by tiktoken o200k_base" in lines[9]
    # a warm cache: the rates are measured on more rows than the pilot sent, and say so
    warm = format_estimate({**estimate(), "measured_rows": 3}, Path("/runs/x")).splitlines()
    assert "to 3 rows (the pilot's 2 and 1 the response cache already held)" in warm[8]
    assert "4.00 prompt characters per token, 50% of prompt tokens cached" in lines[8]
    assert "assumed: 50 output tokens per call" in lines[9] and "(no history)" in lines[9]
    assert lines[-2:] == ["  interval: bootstrap", "  written to /runs/x/estimate.json"]


def test_an_estimate_without_limits_pilot_or_interval_says_nothing_was_sent() -> None:
    plain = {**estimate(), "pilot": None, "interval": None, "rate_limited_duration": None}
    text = format_estimate(plain, Path("/runs/x"))
    assert "Dry run: nothing was sent (3 rows)" in text
    assert "rate limits" not in text and "interval" not in text
    assert Estimate.from_dict(plain).durations() is None
