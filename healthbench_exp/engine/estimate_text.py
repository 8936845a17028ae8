"""The dry run's estimate as the CLI prints it: `format_estimate` reads the plain data
`engine.estimate.estimate_run` builds (what `estimate.json` holds) through its typed records
(`engine.estimate_record.Estimate`), with attributes, never string keys, and renders it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from healthbench_exp.engine.estimate_record import Estimate, RatesPart
from healthbench_exp.engine.long_run import long_run_lines
from healthbench_exp.engine.prompt_tokens import APPROXIMATE_TOKENIZER


def minutes(seconds: float) -> str:
    """ "42 s", "5.3 min" or "2.1 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def dollars(value: float | None) -> str:
    return "unknown (no price configured)" if value is None else f"${value:.4f}"


def prompts_counted(tokenizer: str) -> str:
    """How the prompts still to pay were counted, in the words of `tokenizer` (estimate.json's
    `assumptions.tokenizer`): by tiktoken, or at 4 characters per token."""
    if tokenizer == APPROXIMATE_TOKENIZER:
        return "prompt tokens approximated at 4 characters per token"
    return f"prompts counted by {tokenizer}"


def pilot_sample(pilot_rows: int, measured_rows: int | None) -> str:
    """What a pilot's rates were measured on: its rows, and those the cache already held."""
    if measured_rows is None or measured_rows <= pilot_rows:
        return f"this pilot's {pilot_rows} rows"
    return (
        f"{measured_rows} rows (the pilot's {pilot_rows} and {measured_rows - pilot_rows} the "
        "response cache already held)"
    )


def rates_line(
    role: str, rates: RatesPart, min_replies: int, tokenizer: str = "", sample: str = ""
) -> str:
    """Where `role`'s figures come from, in words (`tokenizer`: how prompts were counted;
    `sample`: the rows a pilot's rates were measured on, `pilot_sample`)."""
    reply = f"{rates.completion_tokens:.0f} output tokens per call"
    if rates.reasoning_tokens:
        reply += f" ({rates.reasoning_tokens:.0f} of them reasoning)"
    if rates.source == "assumed":
        have = (
            f"history has {rates.replies} of the {min_replies} needed"
            if rates.replies
            else "no history"
        )
        return (
            f"  {role:<5} assumed: {reply} (expected_completion_tokens), "
            f"{prompts_counted(tokenizer) if tokenizer else 'prompts counted'}, no provider "
            f"prompt caching ({have})"
        )
    per_char = rates.tokens_per_char
    prompt = (
        f"{1 / per_char:.2f} prompt characters per token" if per_char else "prompt tokens counted"
    )
    replies = f"{rates.replies} replies of this {role} and its settings"
    measured = (
        f"{replies} to {sample or 'the pilot rows'}"
        if rates.source == "pilot"
        else f"the cache's history of {replies}"
    )
    return (
        f"  {role:<5} measured on {measured}: {reply}, {prompt}, "
        f"{rates.cached_share:.0%} of prompt tokens cached"
    )


def format_estimate(plain: Mapping[str, object], output_dir: Path) -> str:
    """The estimate (`estimate.json`'s data) as the CLI prints it: per role the calls, tokens
    and dollars, the total (with the pilot's interval), and where each figure comes from."""
    estimate = Estimate.from_dict(plain)
    probed, pilot = estimate.rate_limits_probed, estimate.pilot
    if pilot:
        sent = (
            f"the pilot's {pilot.rows} rows were sent ({pilot.requests} paid calls, "
            f"{dollars(pilot.cost_usd)}; the run reuses them from the response cache)"
        )
    elif probed:
        sent = (
            f"one request to the {' and '.join(probed)} endpoint to read its rate limits was sent"
        )
    else:
        sent = "nothing was sent"
    lines = ["", f"Dry run: {sent} ({estimate.rows} rows)"]
    jury = estimate.jury or {}
    for role, e in [("model", estimate.model), ("judge", estimate.judge), *jury.items()]:
        if not e.calls:
            continue
        lines.append(
            f"  {role:<5} {e.calls} calls ({e.cached_calls} already in the response cache); "
            f"to pay: ~{e.prompt_tokens:,} input ({e.cached_prompt_tokens:,} cached) + "
            f"~{e.completion_tokens:,} output ({e.reasoning_tokens:,} reasoning) tokens, "
            f"{e.cost_note or dollars(e.cost_usd)}"
        )
    total = f"  estimated cost {dollars(estimate.total_cost_usd)}"
    interval = estimate.interval
    if interval:
        total += f" (95% interval ${interval.low:.4f} to ${interval.high:.4f})"
    lines.append(total)
    durations = estimate.durations()
    if durations:
        limited, longest = durations
        for role, d in limited.items():
            limits = [
                f"{d.requests} requests at {d.requests_per_minute:,.0f}/min"
                if d.requests_per_minute
                else "",
                f"~{d.tokens:,} tokens at {d.tokens_per_minute:,.0f}/min"
                if d.tokens_per_minute
                else "",
            ]
            lines.append(
                f"  {role:<5} rate limits: at least {minutes(d.seconds)} "
                f"({'; '.join(filter(None, limits))})"
            )
        lines.append(f"  expected duration at the known rate limits: at least {minutes(longest)}")
        lines += long_run_lines(  # more than a day: the ways out (engine/long_run.py)
            {role: d.seconds for role, d in limited.items()},
            estimate.judge.cost_usd,
            estimate.total_cost_usd,
            judge_batched="judge" in (estimate.batched_roles or []),
        )
    assumptions = estimate.assumptions
    lines.append(f"  where the figures come from ({assumptions.tokenizer}):")
    for role, rates in estimate.rates.items():
        sample = pilot_sample(pilot.rows, estimate.measured_rows) if pilot else ""
        lines.append(
            rates_line(role, rates, assumptions.history_min_replies, assumptions.tokenizer, sample)
        )
    if interval:
        lines.append(f"  interval: {interval.method}")
    lines.append(f"  written to {output_dir / 'estimate.json'}")
    return "\n".join(lines)
