"""The dry run's estimate as typed records: what `estimate.json` holds (`Estimate` and its
parts), read back from the plain data `engine.estimate.estimate_run` builds (and
`healthbench_exp.dry_run` returns) with `Estimate.from_dict`, so its readers use attributes,
never string keys. Its printout is `engine.estimate_text`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from healthbench_exp.core.record import Record
from healthbench_exp.engine.rates import CostInterval


@dataclass
class RoleCalls(Record):
    """One role's calls (`engine.estimate.CallEstimate`)."""

    calls: int
    cached_calls: int
    prompt_tokens: int
    cached_prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    cost_usd: float | None
    # why its cost is unknown though its price is set: its service tier has no known price
    cost_note: str | None = None


@dataclass
class RatesPart(Record):
    """Where a role's figures come from (`engine.rates.Rates`)."""

    replies: int
    completion_tokens: float
    reasoning_tokens: float
    tokens_per_char: float | None
    cached_share: float
    source: str  # pilot | history | assumed


@dataclass
class PilotPart(Record):
    """`pilot` (`engine.pilot.PilotRecord`)."""

    rows: int
    requests: int
    cost_usd: float | None


@dataclass
class DurationPart(Record):
    """A role's least time under its rate limits (`engine.durations.LimitedDuration`)."""

    seconds: float
    requests: int
    tokens: int
    requests_per_minute: float | None
    tokens_per_minute: float | None


@dataclass
class Assumptions(Record):
    tokenizer: str
    history_min_replies: int


@dataclass
class Estimate(Record):
    """The parts of an estimate its printout reads (None: not in the estimate)."""

    rows: int
    model: RoleCalls
    judge: RoleCalls
    jury: dict[str, RoleCalls] | None
    total_cost_usd: float | None
    interval: CostInterval | None  # the pilot's 95% interval (`engine.rates`)
    pilot: PilotPart | None
    rates: dict[str, RatesPart]
    # per role a DurationPart, and `seconds`: the longest (read by `durations`)
    rate_limited_duration: dict[str, object] | None
    assumptions: Assumptions
    rate_limits_probed: list[str] | None
    # the rows whose replies measured a pilot's rates: the pilot's and those the response
    # cache already held (None: an estimate that did not record it)
    measured_rows: int | None = None
    # the roles sent through the Batch API (None: an estimate that did not record it)
    batched_roles: list[str] | None = None

    def durations(self) -> tuple[dict[str, DurationPart], float] | None:
        """Each limited role's least time, and the longest (None: no known limits)."""
        durations = self.rate_limited_duration
        if not durations:
            return None
        seconds = durations.get("seconds")
        roles = {
            role: DurationPart.from_dict(d)
            for role, d in durations.items()
            if role != "seconds" and isinstance(d, Mapping)
        }
        return roles, float(seconds) if isinstance(seconds, int | float) else 0.0
