"""`dry_run=true`: what a run would cost, without sending a request.

The data is loaded and the calls counted exactly as a run would make them. Prompt tokens are
counted with tiktoken (`o200k_base`) when its encoding is available, otherwise approximated as 4
characters per token; each message adds 3 tokens and each request 3 more (OpenAI's chat
format). A reply that is not known yet is assumed to be `expected_completion_tokens` long (set
per model/judge option): it counts as the model's output and again inside each grader prompt.
Calls the response cache already holds are counted apart and cost nothing: every model call can
be looked up, and a judge call whenever its reply is known (cached, or given by physicians or a
file). One judge attempt per criterion is assumed, and the provider's own prompt caching, which
makes judge prompts cheaper, is not counted: the estimate errs high.

Where an endpoint's account limits are configured (`model.rate_limit.requests_per_minute` /
`tokens_per_minute`, the same under `judge`), they become the least time its calls can take:
the calls to pay over requests per minute, and their tokens over tokens per minute, counting
each call's prompt plus the completion it reserves (its `max_tokens` when one is sent, as
OpenAI counts it, else its expected length). The run takes at least the longest of these.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from healthbench_exp.config.schema import CacheConfig, JudgeConfig, RateLimitConfig
from healthbench_exp.engine.endpoints import Role
from healthbench_exp.grading.grader import grader_prompt, grader_template
from healthbench_exp.model.cache import RequestKeys, ResponseCache, cache_dir
from healthbench_exp.model.costs import BATCH_PRICE_FACTOR, cost_usd
from healthbench_exp.model.endpoint import messages_sent, request_body
from healthbench_exp.tasks.base import Task

TOKENS_PER_MESSAGE = 3
TOKENS_PER_REQUEST = 3
TIKTOKEN_LOAD_TIMEOUT_S = 20.0


def token_counter() -> tuple[Callable[[str], int], str]:
    """(count, description): tiktoken's o200k_base if it loads in time, else 4 chars/token.

    tiktoken downloads its encoding on first use; without network that can hang, so it is loaded
    in a background thread that is abandoned after TIKTOKEN_LOAD_TIMEOUT_S.
    """
    loaded: dict[str, Any] = {}

    def load() -> None:
        try:
            import tiktoken

            loaded["encoding"] = tiktoken.get_encoding("o200k_base")
        except Exception as exc:  # not installed, or no network for its first download
            loaded["error"] = exc

    thread = threading.Thread(target=load, name="tiktoken-load", daemon=True)
    thread.start()
    thread.join(TIKTOKEN_LOAD_TIMEOUT_S)
    encoding = loaded.get("encoding")
    if encoding is not None:
        return (lambda text: len(encoding.encode(text, disallowed_special=()))), (
            "tiktoken o200k_base"
        )
    return (lambda text: len(text) // 4), (
        "approximation: 4 characters per token (tiktoken's encoding could not be loaded)"
    )


@dataclass
class CallEstimate:
    calls: int = 0
    cached_calls: int = 0  # answered by the response cache: free
    prompt_tokens: int = 0  # of the calls still to pay
    completion_tokens: int = 0
    cost_usd: float | None = 0.0

    def add(self, cached: bool, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls += 1
        if cached:
            self.cached_calls += 1
        else:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens


class Estimator:
    """Counts calls and tokens the way the engine would make the calls (a task's `estimate`
    sees it as `tasks.base.CallCounter`). `roles`: both roles, `model` and `judge`."""

    def __init__(self, roles: dict[str, Role], judge: JudgeConfig, cache: CacheConfig) -> None:
        self.roles = roles
        self.judge = judge
        self.count, self.tokenizer = token_counter()
        self.cache = ResponseCache(cache_dir(cache.dir)) if cache.enabled else None
        template = grader_template()
        self.template_tokens = self.count(
            template.replace("<<conversation>>", "").replace("<<rubric_item>>", "")
        )
        # each role's cache keys, made as its endpoint makes them
        self.keys = {
            name: RequestKeys(
                role.identity, request_body(role.endpoint, role.temperature, role.max_tokens)
            )
            for name, role in roles.items()
        }
        self.usage = {role: CallEstimate() for role in ("model", "judge")}

    def sent(self, role: str, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """The messages `role`'s endpoint would send for `messages` (its system message added)."""
        return messages_sent(self.roles[role].endpoint, messages)

    def model_call(self, messages: list[dict[str, str]], cached: bool) -> None:
        """One model call sending `messages`; its reply assumed `expected_completion_tokens`."""
        self.usage["model"].add(
            cached,
            self.message_tokens(messages),
            self.roles["model"].endpoint.expected_completion_tokens,
        )

    def cached(self, role: str, messages: list[dict[str, str]], tag: str) -> str | None:
        """The cached reply to this call, if the response cache holds it."""
        if self.cache is None:
            return None
        reply = self.cache.get(self.keys[role](messages, tag))
        return None if reply is None else reply.text

    def message_tokens(self, messages: list[dict[str, str]]) -> int:
        return TOKENS_PER_REQUEST + sum(
            TOKENS_PER_MESSAGE + self.count(m["content"]) for m in messages
        )

    def judge_calls(self, conversation: str, reply_tokens: int, rubric_items: list[str],
                    known: bool, rollout: int) -> None:  # fmt: skip
        """The judge calls on one conversation; `known`: the conversation holds the real reply
        (its calls can be looked up in the cache), else the reply's `reply_tokens` are added."""
        judge = self.judge
        order = judge.prompt_order.value
        system = 0 if judge.system_message is None else self.count(judge.system_message)
        base = (
            TOKENS_PER_REQUEST
            + TOKENS_PER_MESSAGE * (1 if judge.system_message is None else 2)
            + system
            + self.template_tokens
            + self.count(conversation)
            + reply_tokens
        )
        for item in rubric_items:
            cached = False
            if known:
                messages = self.sent(
                    "judge",
                    [{"role": "user", "content": grader_prompt(conversation, item, order)}],
                )
                cached = self.cached("judge", messages, f"rollout={rollout};attempt=0") is not None
            self.usage["judge"].add(
                cached, base + self.count(item), judge.expected_completion_tokens
            )

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def limited_duration(
    usage: CallEstimate, reserved_tokens: int, limits: RateLimitConfig
) -> dict[str, Any] | None:
    """The least seconds `usage`'s paid calls take under `limits`, and why (None: no limits);
    each call counts its prompt plus `reserved_tokens` against a tokens limit."""
    paid = usage.calls - usage.cached_calls
    tokens = usage.prompt_tokens + paid * reserved_tokens
    bounds = {}
    if limits.requests_per_minute:
        bounds["requests"] = 60.0 * paid / limits.requests_per_minute
    if limits.tokens_per_minute:
        bounds["tokens"] = 60.0 * tokens / limits.tokens_per_minute
    if not bounds:
        return None
    return {
        "seconds": max(bounds.values()),
        "requests": paid,
        "tokens": tokens,
        "requests_per_minute": limits.requests_per_minute,
        "tokens_per_minute": limits.tokens_per_minute,
    }


