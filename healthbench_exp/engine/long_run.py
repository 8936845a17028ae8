"""The dry run's warning for a run that would take more than a day at the stated rate limits.

A first-tier OpenAI key gives gpt-4.1 30,000 tokens a minute, and every judge call reserves its
`max_tokens` (2,048 for the reference grader) against it: HealthBench Hard's 12,000 or so judge
calls of about 3,500 reserved tokens take about a day at that limit. When the least time at the
stated limits (`engine.durations`) passes a day, the dry run says so and names the ways out,
each with its time and cost:

- the Batch API (`judge.batch=true`): the judge's calls leave the per-minute limits and are done
  within the Batch API's 24-hour window, at half the judge's price. Only the judge is batched:
  the model's calls (and a jury's) keep their own least time, and the judge's batch is submitted
  after the model's last reply (`model.batch`), so the run takes at least that time, and may
  take up to 24 hours more;
- flex processing (`judge.service_tier=flex`): half the judge's price, under the same limits
  (no faster);
- a higher usage tier: the time shrinks with the limit (tier 2 gives gpt-4.1 15 times the
  first tier's tokens a minute), at the same price.
"""

from __future__ import annotations

from collections.abc import Mapping

DAY_S = 86_400.0
BATCH_WINDOW_S = 86_400.0  # the Batch API's completion window
HIGHER_TIER = 15.0  # gpt-4.1's tokens a minute at tier 2 over tier 1 (450,000 / 30,000)
JUDGE = "judge"


def _span(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds < 2 * DAY_S else f"{seconds / DAY_S:.1f} days"


def _cost(usd: float | None) -> str:
    return "at a price not configured" if usd is None else f"~${usd:,.2f}"


def half_price_judge(judge_usd: float | None, total_usd: float | None) -> str:
    """The run's cost with the judge at half price, and the saving (the judge's half):
    `~$30.00 in all, ~$20.00 less (the judge at half price)`."""
    if judge_usd is None:
        return "at a price not configured (the judge at half price)"
    saving = judge_usd / 2
    new_total = "" if total_usd is None else f"{_cost(total_usd - saving)} in all, "
    return f"{new_total}{_cost(saving)} less (the judge at half price)"


def batch_time(seconds: Mapping[str, float]) -> str:
    """How long the run takes with the judge batched: the other roles' calls keep their least
    time (the slowest named), then the judge's batch is done within the Batch API's window."""
    others = {role: s for role, s in seconds.items() if role != JUDGE and s > 0}
    window = f"done within {_span(BATCH_WINDOW_S)}"
    if not others:
        return f"{window} of the model's last reply"
    slowest = max(others, key=lambda role: others[role])
    whose = "the model's" if slowest == "model" else f"{slowest}'s"
    return (
        f"but {whose} calls (not batched) still take at least {_span(others[slowest])}, the "
        f"judge's batch {window} after them"
    )


def long_run_lines(
    seconds: Mapping[str, float],
    judge_usd: float | None,
    total_usd: float | None,
    judge_batched: bool = False,
) -> list[str]:
    """The warning's lines ([]: the run takes a day or less at the stated limits). `seconds`:
    each rate-limited role's least time at its stated limits (`model`, `judge`, a jury
    member's name); `judge_usd`, `total_usd`: the estimated costs (None: no price);
    `judge_batched`: the judge goes through the Batch API already (`judge.batch=true`: at half
    price, no flex tier), so the only way out named is a higher tier."""
    longest_s = max(seconds.values(), default=0.0)
    if longest_s <= DAY_S:
        return []
    warning = (
        f"  warning: at the stated rate limits this run takes at least {_span(longest_s)}; "
        "ways out:"
    )
    higher_tier = (
        f"    a higher usage tier (tier 2 gives gpt-4.1 {HIGHER_TIER:g}x tier 1's tokens a "
        f"minute): about {_span(longest_s / HIGHER_TIER)} at that limit, {_cost(total_usd)} "
        "as now"
    )
    if judge_batched:
        return [warning.replace("ways out:", "the judge is batched already; a way out:"),
                higher_tier]  # fmt: skip
    halved = half_price_judge(judge_usd, total_usd)
    return [
        warning,
        f"    judge.batch=true (the Batch API): the judge outside the per-minute limits, "
        f"{batch_time(seconds)}; {halved}",
        f"    judge.service_tier=flex: {halved}, still at least {_span(longest_s)} (the same "
        "limits)",
        higher_tier,
    ]
