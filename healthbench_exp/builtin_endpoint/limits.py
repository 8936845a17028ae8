"""The built-in server's account faults: rate limits, an exhausted quota, a silent endpoint.

They apply to the requests of one role (`limited_role`: judge, model or all; the server tells a
judge request by the grader prompt). The rate limiter answers as OpenAI does: each model its own
limits (OpenAI limits each model of an organization apart, so a model under test and another
judge model never draw on one limit, and the same model in both roles does), two token buckets
per model (requests and tokens, each refilled evenly over `window_s`, full at the start), every
reply to a limited role carrying `x-ratelimit-limit-*` (per minute, as OpenAI reports them),
`x-ratelimit-remaining-*` and `x-ratelimit-reset-*` ("20ms", "6s", "1m0s"); a refused request
gets 429 with `retry-after`, `retry-after-ms` and the body
`{"error": {"message": "Rate limit reached ... Please try again in 1.2s. ...", "type":
"requests"|"tokens", "code": "rate_limit_exceeded"}}`. A request counts its prompt (4
characters per token) plus its `max_tokens` against the token limit, as OpenAI counts it.
`rate_limit_schedule` moves the limit: from given times the account's other jobs spend a share
of each bucket's refill, so less is left (the headers' limit stays the account's).
`rate_limit_bare` sends no rate-limit header at all (no `x-ratelimit-*`, no `retry-after`, a 429
"Rate limit exceeded" that names no wait), as most OpenAI-compatible servers other than OpenAI's;
`rate_limited_first` answers the first N requests so (a burst of 429s at the start).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence

from healthbench_exp.config.ranges import rate_limit_schedule
from healthbench_exp.config.schema import OfflineServerConfig

ROLES = ("all", "model", "judge")
QUOTA_MESSAGE = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, read the docs: "
    "https://platform.openai.com/docs/guides/error-codes/api-errors."
)

# a 429 as servers without rate-limit headers send it: no wait in the message either
BARE_429 = {
    "message": "Rate limit exceeded",
    "type": "rate_limit_error",
    "param": None,
    "code": "rate_limit_exceeded",
}


def format_duration(seconds: float) -> str:
    """OpenAI's reset format: "20ms", "6s", "1.2s", "1m0s"."""
    if seconds < 1.0:
        return f"{max(1, math.ceil(seconds * 1000))}ms"
    if seconds < 60.0:
        return f"{math.ceil(seconds * 1000) / 1000:g}s"
    minutes, rest = divmod(seconds, 60.0)
    return f"{int(minutes)}m{math.ceil(rest * 1000) / 1000:g}s"


def parse_schedule(text: str) -> list[tuple[float, float]]:
    """`rate_limit_schedule` ("T:S,..."): (from T seconds on, the share S of the refill that the
    account's other jobs spend), by T (ValueError for an entry that is not T:S, S in [0, 1);
    `config.ranges.rate_limit_schedule`, which the start-up checks use too)."""
    return rate_limit_schedule(text)


def others_share(schedule: Sequence[tuple[float, float]], elapsed: float) -> float:
    """The share of the refill the account's other jobs spend `elapsed` s after the start."""
    share = 0.0
    for at, step in schedule:
        if elapsed >= at:
            share = step
    return share


class Bucket:
    """`capacity` units, refilled evenly over `window_s`; full at the start (`clock()`, the
    server's monotonic seconds). `schedule`: when the account's other jobs spend a share of the
    refill (see `parse_schedule`)."""

    def __init__(
        self,
        capacity: int,
        window_s: float,
        schedule: Sequence[tuple[float, float]] = (),
        *,
        clock: Callable[[], float],
    ) -> None:
        self.capacity = capacity
        self.per_s = capacity / window_s
        self.level = float(capacity)
        self.updated = self.started = clock()
        self.schedule = schedule

    def refill(self, now: float) -> None:
        ours = 1.0 - others_share(self.schedule, now - self.started)
        self.level = min(self.capacity, self.level + (now - self.updated) * self.per_s * ours)
        self.updated = now

    def wait_s(self, amount: float) -> float:
        """Seconds until `amount` is available (0: now)."""
        return max(0.0, amount - self.level) / self.per_s

    def reset_s(self) -> float:
        """Seconds until full again."""
        return (self.capacity - self.level) / self.per_s


