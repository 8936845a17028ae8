"""The per-call rates a cost estimate applies (reply length, tokens per character, reasoning,
the provider-cached share), where each comes from, and the pilot's interval.

A role's rates come, in this order, from the pilot's calls (`dry_run.pilot`), from the response
cache's history of the same profile (at least `HISTORY_MIN_REPLIES` replies), or from
assumptions (`expected_completion_tokens`, the tokenizer's count, no reasoning, no provider
prompt caching). The calls still to pay are then priced from their counted prompt characters
(or tokens) and these rates (`RoleWork.usage`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

from healthbench_exp.config.schema import PriceConfig
from healthbench_exp.core.intervals import Interval
from healthbench_exp.core.record import Record
from healthbench_exp.grading.resampling import bootstrap_draws
from healthbench_exp.model.cache import CachedReply, History
from healthbench_exp.model.costs import BATCH_PRICE_FACTOR, cost_usd, tier_factor

BOOTSTRAP_RESAMPLES = 1000
# how much one model's reply lengths vary across prompts (their coefficient of variation) at
# least, in the pilot's interval: a few rows cannot show it (the demo's 3 first rows all ran
# long: 1,582 output tokens measured against 1,047)
REPLY_CV = 0.5
ASSUMED_CHARS_PER_TOKEN = 4  # a reply's characters, when only its tokens are assumed


@dataclass(frozen=True)
class Rates(History):
    """What one call of a role is expected to take (`History`'s measures: completion tokens,
    reasoning included, and reasoning tokens per call, reply characters, prompt tokens per
    character, None: count with the tokenizer, the provider-cached share) and `source`, where
    they come from: `pilot`, `history` or `assumed` (`replies`: how many replies measured them)."""

    source: str


def assumed(expected_completion_tokens: int) -> Rates:
    """Rates without any measurement: the configured reply length, nothing else."""
    return Rates(
        replies=0,
        completion_tokens=float(expected_completion_tokens),
        reasoning_tokens=0.0,
        reply_chars=float(expected_completion_tokens * ASSUMED_CHARS_PER_TOKEN),
        tokens_per_char=None,
        cached_share=0.0,
        source="assumed",
    )


def from_history(history: History) -> Rates:
    return Rates(**asdict(history), source="history")


def from_replies(replies: Sequence[CachedReply], source: str) -> Rates | None:
    """The rates `replies` measured (None: no reply)."""
    if not replies:
        return None
    n = len(replies)
    with_chars = [r for r in replies if r.prompt_chars]
    chars = sum(r.prompt_chars or 0 for r in with_chars)
    prompt = sum(r.prompt_tokens for r in replies)
    return Rates(
        replies=n,
        completion_tokens=sum(r.completion_tokens for r in replies) / n,
        reasoning_tokens=sum(r.reasoning_tokens for r in replies) / n,
        reply_chars=sum(len(r.text) for r in replies) / n,
        tokens_per_char=sum(r.prompt_tokens for r in with_chars) / chars if chars else None,
        cached_share=sum(r.cached_prompt_tokens for r in replies) / prompt if prompt else 0.0,
        source=source,
    )


@dataclass
class RoleWork:
    """A role's calls still to pay, as counted: their number, their prompts' known characters
    and tokenizer tokens, and `unknown_replies`: model replies not known yet that their prompts
    (judge calls) contain."""

    calls: int = 0
    chars: int = 0
    counted_tokens: int = 0
    unknown_replies: int = 0

    def usage(self, rates: Rates, reply: Rates) -> TokenUsage:
        """The tokens these calls take at `rates`, with `reply`: the model's rates (how long
        the unknown replies inside the prompts are)."""
        if rates.tokens_per_char is not None:
            prompt = rates.tokens_per_char * (self.chars + self.unknown_replies * reply.reply_chars)
        else:
            reply_tokens = reply.completion_tokens - reply.reasoning_tokens
            prompt = self.counted_tokens + self.unknown_replies * reply_tokens
        return TokenUsage(
            round(prompt),
            round(prompt * rates.cached_share),
            round(self.calls * rates.completion_tokens),
            round(self.calls * rates.reasoning_tokens),
        )


@dataclass(frozen=True)
class TokenUsage:
    input: int
    cached_input: int
    output: int  # reasoning included
    reasoning: int

    def cost(self, price: PriceConfig, batch: bool, tier: str | None = None) -> float | None:
        """Dollars at `price` and service tier `tier` (None: no price, or none for the tier);
        `batch`: at the Batch API's discount."""
        dollars = cost_usd(price, self.input, self.cached_input, self.output)
        factor = 1.0 if batch else tier_factor(price, tier)  # a batch sends no tier
        if dollars is None or factor is None:
            return None
        return dollars * factor * (BATCH_PRICE_FACTOR if batch else 1.0)


