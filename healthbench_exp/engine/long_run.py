"""The dry run's warning for a run that would take more than a day at the stated rate limits.

A first-tier OpenAI key gives gpt-4.1 30,000 tokens a minute, and every judge call reserves its
`max_tokens` (2,048 for the reference grader) against it: HealthBench Hard's 12,000 or so judge
calls of about 3,500 reserved tokens take about a day at that limit. When the least time at the
stated limits (`engine.durations`) passes a day, the dry run says so and names the ways out,
each with its time and cost:

- the Batch API (`judge.batch=true`): outside the per-minute limits, done within its 24-hour
  window, at half the judge's price;
- flex processing (`judge.service_tier=flex`): half the judge's price, under the same limits
  (no faster);
- a higher usage tier: the time shrinks with the limit (tier 2 gives gpt-4.1 15 times the
  first tier's tokens a minute), at the same price.
"""

from __future__ import annotations

DAY_S = 86_400.0
BATCH_WINDOW_S = 86_400.0  # the Batch API's completion window
HIGHER_TIER = 15.0  # gpt-4.1's tokens a minute at tier 2 over tier 1 (450,000 / 30,000)


def _span(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds < 2 * DAY_S else f"{seconds / DAY_S:.1f} days"


def _cost(usd: float | None) -> str:
    return "at a price not configured" if usd is None else f"~${usd:,.2f}"


def long_run_lines(
    longest_s: float, judge_s: float | None, judge_usd: float | None, total_usd: float | None
) -> list[str]:
    """The warning's lines ([]: the run takes a day or less at the stated limits). `longest_s`:
    the least time of the slowest role; `judge_s`: the judge's own (None: no judge limits);
    `judge_usd`, `total_usd`: the estimated costs (None: no price)."""
    if longest_s <= DAY_S:
        return []
    others_s = longest_s if judge_s is None or judge_s < longest_s else 0.0  # not the judge's
    batch_s = max(others_s, min(judge_s or 0.0, BATCH_WINDOW_S))
    half = None if judge_usd is None else judge_usd / 2
    saved = None if total_usd is None or half is None else total_usd - half
    return [
        f"  warning: at the stated rate limits this run takes at least {_span(longest_s)}; "
        "ways out:",
        f"    judge.batch=true (the Batch API): outside the per-minute limits, done within "
        f"{_span(batch_s)}, {_cost(saved)} in all (the judge at half price)",
        f"    judge.service_tier=flex: {_cost(saved)} in all (the judge at half price), still "
        f"at least {_span(longest_s)} (the same limits)",
        f"    a higher usage tier (tier 2 gives gpt-4.1 {HIGHER_TIER:g}x tier 1's tokens a "
        f"minute): about {_span(longest_s / HIGHER_TIER)} at that limit, {_cost(total_usd)} "
        "as now",
    ]