class AccountLimits:
    """The account faults of `settings`: rate limits (`rate_limit_requests` and
    `rate_limit_tokens` per `rate_limit_window_s` for each model, 0 = none), `quota_exhausted`
    and `silent`, for the requests of `limited_role`. `clock`: the server's monotonic seconds,
    the only time the limits read (the wall clock where the server is made, `server.main`; a
    fake one in the pacer's tests)."""

    def __init__(self, settings: OfflineServerConfig, clock: Callable[[], float]) -> None:
        self.clock = clock
        if settings.limited_role not in ROLES:
            raise ValueError(f"limited_role must be one of {', '.join(ROLES)}")
        self.window_s = settings.rate_limit_window_s
        capacities = (
            ("requests", settings.rate_limit_requests),
            ("tokens", settings.rate_limit_tokens),
        )
        self.capacities = {kind: capacity for kind, capacity in capacities if capacity > 0}
        self.schedule = parse_schedule(settings.rate_limit_schedule)
        self.models: dict[str, dict[str, Bucket]] = {}  # each model's, from its first request
        self.per_minute = 60.0 / self.window_s
        self.bare = settings.rate_limit_bare  # no rate-limit header in replies or 429s
        self.refuse_first = settings.rate_limited_first  # 429s without headers still to give
        self.quota_exhausted = settings.quota_exhausted
        self.silent = settings.silent
        self.limited_role = settings.limited_role
        # what was admitted under the limits, all models together and each model (bench/)
        self.admitted = {"limited_requests": 0, "limited_tokens": 0}
        self.admitted_by_model: dict[str, dict[str, int]] = {}
        self.first_at: dict[str, float] = {}  # time.time() of each model's first request

    def applies(self, is_judge: bool) -> bool:
        return self.limited_role == "all" or self.limited_role == ("judge" if is_judge else "model")

    def quota_error(self) -> tuple[int, dict[str, object], dict[str, str]]:
        error = {"message": QUOTA_MESSAGE, "type": "insufficient_quota"}
        return 429, {"error": {**error, "param": None, "code": "insufficient_quota"}}, {}

    def buckets(self, model: str) -> dict[str, Bucket]:
        """`model`'s buckets (full until its first request)."""
        buckets = self.models.get(model)
        if buckets is None:
            buckets = self.models[model] = {
                kind: Bucket(capacity, self.window_s, self.schedule, clock=self.clock)
                for kind, capacity in self.capacities.items()
            }
            self.admitted_by_model[model] = {"limited_requests": 0, "limited_tokens": 0}
            self.first_at[model] = time.time()
        return buckets

    def admit(
        self, model: str, tokens: int
    ) -> tuple[dict[str, str], tuple[int, dict[str, object], dict[str, str]] | None]:
        """(rate-limit headers for the reply, None to admit it or the 429 to send instead).

        An admitted request takes its request and tokens from its model's buckets; a refused
        one takes nothing. With `rate_limit_bare` neither carries a rate-limit header (nor
        the 429's message a wait); the first `rate_limited_first` requests are refused so."""
        if self.refuse_first > 0:
            self.refuse_first -= 1
            return {}, (429, {"error": BARE_429}, {})
        if not self.capacities:
            return {}, None
        buckets = self.buckets(model)
        now = self.clock()
        amounts = {"requests": 1, "tokens": tokens}
        for bucket in buckets.values():
            bucket.refill(now)
        short = {kind: b.wait_s(amounts[kind]) for kind, b in buckets.items()}
        refused = max(short, key=lambda kind: short[kind])
        wait = short[refused]
        if wait <= 0:
            for kind, bucket in buckets.items():
                bucket.level -= amounts[kind]
            for admitted in (self.admitted, self.admitted_by_model[model]):
                admitted["limited_requests"] += 1
                admitted["limited_tokens"] += tokens
        headers = {} if self.bare else _headers(buckets, self.per_minute)
        if wait <= 0:
            return headers, None
        if self.bare:
            return {}, (429, {"error": BARE_429}, {})
        bucket = buckets[refused]
        unit = "requests per min (RPM)" if refused == "requests" else "tokens per min (TPM)"
        message = (
            f"Rate limit reached for {model} in organization org-offline on {unit}: Limit "
            f"{round(bucket.capacity * self.per_minute)}, Used "
            f"{round((bucket.capacity - bucket.level) * self.per_minute)}, Requested "
            f"{amounts[refused]}. Please try again in {format_duration(wait)}. Visit "
            "https://platform.openai.com/account/rate-limits to learn more."
        )
        headers["retry-after"] = str(math.ceil(wait))
        headers["retry-after-ms"] = str(math.ceil(wait * 1000))
        error = {"message": message, "type": refused, "param": None, "code": "rate_limit_exceeded"}
        return headers, (429, {"error": error}, headers)

    def limit_stats(self) -> dict[str, object]:
        """What was admitted under the limits (all models together), each limit's capacity
        and refill per second, and by model (`limit_models`) what each admitted, each of its
        buckets' level now and when its first request came (`first_request_at`, time.time());
        a model not limited yet is not there (its buckets are full)."""
        stats: dict[str, object] = dict(self.admitted)
        for kind, capacity in self.capacities.items():
            stats[f"limit_{kind}_capacity"] = capacity
            stats[f"limit_{kind}_per_s"] = capacity / self.window_s
        now = self.clock()
        models: dict[str, dict[str, float]] = {}
        for model, buckets in self.models.items():
            levels: dict[str, float] = dict(self.admitted_by_model[model])
            levels["first_request_at"] = self.first_at[model]
            for kind, bucket in buckets.items():
                bucket.refill(now)
                levels[f"limit_{kind}_level"] = bucket.level
            models[model] = levels
        stats["limit_models"] = models
        return stats


def _headers(buckets: Mapping[str, Bucket], per_minute: float) -> dict[str, str]:
    """The `x-ratelimit-*` headers of a model's buckets (limits per minute, as OpenAI's)."""
    headers = {}
    for kind, bucket in buckets.items():
        headers[f"x-ratelimit-limit-{kind}"] = str(round(bucket.capacity * per_minute))
        headers[f"x-ratelimit-remaining-{kind}"] = str(max(0, math.floor(bucket.level)))
        headers[f"x-ratelimit-reset-{kind}"] = format_duration(bucket.reset_s())
    return headers


def request_tokens(body: Mapping[str, object], messages: Sequence[Mapping[str, object]]) -> int:
    """What a request counts against a tokens limit: its prompt (4 characters per token) plus the
    completion it may ask for (`max_tokens` / `max_completion_tokens`)."""
    prompt = sum(len(str(m.get("content", ""))) for m in messages) // 4
    asked = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    return prompt + (int(asked) if isinstance(asked, int | float | str) else 0)
