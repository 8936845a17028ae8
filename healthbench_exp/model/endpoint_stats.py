"""An endpoint's counters (`EndpointStats`): its calls paid, replayed from the response cache,
failed, refused and abandoned, its requests in flight and the tokens its replies used. Kept by
the endpoint (a batch judge counts into its endpoint's), summed into the run's usage
(`model.costs.usage_summary`) and written with the run (`tasks.base.RoleCounters`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from healthbench_exp.model.reply_json import tokens


@dataclass
class EndpointStats:
    requests: int = 0  # completed paid calls (the client's own HTTP retries not counted)
    cache_hits: int = 0  # calls answered from the response cache
    failures: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    rate_limited: int = 0  # HTTP 429 answers seen, retries included
    lowest_limit: int = 0  # the smallest in-flight limit the adaptive limiter went down to
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0  # prompt tokens the provider served from its prompt cache
    completion_tokens: int = 0  # reasoning tokens included
    reasoning_tokens: int = 0
    replayed_prompt_tokens: int = 0  # usage of the calls answered by the response cache
    replayed_completion_tokens: int = 0
    # requests sent and never answered, cancelled by a stop (a second Ctrl-C, the end of
    # `runner.stop_grace_s`, a fatal error): the endpoint may have done (and billed) the work;
    # their prompts' characters, for the estimate of their cost (`model.costs`)
    abandoned_in_flight: int = 0
    abandoned_prompt_chars: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    # the service tiers the provider reported having served the paid calls at, counted
    service_tiers: dict[str, int] = field(default_factory=dict)

    def count_abandoned(self, prompt_chars: int) -> None:
        """Count one request sent and never answered (cancelled), of `prompt_chars`."""
        self.abandoned_in_flight += 1
        self.abandoned_prompt_chars += prompt_chars

    def count_paid(
        self, usage: Mapping[str, object], service_tier: str | None = None
    ) -> tuple[int, int, int]:
        """Count one paid call with the `usage` (Chat Completions' shape) and the service tier
        its endpoint reported; return its (prompt, provider-cached prompt, completion) tokens."""
        if service_tier is not None:
            self.service_tiers[service_tier] = self.service_tiers.get(service_tier, 0) + 1
        prompt = tokens(usage, "prompt_tokens")
        cached = tokens(usage, "cached_tokens", "prompt_tokens_details")
        completion = tokens(usage, "completion_tokens")
        self.requests += 1
        self.prompt_tokens += prompt
        self.cached_prompt_tokens += cached
        self.completion_tokens += completion
        self.reasoning_tokens += tokens(usage, "reasoning_tokens", "completion_tokens_details")
        return prompt, cached, completion
