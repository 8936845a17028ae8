"""What calls cost: token usage per endpoint, dollars from the configured prices, the budget.

Usage is what the endpoints reported for the calls this run paid for. Calls answered by the
response cache are counted apart (`replayed_*`): they were paid for once, by an earlier run, and
cost nothing now.

A run may take several invocations (a budget stop, then `resume=`). Each appends its own usage
to `<run dir>/invocations.jsonl` when it ends (`model.invocations`); `summary.json`'s `usage`
is the sum over all of them, with the per-invocation breakdown under `usage.invocations`.
Requests sent and never answered (a stop abandoned them in flight) are counted apart, with an
estimate of their cost (`abandoned_*`). `budget.max_usd` caps what
one invocation spends; in a sweep, what all its jobs spend together (`model.sweep_budget`), and
`budget.max_usd_per_job` what each job spends.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import NoReturn, Protocol

from healthbench_exp.config.endpoint import STANDARD_TIER, EndpointConfig, PriceConfig
from healthbench_exp.core.endpoint_errors import BudgetExhausted
from healthbench_exp.core.summary import USAGE_FIELDS
from healthbench_exp.model.reply_json import json_map, tokens

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


def tier_factor(price: PriceConfig, tier: str | None) -> float | None:
    """What service tier `tier` costs, as a multiple of the listed price: 1 for none (not
    sent) or the standard tier, else `price.tiers[tier]`; None when the tier's price is not
    known (its cost is then unknown, never the standard one)."""
    if tier is None or (tier == STANDARD_TIER and tier not in price.tiers):
        return 1.0
    return price.tiers.get(tier)


def tier_cost_usd(
    endpoint: EndpointConfig, prompt_tokens: int, cached_prompt_tokens: int, completion_tokens: int
) -> float | None:
    """`cost_usd` at the endpoint's `service_tier` (None: its price or its tier's unknown)."""
    cost = cost_usd(endpoint.price, prompt_tokens, cached_prompt_tokens, completion_tokens)
    factor = tier_factor(endpoint.price, endpoint.service_tier)
    return None if cost is None or factor is None else cost * factor


def unknown_tier(endpoint: EndpointConfig) -> str | None:
    """A note when the endpoint's `service_tier` has no known price (None: it has one)."""
    if tier_factor(endpoint.price, endpoint.service_tier) is not None:
        return None
    return (
        f"service_tier={endpoint.service_tier} of {endpoint.name} has no known price "
        f"(price.tiers lists {', '.join(sorted(endpoint.price.tiers)) or 'none'}): "
        "its cost is unknown"
    )


