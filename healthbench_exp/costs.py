"""What calls cost: token usage per endpoint, dollars from the configured prices, the budget.

Usage is what the endpoints reported for the calls this run paid for. Calls answered by the
response cache are counted apart (`replayed_*`): they were paid for once, by an earlier run, and
cost nothing now.
"""

from __future__ import annotations

from typing import Any

from .config import Config, PriceConfig, needed_roles

CHARS_PER_TOKEN = 4  # rough English ratio, for requests whose usage is not known yet
BATCH_PRICE_FACTOR = 0.5  # OpenAI bills Batch API tokens at half the listed price


def cost_usd(
    price: PriceConfig, prompt_tokens: int, cached_prompt_tokens: int, completion_tokens: int
) -> float | None:
    """Dollars for this usage; None when the price is not configured."""
    if price.input_per_mtok is None or price.output_per_mtok is None:
        return None
    cached_rate = (
        price.input_per_mtok if price.cached_input_per_mtok is None else price.cached_input_per_mtok
    )
    return (
        (prompt_tokens - cached_prompt_tokens) * price.input_per_mtok
        + cached_prompt_tokens * cached_rate
        + completion_tokens * price.output_per_mtok
    ) / 1e6


def request_estimate_usd(price: PriceConfig, prompt_chars: int, completion_tokens: int) -> float:
    """A request's likely cost before its usage is known: prompt at ~4 characters per token."""
    return cost_usd(price, prompt_chars // CHARS_PER_TOKEN, 0, completion_tokens) or 0.0


class BudgetExhausted(Exception):
    """Sending this request could pass `budget.max_usd`; it was not sent."""


class Budget:
    """Measured spend plus the estimated cost of requests in flight, kept under `max_usd`.

    `reserve` before sending (refused: the request is not sent), `settle` when it has finished,
    with its measured cost (0 for a request that failed without a reply).
    """

    def __init__(self, max_usd: float) -> None:
        self.max_usd = max_usd
        self.spent = 0.0
        self.in_flight = 0.0
        self.refused = 0

    def reserve(self, estimate: float) -> None:
        if self.spent + self.in_flight + estimate > self.max_usd:
            self.refused += 1
            raise BudgetExhausted(
                f"budget.max_usd={self.max_usd:g} reached (spent ${self.spent:.4f}, "
                f"${self.in_flight:.4f} in flight)"
            )
        self.in_flight += estimate

    def settle(self, estimate: float, actual: float) -> None:
        self.in_flight -= estimate
        self.spent += actual

    @property
    def stopped(self) -> bool:
        return self.refused > 0


USAGE_FIELDS = (
    "requests",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "cache_hits",
    "replayed_prompt_tokens",
    "replayed_completion_tokens",
)


def usage_summary(config: Config, endpoint_stats: dict[str, Any]) -> dict[str, Any]:
    """Per role: the usage counters, the price used and `cost_usd`; plus `total_cost_usd`.

    A role the run did not use (the model, for given replies) shows zeros and cost 0. The total
    is None when a used role has no price.
    """
    usage: dict[str, Any] = {}
    total: float | None = 0.0
    for role in ("model", "judge"):
        stats = endpoint_stats[role]
        price = getattr(config, role).price
        entry = {name: stats[name] for name in USAGE_FIELDS}
        used = role in needed_roles(config)
        cost = (
            cost_usd(
                price,
                stats["prompt_tokens"],
                stats["cached_prompt_tokens"],
                stats["completion_tokens"],
            )
            if used
            else 0.0
        )
        if cost is not None and role == "judge" and config.judge.batch:
            cost *= BATCH_PRICE_FACTOR
        entry["cost_usd"] = cost
        entry["price"] = {
            "input_per_mtok": price.input_per_mtok,
            "cached_input_per_mtok": price.cached_input_per_mtok,
            "output_per_mtok": price.output_per_mtok,
            "as_of": price.as_of,
        }
        usage[role] = entry
        total = None if total is None or cost is None else total + cost
    usage["total_cost_usd"] = total
    return usage


def format_usage(usage: dict[str, Any]) -> str:
    """One line per role and the total, for the end-of-run table."""

    def dollars(value: float | None) -> str:
        return "unknown (no price configured)" if value is None else f"${value:.4f}"

    lines = []
    for role in ("model", "judge"):
        u = usage[role]
        if not u["requests"] and not u["cache_hits"]:
            continue
        reasoning = f", {u['reasoning_tokens']} reasoning" if u["reasoning_tokens"] else ""
        lines.append(
            f"  {role} tokens: {u['prompt_tokens']} prompt ({u['cached_prompt_tokens']} cached by "
            f"the provider), {u['completion_tokens']} completion{reasoning}; "
            f"cost {dollars(u['cost_usd'])}"
        )
        if u["cache_hits"]:
            lines.append(
                f"    + {u['cache_hits']} calls replayed from the response cache, not billed "
                f"again ({u['replayed_prompt_tokens']} prompt, "
                f"{u['replayed_completion_tokens']} completion tokens)"
            )
    lines.append(f"  total cost {dollars(usage['total_cost_usd'])}")
    return "\n".join(lines)
