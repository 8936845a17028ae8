"""The `usage` and `budget` parts of `summary.json` (see `core.summary`): tokens and dollars per
endpoint role, each invocation's own, and the budget's state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from healthbench_exp.core.record import OMIT_NONE, Record

ILLUSTRATIVE = "illustrative"  # how a placeholder price's `as_of` starts (the offline demo's)


def is_illustrative(as_of: object) -> bool:
    """Whether a price's `as_of` marks it a placeholder (`illustrative: ...`), not a price a
    provider charges: a cost from it is shown as illustrative."""
    return isinstance(as_of, str) and as_of.strip().lower().startswith(ILLUSTRATIVE)


@dataclass
class Price(Record):
    """USD per million tokens, as configured (None: not set)."""

    input_per_mtok: float | None
    cached_input_per_mtok: float | None
    output_per_mtok: float | None
    as_of: str | None


@dataclass
class RoleUsage(Record):
    """One endpoint role's usage: what it reported for the calls this run paid for, and the
    calls replayed from the response cache (`replayed_*`, not billed again)."""

    requests: int
    prompt_tokens: int
    cached_prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    cache_hits: int
    replayed_prompt_tokens: int
    replayed_completion_tokens: int
    cost_usd: float | None  # None: its price is not configured (0 for a role not used)
    # absent in the role entries of `usage.invocations`
    price: Price | None = field(default=None, metadata=OMIT_NONE)
    # the service tiers the provider reported serving the paid calls at (`service_tier` of
    # each reply), counted; absent when no reply named one
    service_tiers: dict[str, int] | None = field(default=None, metadata=OMIT_NONE)
    # requests sent and never answered (a stop cancelled them: a second Ctrl-C, the end of
    # `runner.stop_grace_s`): maybe billed, so counted apart; absent when none
    abandoned_in_flight: int | None = field(default=None, metadata=OMIT_NONE)
    # their cost, ESTIMATED as the budget reserves a request (prompt characters / 4 and the
    # endpoint's expected_completion_tokens at its price); not in `cost_usd`
    abandoned_cost_usd: float | None = field(default=None, metadata=OMIT_NONE)


USAGE_FIELDS = (
    "requests",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "cache_hits",
    "replayed_prompt_tokens",
    "replayed_completion_tokens",
)  # RoleUsage's counters, in its order: summed over calls and invocations


@dataclass
class BudgetState(Record):
    """`budget`: an invocation's spend against `budget.max_usd` (a sweep's job: the sweep's
    cap, over its own spend and `sweep_jobs_usd`) and `budget.max_usd_per_job`."""

    max_usd: float | None  # None: only a per-job cap was set
    spent_usd: float
    stopped: bool  # a request was refused: rows were left unrun
    requests_not_sent: int
    max_usd_per_job: float | None = field(default=None, metadata=OMIT_NONE)
    # a sweep's job under the sweep's max_usd: the spend of the sweep's other jobs, by job
    # directory name, as last read (at the stop when it stopped)
    sweep_jobs_usd: dict[str, float] | None = field(default=None, metadata=OMIT_NONE)
    # which cap refused a request: "max_usd" or "max_usd_per_job" (absent: none did)
    stopped_by: str | None = field(default=None, metadata=OMIT_NONE)

    def binding(self) -> tuple[str, float]:
        """The cap that stopped the invocation, else the one over its own spend: its option
        (`budget.max_usd` or `budget.max_usd_per_job`) and value."""
        if self.max_usd is None or self.stopped_by == "max_usd_per_job":
            assert self.max_usd_per_job is not None, "a budget without a cap"
            return "budget.max_usd_per_job", self.max_usd_per_job
        return "budget.max_usd", self.max_usd

    @property
    def sweep_wide(self) -> bool:
        """Whether `binding` is a sweep's cap, over the spend of all its jobs."""
        return self.binding()[0] == "budget.max_usd" and self.sweep_jobs_usd is not None

    def cap_text(self) -> str:
        """`budget.max_usd=0.1`, `budget.max_usd=0.1 (the sweep's, over all its jobs)`..."""
        option, value = self.binding()
        return f"{option}={value:g}" + (" (the sweep's, over all its jobs)" * self.sweep_wide)


@dataclass
class Invocation(Record):
    """One invocation (a run and each `resume=` of it): its own usage and budget."""

    invocation: int  # 1, 2, ... in the run's invocations.jsonl
    started_at: str  # ISO 8601, UTC
    finished_at: str
    model: RoleUsage
    judge: RoleUsage
    total_cost_usd: float | None
    budget: BudgetState | None
    jury: dict[str, RoleUsage] | None = field(default=None, metadata=OMIT_NONE)  # by member
    abandoned_cost_usd: float | None = field(default=None, metadata=OMIT_NONE)  # estimated
    # its wall time in seconds (None: a line older than the record of it); a killed one's
    # from its start to its spend journal's last line
    wall_time_s: float | None = field(default=None, metadata=OMIT_NONE)
    # True: it was killed (SIGKILL) before it recorded its usage; the next invocation recorded
    # it from its spend journal (`model.spend_journal`): its requests in flight at the kill are
    # counted as abandoned, their cost estimated
    killed: bool | None = field(default=None, metadata=OMIT_NONE)