def request_estimate_usd(
    price: PriceConfig, prompt_chars: int, completion_tokens: int, tier: str | None = None
) -> float:
    """A request's likely cost before its usage is known: prompt at ~4 characters per token,
    at the service tier's price (0 when unknown: a budget refuses such a tier at start-up)."""
    cost = cost_usd(price, prompt_chars // CHARS_PER_TOKEN, 0, completion_tokens) or 0.0
    return cost * (tier_factor(price, tier) or 0.0)


class SharedSpend(Protocol):
    """What a sweep's jobs have committed together, against the sweep's `budget.max_usd`
    (`model.sweep_budget.SweepLedger`): each job's spend plus its requests in flight."""

    max_usd: float  # the sweep's cap

    def claim(self, committed: float) -> float | None:
        """Make `committed` this job's share if the sweep's total stays within `max_usd`
        (None); else the other jobs' total (this job's share left as it was)."""
        ...

    def record(self, committed: float) -> None:
        """Make `committed` this job's share."""
        ...

    def others(self) -> Mapping[str, float]:
        """The other jobs' shares as last read, by job directory name."""
        ...

    def close(self, committed: float) -> None:
        """The job is over: `committed` is its share from now on."""
        ...


class Budget:
    """Measured spend plus the estimated cost of requests in flight, kept under each cap:
    `max_usd` and `max_usd_per_job` over this invocation's own spend (None: not set) and, for a
    job of a sweep, `sweep.max_usd` over its own spend plus that of the sweep's other jobs.

    `reserve` before sending (refused: the request is not sent), `settle` when it has finished,
    with its measured cost (0 for a request that failed without a reply).
    """

    def __init__(
        self,
        max_usd: float | None,
        max_usd_per_job: float | None = None,
        sweep: SharedSpend | None = None,
    ) -> None:
        self.caps = {
            option: cap
            for option, cap in (("max_usd", max_usd), ("max_usd_per_job", max_usd_per_job))
            if cap is not None
        }  # over this invocation's own spend
        self.sweep = sweep
        self.spent = 0.0
        self.in_flight = 0.0
        self.refused = 0
        self.stopped_by: str | None = None  # the option of the cap that refused first

    def reserve(self, estimate: float) -> None:
        own = self.spent + self.in_flight + estimate
        for option, cap in self.caps.items():
            if own > cap:
                self._refuse(
                    option,
                    f"budget.{option}={cap:g} reached (spent ${self.spent:.4f}, "
                    f"${self.in_flight:.4f} in flight)",
                )
        if self.sweep is not None:
            others = self.sweep.claim(own)
            if others is not None:
                self._refuse(
                    "max_usd",
                    f"budget.max_usd={self.sweep.max_usd:g} (the sweep's) reached (the sweep's "
                    f"other jobs committed ${others:.4f}, this one spent ${self.spent:.4f}, "
                    f"${self.in_flight:.4f} in flight)",
                )
        self.in_flight += estimate

    def _refuse(self, option: str, message: str) -> NoReturn:
        self.refused += 1
        self.stopped_by = self.stopped_by or option
        raise BudgetExhausted(message)

    def settle(self, estimate: float, actual: float) -> None:
        self.in_flight -= estimate
        self.spent += actual
        if self.sweep is not None:
            self.sweep.record(self.spent + self.in_flight)

    def close(self) -> None:
        """No more requests: a job of a sweep leaves its exact spend as its share."""
        if self.sweep is not None:
            self.sweep.close(self.spent + self.in_flight)

    @property
    def max_usd(self) -> float | None:
        """`budget.max_usd`: the sweep's cap for a job of a sweep, else this invocation's."""
        return self.sweep.max_usd if self.sweep is not None else self.caps.get("max_usd")

    @property
    def stopped(self) -> bool:
        return self.refused > 0

    def state(self) -> dict[str, object]:
        """The budget's state as summary.json's `budget` holds it (`core.usage_record`)."""
        state: dict[str, object] = {
            "max_usd": self.max_usd,
            "spent_usd": self.spent,
            "stopped": self.stopped,
            "requests_not_sent": self.refused,
        }
        if "max_usd_per_job" in self.caps:
            state["max_usd_per_job"] = self.caps["max_usd_per_job"]
        if self.sweep is not None:
            state["sweep_jobs_usd"] = dict(self.sweep.others())
        if self.stopped_by is not None:
            state["stopped_by"] = self.stopped_by
        return state


def usage_summary(
    endpoints: Mapping[str, EndpointConfig],
    used_roles: Collection[str],
    batched: Collection[str],
    endpoint_stats: Mapping[str, object],
) -> dict[str, object]:
    """Per role of `endpoints` (`model`, `judge`, ...): the usage counters, the price used and
    `cost_usd` (at its service tier's price); plus `total_cost_usd`.

    A role not in `used_roles` (the model, for given replies) shows zeros and cost 0; the tokens
    of a role in `batched` were billed at the Batch API's discount. The total is None when a
    used role has no price (or its tier none).
    """
    usage: dict[str, object] = {}
    total: float | None = 0.0
    abandoned: list[float | None] = []  # the estimates of requests abandoned in flight
    for role, endpoint in endpoints.items():
        price = endpoint.price
        stats = json_map(endpoint_stats[role])
        entry: dict[str, object] = {name: stats[name] for name in USAGE_FIELDS}
        used = role in used_roles
        counted = (
            tokens(stats, "prompt_tokens"),
            tokens(stats, "cached_prompt_tokens"),
            tokens(stats, "completion_tokens"),
        )
        cost: float | None = 0.0
        if used and role in batched:  # a batch sends no tier: billed at the Batch API's rates
            cost = cost_usd(price, *counted)
            cost = None if cost is None else cost * BATCH_PRICE_FACTOR
        elif used:
            cost = tier_cost_usd(endpoint, *counted)
        entry["cost_usd"] = cost
        abandoned += _abandoned(entry, endpoint, stats)
        if stats.get("service_tiers"):  # the tiers the provider reported, counted
            entry["service_tiers"] = dict(json_map(stats["service_tiers"]))
        entry["price"] = {
            "input_per_mtok": price.input_per_mtok,
            "cached_input_per_mtok": price.cached_input_per_mtok,
            "output_per_mtok": price.output_per_mtok,
            "as_of": price.as_of,
        }
        usage[role] = entry
        total = None if total is None or cost is None else total + cost
    usage["total_cost_usd"] = total
    if abandoned:
        usage["abandoned_cost_usd"] = sum_costs(abandoned)
    return usage


def _abandoned(
    entry: dict[str, object], endpoint: EndpointConfig, stats: Mapping[str, object]
) -> list[float | None]:
    """Put a role's requests abandoned in flight (sent, never answered: maybe billed) in its
    usage `entry`, with their ESTIMATED cost (None: no price), as the budget reserves a request
    (`request_estimate_usd`: prompt characters / 4, `expected_completion_tokens`, the tier's
    price); return [that estimate], or [] when none was abandoned."""
    count = tokens(stats, "abandoned_in_flight")
    if not count:
        return []
    prompt = tokens(stats, "abandoned_prompt_chars") // CHARS_PER_TOKEN
    estimate = tier_cost_usd(endpoint, prompt, 0, count * endpoint.expected_completion_tokens)
    entry["abandoned_in_flight"] = count
    entry["abandoned_cost_usd"] = estimate
    return [estimate]


def sum_costs(values: Iterable[object]) -> float | None:
    """The sum of costs; None when one is unknown (null, or not a number)."""
    total = 0.0
    for value in values:
        if not isinstance(value, int | float):
            return None
        total += value
    return total