@dataclass
class Sample:
    """The pilot's measured calls, grouped by row (one row: its model call and its judge calls),
    per role: what the bootstrap resamples."""

    rows: list[dict[str, list[CachedReply]]] = field(default_factory=list)

    def add(self, row: dict[str, list[CachedReply]]) -> None:
        if any(row.values()):
            self.rows.append(row)

    def replies(self, role: str, rows: Sequence[dict[str, list[CachedReply]]]) -> list[CachedReply]:
        return [reply for row in rows for reply in row.get(role, [])]


@dataclass(frozen=True)
class CostInterval(Interval, Record):
    """A cost estimate's interval (`core.intervals.Interval`) with the text saying how it was
    made (`method`, shown beside it); estimate.json's `interval` (`low`, `high`, `method`), read
    back as itself."""

    method: str


# the cost of the calls still to pay at measured rates (a role's None: its usual rates)
TotalAt = Callable[[dict[str, Rates | None]], float | None]


# Student's t, two-sided 95%, for 1 to 30 degrees of freedom (beyond: 1.96 + 2.4 / df)
T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_975(df: int) -> float:
    return T_975[df - 1] if df <= len(T_975) else 1.96 + 2.4 / df


def longer_replies(sample: Sample, factor: float) -> Rates | None:
    """The model's pilot rates with replies `factor` longer (tokens and characters)."""
    rates = from_replies(sample.replies("model", sample.rows), "pilot")
    if rates is None:
        return None
    return replace(
        rates,
        completion_tokens=rates.completion_tokens * (1 + factor),
        reasoning_tokens=rates.reasoning_tokens * (1 + factor),
        reply_chars=rates.reply_chars * (1 + factor),
    )


def bootstrap_interval(
    sample: Sample,
    point: float | None,
    total_at: TotalAt,
    rows_left: int,
    seed: int = 0,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> CostInterval | None:
    """A 95% interval for the cost of the `rows_left` rows still to pay, around the estimate
    `point`, from the pilot's n rows. Two uncertainties add up:

    - what the pilot measured (the per-call means): the rows resampled with replacement
      `resamples` times, each time the rates re-measured and the cost recomputed
      (`total_at`); their variance s^2, times n/(n-1) (the bootstrap's small-sample bias);
    - the rows still to pay, each as long as it happens to be: even at the true means their
      sum varies by rows_left x the variance of one row's cost, which is s^2 x n / rows_left
      (s^2 is about rows_left^2 x that variance / n).

    The half-width is t(n-1) x s x sqrt(n/(n-1) + n/rows_left), combined (root of the sum of
    squares) with an allowance for reply lengths a few rows cannot show: t(n-1) x the cost's
    change if the model's replies were REPLY_CV longer x sqrt(1/n + 1/rows_left). A percentile
    interval of the means alone is too narrow for a pilot of a few rows (bench/
    estimate_accuracy.py --coverage measures it). None: fewer than 2 rows, or no price."""
    rows = sample.rows
    n = len(rows)
    if n < 2 or point is None:
        return None
    roles = sorted({role for row in rows for role in row})  # the model, judge, jury members

    def resampled(drawn: Sequence[int]) -> float | None:
        picked = [rows[i] for i in drawn]
        return total_at({role: from_replies(sample.replies(role, picked), "pilot") for role in
                         roles})  # fmt: skip

    totals = bootstrap_draws(resampled, (n,), resamples, seed)  # `grading.resampling`'s draws
    if len(totals) < resamples:  # a resample without a price: no interval
        return None
    left = max(rows_left, 1)
    spread = n / (n - 1) + n / left
    half = t_975(n - 1) * statistics.stdev(totals) * math.sqrt(spread)
    # a few rows may all be long (or short): at least REPLY_CV of row-to-row reply variation
    shift = total_at({**dict.fromkeys(roles), "model": longer_replies(sample, REPLY_CV)})
    if shift is not None:
        floor = t_975(n - 1) * abs(shift - point) * math.sqrt(1 / n + 1 / left)
        half = math.sqrt(half**2 + floor**2)
    return CostInterval(
        max(0.0, point - half),
        point + half,
        f"95%: the estimate +- t({n - 1}) x the standard deviation of the cost over {resamples} "
        f"bootstrap resamples of the {n} measured rows (rates re-measured each time) x "
        f"sqrt(n/(n-1) + n/{left}"
        + (" rows still to pay)" if rows_left > 0 else ": no row is left to pay)")
        + ": the means' uncertainty and the rows' own "
        f"variation; with an allowance for replies {REPLY_CV:.0%} longer or shorter than the "
        "measured ones, row to row",
    )
