"""The valid range of every numeric option, checked before any request.

The schema types each option (an int stays an int), but it accepts `nan`, `inf` and numbers no
endpoint or loop can use (`sampling.max_tokens=-5`, `runner.connect_timeout_s=-1`). `out_of_range`
lists every option outside its range, each with the range, so one error names them all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Range:
    """`low`..`high` (None: unbounded), each end inclusive unless said; `nullable`: null valid."""

    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True
    nullable: bool = False

    def allows(self, value: object) -> bool:
        if value is None:
            return self.nullable
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if not math.isfinite(value):
            return False
        if self.low is not None and (
            value < self.low or (value == self.low and not self.low_inclusive)
        ):
            return False
        return (
            self.high is None or value < self.high or (value == self.high and self.high_inclusive)
        )

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            left = "[" if self.low_inclusive else "("
            right = "]" if self.high_inclusive else ")"
            text = f"in {left}{self.low:g}, {self.high:g}{right}"
        elif self.low is not None:
            text = f"{'>=' if self.low_inclusive else '>'} {self.low:g}"
        elif self.high is not None:
            text = f"{'<=' if self.high_inclusive else '<'} {self.high:g}"
        else:
            text = "a finite number"
        return text + (" or null" if self.nullable else "")


AT_LEAST_1 = Range(1)
AT_LEAST_0 = Range(0)
POSITIVE = Range(0, low_inclusive=False)
SHARE = Range(0, 1)
TEMPERATURE = Range(0, 2, nullable=True)  # OpenAI's chat-completions range; null: not sent
SECONDS = Range(0, low_inclusive=False)  # 0 would mean no timeout, a negative one dooms requests
PRICE = Range(0, nullable=True)  # US dollars per million tokens; null: unknown

_ENDPOINT = {
    "max_concurrency": AT_LEAST_1,
    "expected_completion_tokens": AT_LEAST_0,
    "price.input_per_mtok": PRICE,
    "price.cached_input_per_mtok": PRICE,
    "price.output_per_mtok": PRICE,
    "rate_limit.requests_per_minute": Range(0, low_inclusive=False, nullable=True),
    "rate_limit.tokens_per_minute": Range(0, low_inclusive=False, nullable=True),
    "serve.ready_timeout_s": SECONDS,
}

NUMERIC_RANGES: dict[str, Range] = {
    **{f"model.{key}": valid for key, valid in _ENDPOINT.items()},
    **{f"judge.{key}": valid for key, valid in _ENDPOINT.items()},
    "judge.temperature": TEMPERATURE,
    "judge.max_tokens": Range(1, nullable=True),
    "judge.max_parse_retries": AT_LEAST_0,
    "judge.early_stop_unparseable": AT_LEAST_0,
    "judge.batch_poll_s": POSITIVE,
    "sampling.temperature": TEMPERATURE,
    "sampling.max_tokens": Range(1, nullable=True),
    "sampling.num_examples": Range(1, nullable=True),
    "dataset.official_rows": Range(1, nullable=True),  # the count a full set must have
    "sampling.rollouts_per_example": AT_LEAST_1,
    "runner.max_concurrent": AT_LEAST_1,
    "runner.max_parallel_judges": AT_LEAST_1,
    "runner.max_in_flight": Range(1, nullable=True),
    "runner.max_retries": AT_LEAST_0,
    "runner.request_timeout_s": SECONDS,
    "runner.reasoning_request_timeout_s": SECONDS,
    "runner.connect_timeout_s": SECONDS,
    "runner.stall_notice_s": SECONDS,
    "runner.dead_endpoint_calls": AT_LEAST_0,
    "runner.dead_endpoint_s": AT_LEAST_0,
    "runner.stop_grace_s": AT_LEAST_0,
    "runner.bootstrap_samples": AT_LEAST_1,
    "runner.max_failure_fraction": SHARE,
    "budget.max_usd": Range(0, low_inclusive=False, nullable=True),
    "budget.max_usd_per_job": Range(0, low_inclusive=False, nullable=True),
    "scoring.length_penalty_per_500_chars": Range(nullable=True),
    "scoring.length_center_chars": AT_LEAST_0,
    "offline_server.latency_ms": AT_LEAST_0,
    "offline_server.jitter_ms": AT_LEAST_0,
    "offline_server.error_rate": SHARE,
    "offline_server.error_retry_after_ms": AT_LEAST_0,
    "offline_server.malformed_rate": SHARE,
    "offline_server.empty_reply_rate": SHARE,
    "offline_server.fenced_rate": SHARE,
    "offline_server.judge_empty_rate": SHARE,
    "offline_server.judge_error_rate": SHARE,
    "offline_server.batch_delay_s": AT_LEAST_0,
    "offline_server.reply_tokens": AT_LEAST_0,
    "offline_server.verdict_tokens": AT_LEAST_0,
    "dry_run.pilot": AT_LEAST_0,
    "offline_server.rate_limit_requests": AT_LEAST_0,
    "offline_server.rate_limit_tokens": AT_LEAST_0,
    "offline_server.rate_limit_window_s": POSITIVE,
}


def _value(config: object, key: str) -> object:
    for part in key.split("."):
        config = getattr(config, part)
    return config


def out_of_range(config: object) -> list[str]:
    """`key must be <range>, got <value>` for every option of `NUMERIC_RANGES` outside it."""
    problems = []
    for key, valid in NUMERIC_RANGES.items():
        value = _value(config, key)
        if not valid.allows(value):
            described = valid.describe()
            non_finite = isinstance(value, float) and not math.isfinite(value)
            if non_finite and not described.startswith("a finite number"):
                described = "a finite number " + described  # nan or inf: say why it is refused
            problems.append(f"{key} must be {described}, got {value}")
    return problems


def judge_flip_rates(text: str, key: str = "offline_server.judge_flip_rates") -> dict[str, float]:
    """`offline_server.judge_flip_rates` (`"model=rate,..."`) as a mapping: each named judge's
    share of verdicts flipped from the built-in endpoint's base verdict (`key`: the option read,
    `offline_server.judge_lenient_rates` has the same form). ValueError (one line, naming the
    entry) for an entry that is not `<judge model name>=<rate in [0, 1]>`."""
    rates = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = entry.rpartition("=")
        try:
            rate = float(value)
        except ValueError:
            rate = math.nan
        if not sep or not name.strip() or not 0.0 <= rate <= 1.0:  # nan fails the range too
            raise ValueError(f"{key}: {entry!r} is not <judge model name>=<rate from 0 to 1>")
        rates[name.strip()] = rate
    return rates


def model_strengths(text: str) -> dict[str, tuple[float, float]]:
    """`offline_server.model_strengths` (`"model=pos:neg,..."`, or `model=share` for both) as
    a mapping: each named model's share of positive criteria its base verdicts meet and of
    negative ones they avoid. ValueError (one line, naming the entry) for an entry that is not
    `<model name>=<share>[:<share>]`, each share from 0 to 1."""
    out = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = entry.rpartition("=")
        positive, _, negative = value.partition(":")
        try:
            shares = (float(positive), float(negative or positive))
        except ValueError:
            shares = (math.nan, math.nan)
        if not sep or not name.strip() or not all(0.0 <= s <= 1.0 for s in shares):
            raise ValueError(
                f"offline_server.model_strengths: {entry!r} is not <model name>=<share of "
                "positive criteria met>[:<share of negative criteria avoided>], each from 0 to 1"
            )
        out[name.strip()] = shares
    return out


def rate_limit_schedule(text: str) -> list[tuple[float, float]]:
    """`offline_server.rate_limit_schedule` (`"T:S,..."`): (from T seconds after a model's first
    request on, the share S of its limits' refill that the account's other jobs spend), by T.
    ValueError (one line, naming the key and the entry) for an entry that is not `T:S` with T a
    finite number of seconds from 0 and 0 <= S < 1."""
    steps = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        at_text, sep, share_text = entry.partition(":")
        try:
            at, share = float(at_text), float(share_text)
        except ValueError:
            at = share = math.nan
        if not sep or not (math.isfinite(at) and at >= 0.0) or not 0.0 <= share < 1.0:
            raise ValueError(
                f"offline_server.rate_limit_schedule: {entry!r} is not T:S (from T >= 0 seconds "
                "on, the account's other jobs spend share S of the refill, 0 <= S < 1)"
            )
        steps.append((at, share))
    return sorted(steps)
