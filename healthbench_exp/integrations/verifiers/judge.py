"""The judge of the `verifiers` taskset: our model layer's `ChatEndpoint`, built inside the run.

The taskset's config carries the seed's judge arguments (`judge_model`, `judge_base_url`,
`judge_api_key`, `max_parallel_judges`) plus ours; `judge_endpoint` turns them into the same
endpoint the harness grades with (its HTTP retries, 429 pacing, adaptive concurrency and
clear errors for a bad key or model). The endpoint opens its `openai.AsyncOpenAI` client at the
first request, in the running event loop, and is closed by its caller: never at import time.
"""

from __future__ import annotations

import os
import re

import verifiers.v1 as vf
from pydantic import Field

from healthbench_exp.config.schema import REFERENCE_SYSTEM_MESSAGE, ConfigError
from healthbench_exp.config.schema import JudgeConfig as EndpointJudgeConfig
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.endpoint import ChatEndpoint, Shared, Transport
from healthbench_exp.model.health import Halt

REFERENCE_JUDGE = "gpt-4.1-2025-04-14"  # the reference grader (SPEC section 2)
KEY_ENV_VARS = ("JUDGE_API_KEY", "OPENAI_API_KEY")  # read in this order when no key is named
_ENV_VAR_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


class HealthBenchTaskConfig(vf.TaskConfig):
    """Each task's run-time knobs (`--env.taskset.task.*`): the judge and how its verdicts count,
    the seed's arguments first, then ours."""

    judge_model: str = REFERENCE_JUDGE
    """The grader model. Default: the reference grader (the seed defaulted to a cheaper one)."""
    judge_base_url: str | None = None
    """An OpenAI-compatible base URL (`.../v1`); None: OpenAI's API."""
    judge_api_key: str | None = Field(None, exclude=True)
    """An environment variable's name (e.g. `OPENAI_API_KEY`) or the key itself; None: the first
    of $JUDGE_API_KEY, $OPENAI_API_KEY that is set. Never written to saved configs."""
    max_parallel_judges: int = Field(48, ge=1)
    """Judge calls in flight per rollout (one rollout's criteria are graded concurrently)."""
    judge_temperature: float | None = 0.5
    """Not sent for a reasoning judge (`judge_reasoning_effort` set), as the reference."""
    judge_max_tokens: int | None = 2048
    judge_reasoning_effort: str | None = None
    """Sent as `reasoning_effort` (e.g. `low` for a gpt-5 grader); temperature and max_tokens
    are then not sent."""
    judge_system_message: str | None = REFERENCE_SYSTEM_MESSAGE
    """Prepended to every grader prompt, as the reference grader does; None: no system message."""
    max_parse_retries: int = Field(3, ge=0)
    """Resamples after an unparseable or empty verdict; then the criterion is ungraded (left out
    of the score, never counted as "not met")."""
    judge_max_retries: int = Field(4, ge=0)
    """HTTP retries per judge request (429, 5xx, timeouts)."""
    judge_timeout_s: float = Field(180.0, gt=0)
    length_penalty_per_500_chars: float | None = None
    """Also report `length_adjusted_score` (SPEC section 3); the reward stays the plain score."""
    length_center_chars: int = 2000


def resolve_judge_key(value: str | None, base_url: str | None) -> str:
    """The judge's API key: `value` names an environment variable (upper-case name) or is the key.

    With no value, the first of KEY_ENV_VARS that is set; a judge on a custom base URL may need
    none. A ConfigError names what to set when OpenAI's API would be called without a key.
    """
    if value is not None:
        if not _ENV_VAR_NAME.fullmatch(value):
            return value  # the key itself
        key = os.environ.get(value, "")
        if not key:
            raise ConfigError(
                f"judge_api_key={value!r} names an environment variable that is not set; "
                "export it, or pass the key itself"
            )
        return key
    for name in KEY_ENV_VARS:
        if os.environ.get(name):
            return os.environ[name]
    if base_url is None:
        raise ConfigError(
            f"the judge ({REFERENCE_JUDGE} unless judge_model says otherwise) is called on "
            f"OpenAI's API: set {' or '.join(KEY_ENV_VARS)}, or pass judge_api_key (an "
            "environment variable's name or the key), or judge_base_url for another endpoint"
        )
    return "no-key-needed"


def judge_base_url(value: str | None) -> str | None:
    """The base URL of `judge_base_url`; a full `.../chat/completions` URL (as the seed's README
    showed) is cut to its base, which the client appends the path to."""
    if value is None:
        return None
    return value.rstrip("/").removesuffix("/chat/completions")


def judge_endpoint(settings: HealthBenchTaskConfig) -> ChatEndpoint:
    """A fresh judge endpoint for one rollout; the caller closes it (`await endpoint.close()`)."""
    reasoning = settings.judge_reasoning_effort is not None
    base_url = judge_base_url(settings.judge_base_url)
    config = EndpointJudgeConfig(
        name=settings.judge_model,
        base_url=base_url,
        api_key_env=None,
        system_message=settings.judge_system_message,
        reasoning=reasoning,
        max_concurrency=settings.max_parallel_judges,
        extra_body={"reasoning_effort": settings.judge_reasoning_effort} if reasoning else {},
        temperature=settings.judge_temperature,
        max_tokens=settings.judge_max_tokens,
        max_parse_retries=settings.max_parse_retries,
    )
    return ChatEndpoint(
        "judge",
        config,
        base_url=base_url,
        api_key=resolve_judge_key(settings.judge_api_key, base_url),
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        transport=Transport(settings.judge_max_retries, settings.judge_timeout_s),
        shared=Shared(halt=Halt(), clock=SYSTEM_CLOCK),  # the judge's own run: its one clock
    )