def expected_durations(
    needed: dict[str, Role], usage: dict[str, CallEstimate]
) -> dict[str, Any] | None:
    """Per needed role with configured limits, `limited_duration`; `seconds`: the longest."""
    durations: dict[str, Any] = {}
    for name, role in needed.items():
        endpoint = role.endpoint
        sent_max = request_body(endpoint, role.temperature, role.max_tokens).get("max_tokens")
        reserved = sent_max or endpoint.expected_completion_tokens
        duration = limited_duration(usage[name], reserved, endpoint.rate_limit)
        if duration is not None:
            durations[name] = duration
    if not durations:
        return None
    return {**durations, "seconds": max(d["seconds"] for d in durations.values())}


def estimate_run(
    task: Task[Any, Any],
    roles: dict[str, Role],
    needed: tuple[str, ...],
    judge: JudgeConfig,
    cache: CacheConfig,
) -> dict[str, Any]:
    """The estimate of one job: calls, cached calls, tokens and dollars per endpoint.

    `roles`: both roles (`model`, `judge`); `needed`: the roles the run talks to."""
    estimator = Estimator(roles, judge, cache)
    try:
        rows = task.estimate(estimator)
    finally:
        estimator.close()
    total: float | None = 0.0
    for role, usage in estimator.usage.items():
        if role in needed:
            usage.cost_usd = cost_usd(
                roles[role].endpoint.price, usage.prompt_tokens, 0, usage.completion_tokens
            )
            if usage.cost_usd is not None and role == "judge" and judge.batch:
                usage.cost_usd *= BATCH_PRICE_FACTOR
        total = None if total is None or usage.cost_usd is None else total + usage.cost_usd
    return {
        "task": task.kind,
        "rows": rows,
        "model": asdict(estimator.usage["model"]),
        "judge": asdict(estimator.usage["judge"]),
        "total_cost_usd": total,
        "rate_limited_duration": expected_durations(
            {name: roles[name] for name in needed}, estimator.usage
        ),
        "assumptions": {
            "tokenizer": estimator.tokenizer,
            "model_expected_completion_tokens": roles["model"].endpoint.expected_completion_tokens,
            "judge_expected_completion_tokens": judge.expected_completion_tokens,
            "judge_attempts_per_criterion": 1,
            "provider_prompt_caching": "not counted (real judge prompts cost less)",
        },
    }


