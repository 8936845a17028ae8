"""`dry_run=true` with `<role>.rate_limit.probe=true`: read the account's limits from one request.

OpenAI reports an account's limits on every reply (`x-ratelimit-limit-requests`,
`x-ratelimit-limit-tokens`, both per minute). With `probe` on, a dry run sends each such role
one minimal request (a one-word prompt, one completion token, or through the Responses API
(`api: responses`) the least reply it allows, 16 tokens: a fraction of a cent) and takes
the limits it does not have configured from those headers; the estimate then includes the time
the calls take at those limits. Without `probe` a dry run sends nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from healthbench_exp.config.schema import Api, EndpointConfig, RateLimitConfig
from healthbench_exp.core.endpoint_errors import FatalEndpointError
from healthbench_exp.model.access import resolve_api_key

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionUserMessageParam

PROBE_TEXT = "Reply with OK."
PROBE_MESSAGES: list[ChatCompletionUserMessageParam] = [{"role": "user", "content": PROBE_TEXT}]
RESPONSES_LEAST_OUTPUT = 16  # the Responses API refuses a max_output_tokens below 16


def limits_from_headers(headers: Mapping[str, str]) -> RateLimitConfig:
    """The per-minute limits in `x-ratelimit-limit-*` (None where absent or unreadable)."""

    def number(name: str) -> float | None:
        try:
            value = float(headers.get(name, ""))
        except ValueError:
            return None
        return value if value > 0 else None

    return RateLimitConfig(
        requests_per_minute=number("x-ratelimit-limit-requests"),
        tokens_per_minute=number("x-ratelimit-limit-tokens"),
    )


async def probe_headers(
    endpoint: EndpointConfig, base_url: str | None, api_key: str, timeout_s: float
) -> Mapping[str, str]:
    """The headers of one minimal request to `endpoint`, through its API."""
    import openai

    async with openai.AsyncOpenAI(
        api_key=api_key, base_url=base_url, max_retries=2, timeout=timeout_s
    ) as client:
        create = client.chat.completions.with_raw_response.create
        try:
            if endpoint.api is Api.responses:
                response = await client.responses.with_raw_response.create(
                    model=endpoint.name, input=PROBE_TEXT, max_output_tokens=RESPONSES_LEAST_OUTPUT
                )
                return response.headers
            if endpoint.reasoning:  # one completion token, under the name the model takes
                raw = await create(
                    model=endpoint.name, messages=PROBE_MESSAGES, max_completion_tokens=1
                )
            else:
                raw = await create(model=endpoint.name, messages=PROBE_MESSAGES, max_tokens=1)
        except openai.APIError as exc:
            raise FatalEndpointError(
                f"rate_limit.probe: the request to read the limits failed ({exc}); "
                "set the limits by hand or drop probe"
            ) from exc
    return raw.headers


def with_probed_limits(
    endpoints: Mapping[str, EndpointConfig], urls: Mapping[str, str | None], timeout_s: float
) -> dict[str, EndpointConfig]:
    """`endpoints` (by role), each probed one with its unset limits filled from its endpoint's
    headers (`urls[role]`; each probe request times out after `timeout_s`)."""
    probed = {}
    for role, endpoint in endpoints.items():
        if not endpoint.rate_limit.probe:
            probed[role] = endpoint
            continue
        key = resolve_api_key(role, endpoint)
        headers = asyncio.run(probe_headers(endpoint, urls[role], key, timeout_s))
        found = limits_from_headers(headers)
        limits = dataclasses.replace(
            endpoint.rate_limit,
            requests_per_minute=endpoint.rate_limit.requests_per_minute
            or found.requests_per_minute,
            tokens_per_minute=endpoint.rate_limit.tokens_per_minute or found.tokens_per_minute,
        )
        probed[role] = dataclasses.replace(endpoint, rate_limit=limits)
    return probed