@dataclass
class Usage(Record):
    """`usage`: per role, summed over the run's invocations (prices: the last one's)."""

    model: RoleUsage
    judge: RoleUsage
    total_cost_usd: float | None  # None when a used role has no price
    invocations: list[Invocation] | None = field(default=None, metadata=OMIT_NONE)  # oldest first
    # a jury's further judges (`jury=[...]`), by model name: each its own usage and cost
    jury: dict[str, RoleUsage] | None = field(default=None, metadata=OMIT_NONE)
    # the estimated cost of every role's requests abandoned in flight (`RoleUsage`), summed
    # over the invocations; not in `total_cost_usd`; absent when none was abandoned
    abandoned_cost_usd: float | None = field(default=None, metadata=OMIT_NONE)
    # the wall time of every invocation, summed (None: a summary older than the record of it)
    wall_time_s: float | None = field(default=None, metadata=OMIT_NONE)

    def abandoned(self) -> int:
        """How many requests were abandoned in flight, over every role and invocation."""
        roles = [self.model, self.judge, *(self.jury or {}).values()]
        return sum(role.abandoned_in_flight or 0 for role in roles)

    def killed(self) -> int:
        """How many of the run's invocations were killed (recorded from their journals)."""
        return sum(bool(i.killed) for i in self.invocations or [])

    def tokens(self) -> int:
        """Prompt and completion tokens paid for, over every role and invocation."""
        roles = [self.model, self.judge, *(self.jury or {}).values()]
        return sum(r.prompt_tokens + r.completion_tokens for r in roles)

    def role(self, name: str) -> RoleUsage:
        """`model` or `judge`."""
        return self.judge if name == "judge" else self.model

    def illustrative_roles(self) -> list[str]:
        """The roles whose cost came from an illustrative price (see `is_illustrative`)."""
        return [
            name
            for name in ("model", "judge")
            if (price := self.role(name).price) is not None
            and is_illustrative(price.as_of)
            and self.role(name).cost_usd
        ]


def invocation_wall_s(entry: Mapping[str, object]) -> float:
    """An invocation's wall time (a line of `invocations.jsonl`, or of `usage.invocations`): as
    recorded, else (a line older than the record of it) from its start to its end."""
    wall = entry.get("wall_time_s")
    if isinstance(wall, int | float):
        return float(wall)
    try:
        began = datetime.fromisoformat(str(entry["started_at"]))
        ended = datetime.fromisoformat(str(entry["finished_at"]))
    except (KeyError, ValueError):
        return 0.0
    return max(0.0, (ended - began).total_seconds())


@dataclass(frozen=True)
class Spend:
    """What a run paid, as one set of numbers over the same invocations (all of them): the
    measured cost (None: a price is unknown), the tokens paid for (prompt and completion, every
    role), the wall time, and the requests abandoned in flight with their estimated cost (None:
    unknown), apart from the measured cost. A comparison shows a job's spend from it alone."""

    cost_usd: float | None
    tokens: int
    wall_time_s: float
    abandoned: int = 0
    abandoned_cost_usd: float | None = None

    @classmethod
    def of(cls, usage: Usage, wall_time_s: float) -> Spend:
        """The spend in `usage` (summed over invocations, or one invocation's), taking
        `wall_time_s` when it records none (a summary older than the record of it)."""
        return cls(
            cost_usd=usage.total_cost_usd,
            tokens=usage.tokens(),
            wall_time_s=usage.wall_time_s if usage.wall_time_s is not None else wall_time_s,
            abandoned=usage.abandoned(),
            abandoned_cost_usd=usage.abandoned_cost_usd if usage.abandoned() else None,
        )

    @classmethod
    def of_invocations(cls, entries: Sequence[Mapping[str, object]]) -> Spend:
        """The spend of these lines of `invocations.jsonl` (each with its `usage`), summed: a
        run that has no summary yet (interrupted, killed, still running) paid this much."""
        spends = [
            cls.of(Usage.from_dict(usage), invocation_wall_s(entry))
            for entry in entries
            if isinstance(usage := entry.get("usage"), Mapping)
        ]
        costs = [s.cost_usd for s in spends]
        estimates = [s.abandoned_cost_usd for s in spends if s.abandoned]
        return cls(
            cost_usd=None if None in costs else sum(c or 0.0 for c in costs),
            tokens=sum(s.tokens for s in spends),
            wall_time_s=sum(s.wall_time_s for s in spends),
            abandoned=sum(s.abandoned for s in spends),
            abandoned_cost_usd=None
            if None in estimates or not estimates
            else sum(e or 0.0 for e in estimates),
        )