def minutes(seconds: float) -> str:
    """ "42 s", "5.3 min" or "2.1 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def format_estimate(estimate: dict[str, Any], output_dir: Path) -> str:
    def dollars(value: float | None) -> str:
        return "unknown (no price configured)" if value is None else f"${value:.4f}"

    probed = estimate.get("rate_limits_probed")
    sent = (
        f"one request to the {' and '.join(probed)} endpoint to read its rate limits"
        if probed
        else "nothing"
    )
    lines = ["", f"Dry run: {sent} was sent ({estimate['rows']} rows)"]
    for role in ("model", "judge"):
        e = estimate[role]
        if not e["calls"]:
            continue
        lines.append(
            f"  {role:<5} {e['calls']} calls ({e['cached_calls']} already in the response cache): "
            f"~{e['prompt_tokens']} prompt + ~{e['completion_tokens']} completion tokens to pay, "
            f"{dollars(e['cost_usd'])}"
        )
    lines.append(f"  estimated cost {dollars(estimate['total_cost_usd'])}")
    durations = estimate.get("rate_limited_duration")
    if durations:
        for role in ("model", "judge"):
            if role in durations:
                d = durations[role]
                limits = [
                    f"{d['requests']} requests at {d['requests_per_minute']:,.0f}/min"
                    if d["requests_per_minute"]
                    else "",
                    f"~{d['tokens']:,} tokens at {d['tokens_per_minute']:,.0f}/min"
                    if d["tokens_per_minute"]
                    else "",
                ]
                lines.append(
                    f"  {role:<5} rate limits: at least {minutes(d['seconds'])} "
                    f"({'; '.join(filter(None, limits))})"
                )
        lines.append(
            f"  expected duration at the known rate limits: at least "
            f"{minutes(durations['seconds'])}"
        )
    assumptions = estimate["assumptions"]
    lines.append(
        f"  ({assumptions['tokenizer']}; replies assumed "
        f"{assumptions['model_expected_completion_tokens']} tokens, verdicts "
        f"{assumptions['judge_expected_completion_tokens']}; provider prompt caching not counted)"
    )
    lines.append(f"  written to {output_dir / 'estimate.json'}")
    return "\n".join(lines)
