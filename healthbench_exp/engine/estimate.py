"""`dry_run=true`: what a run would cost, without sending a request (but a pilot's).

The data is loaded and the calls counted exactly as a run would make them (`Estimator`, the
tasks' `CallCounter`); calls the response cache already holds are counted apart and cost
nothing: every model call can be looked up, and a judge call whenever its reply is known
(cached, or given by physicians or a file). Those it finds are also measured, grouped by row.
The calls still to pay are then priced per role from their prompts' characters (and tokenizer
tokens) and the role's `engine.rates.Rates`: measured by a pilot (`dry_run.pilot=N`, which ran
the first N rows just before, see `engine.pilot`), else by the cache's history of the same
profile (model name and length-changing settings; at least `HISTORY_MIN_REPLIES` replies), else
assumed (`expected_completion_tokens`; prompt tokens counted with tiktoken's `o200k_base` when
its encoding is available, otherwise as 4 characters per token, each message adding 3 tokens and
each request 3 more; no reasoning, no provider prompt caching). A reply not known yet counts as
the model's output and again inside each of its grader prompts. One judge attempt per criterion
is assumed. After a pilot the cost has a 95% interval (`engine.rates.bootstrap_interval`).
Known account rate limits become the least time the calls take (`engine.durations`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TypeVar

from healthbench_exp.config.schema import CacheConfig, JudgeConfig
from healthbench_exp.engine.durations import expected_durations
from healthbench_exp.engine.pilot import PilotRecord
from healthbench_exp.engine.prompt_tokens import (
    TOKENS_PER_MESSAGE,
    TOKENS_PER_REQUEST,
    token_counter,
)
from healthbench_exp.engine.rates import (
    Rates,
    RoleWork,
    Sample,
    TokenUsage,
    assumed,
    bootstrap_interval,
    from_history,
    from_replies,
)
from healthbench_exp.grading.grader import grader_prompt, grader_template
from healthbench_exp.model.cache import (
    HISTORY_MIN_REPLIES,
    CachedReply,
    Profile,
    RequestKeys,
    ResponseCache,
    cache_dir,
    profile_history,
    prompt_chars,
)
from healthbench_exp.model.costs import unknown_tier
from healthbench_exp.model.endpoint import messages_sent
from healthbench_exp.model.roles import Role, Roles
from healthbench_exp.model.wire import cache_params, request_body
from healthbench_exp.tasks.base import Task

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass
class CallEstimate:
    """One role's calls: all of them, those the response cache answers (free), and the tokens
    and dollars of the rest."""

    calls: int = 0
    cached_calls: int = 0  # answered by the response cache: free
    prompt_tokens: int = 0  # of the calls still to pay
    cached_prompt_tokens: int = 0  # of those, what the provider's prompt cache serves
    completion_tokens: int = 0  # reasoning included
    reasoning_tokens: int = 0
    cost_usd: float | None = 0.0
    cost_note: str | None = None  # its service tier has no known price (`model.costs`)


class Estimator:
    """Counts calls and prompt sizes the way the engine would make the calls (a task's
    `estimate` sees it as `tasks.base.CallCounter`); the calls the response cache answers are
    free and, grouped by row, measured (`sample`: what a pilot sent). `roles`: both roles."""

    def __init__(self, roles: dict[str, Role], judge: JudgeConfig, cache: CacheConfig) -> None:
        self.roles = roles
        self.judge = judge
        self.count, self.tokenizer = token_counter()
        self.cache = (
            ResponseCache(cache_dir(cache.dir), record_run=False) if cache.enabled else None
        )
        template = grader_template().replace("<<conversation>>", "").replace("<<rubric_item>>", "")
        self.template_tokens = self.count(template)
        self.template_chars = len(template)
        bodies = {  # the API is part of the key, as the endpoint makes it
            name: cache_params(
                role.endpoint.api, request_body(role.endpoint, role.temperature, role.max_tokens)
            )
            for name, role in roles.items()
        }
        # each role's cache keys and profile, made as its endpoint makes them
        self.keys = {name: RequestKeys(role.identity, bodies[name]) for name, role in roles.items()}
        self.profiles = {
            name: Profile.of(name, role.identity, bodies[name], role.endpoint.system_message)
            for name, role in roles.items()
        }
        self.usage = {role: CallEstimate() for role in roles}
        self.work = {role: RoleWork() for role in roles}
        self.judges = [name for name in roles if name != "model"]  # the judge, then the jury
        self.sample = Sample()
        self.row: dict[str, list[CachedReply]] = {role: [] for role in roles}

    def sent(self, role: str, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """The messages `role`'s endpoint would send for `messages` (its system message added)."""
        return messages_sent(self.roles[role].endpoint, messages)

    def model_call(self, messages: list[dict[str, str]], cached: bool) -> None:
        """One model call sending `messages` (free when `cached`)."""
        self.usage["model"].calls += 1
        if cached:
            self.usage["model"].cached_calls += 1
            return
        work = self.work["model"]
        work.calls += 1
        work.chars += prompt_chars(messages)
        work.counted_tokens += self.message_tokens(messages)

    def cached(self, role: str, messages: list[dict[str, str]], tag: str) -> str | None:
        """The cached reply to this call, if the response cache holds it (then measured)."""
        reply = self.lookup(role, messages, tag)
        return None if reply is None else reply.text

    def lookup(self, role: str, messages: list[dict[str, str]], tag: str) -> CachedReply | None:
        if self.cache is None:
            return None
        reply = self.cache.get(self.keys[role](messages, tag))
        if reply is not None:
            self.row[role].append(reply)
        return reply

    def message_tokens(self, messages: list[dict[str, str]]) -> int:
        return TOKENS_PER_REQUEST + sum(
            TOKENS_PER_MESSAGE + self.count(m["content"]) for m in messages
        )

    def judge_calls(self, conversation: str, reply_tokens: int, rubric_items: list[str],
                    known: bool, rollout: int) -> None:  # fmt: skip
        """The judge calls on one row's conversation, which ends the row. `known`: the
        conversation holds the real reply (its calls can be looked up in the cache); else its
        reply is not known yet and is added to each prompt at the length of the model's rates
        (measured, or assumed: `expected_completion_tokens`, what the task passes as
        `reply_tokens`, which is therefore not read here)."""
        order = self.judge.prompt_order.value  # every judge is sent the judge's layout
        conversation_tokens = self.count(conversation)
        for name in self.judges:  # the judge, and each further judge of a jury
            system = self.roles[name].endpoint.system_message
            base_tokens = (
                TOKENS_PER_REQUEST
                + TOKENS_PER_MESSAGE * (1 if system is None else 2)
                + (self.count(system) if system else 0)
                + self.template_tokens
                + conversation_tokens
            )
            base_chars = len(system or "") + self.template_chars + len(conversation)
            work, usage = self.work[name], self.usage[name]
            for item in rubric_items:
                usage.calls += 1
                if known:
                    messages = self.sent(
                        name,
                        [{"role": "user", "content": grader_prompt(conversation, item, order)}],
                    )
                    if self.lookup(name, messages, f"rollout={rollout};attempt=0") is not None:
                        usage.cached_calls += 1
                        continue
                work.calls += 1
                work.chars += base_chars + len(item)
                work.counted_tokens += base_tokens + self.count(item)
                work.unknown_replies += 0 if known else 1
        self.sample.add(self.row)
        self.row = {role: [] for role in self.roles}

    def rates(self, role: str, expected_completion_tokens: int, pilot: bool) -> Rates:
        """`role`'s rates: measured by the pilot (when one ran and measured the role), else by
        the cache's history of its profile (at least HISTORY_MIN_REPLIES replies), else assumed;
        `replies` of an assumed one: the replies history has (too few)."""
        if pilot:
            measured = from_replies(self.sample.replies(role, self.sample.rows), "pilot")
            if measured is not None:
                return measured
        found = None if self.cache is None else profile_history(self.cache.db, self.profiles[role])
        if found is not None and found.replies >= HISTORY_MIN_REPLIES:
            return from_history(found)
        return replace(assumed(expected_completion_tokens), replies=found.replies if found else 0)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


def estimate_run(
    task: Task[Item, Result],
    run_roles: Roles,
    judge: JudgeConfig,
    cache: CacheConfig,
    pilot: PilotRecord | None = None,
) -> dict[str, object]:
    """The estimate of one job: calls, cached calls, tokens and dollars per endpoint, the rates
    used and where they come from, and (after a pilot, whose `pilot` record is kept) the cost's
    interval, for the roles the run talks to (the model's rates also price unknown replies)."""
    roles, needed = run_roles.every, tuple(run_roles.needed)
    estimator = Estimator(roles, judge, cache)
    try:
        rows = task.estimate(estimator)
        rates = {
            role: estimator.rates(
                role, roles[role].endpoint.expected_completion_tokens, pilot is not None
            )
            for role in roles
        }
    finally:
        estimator.close()

    def priced(role: str, role_rates: Rates, model_rates: Rates) -> tuple[TokenUsage, float | None]:
        tokens = estimator.work[role].usage(role_rates, model_rates)
        endpoint = roles[role].endpoint
        return tokens, tokens.cost(endpoint.price, roles[role].batch, endpoint.service_tier)

    total: float | None = 0.0
    for role, usage in estimator.usage.items():
        tokens, cost = priced(role, rates[role], rates["model"])
        usage.prompt_tokens, usage.cached_prompt_tokens = tokens.input, tokens.cached_input
        usage.completion_tokens, usage.reasoning_tokens = tokens.output, tokens.reasoning
        usage.cost_usd = cost if role in needed else 0.0
        batch = roles[role].batch  # a batch sends no tier
        usage.cost_note = (
            unknown_tier(roles[role].endpoint) if role in needed and not batch else None
        )
        total = None if total is None or usage.cost_usd is None else total + usage.cost_usd

    def total_at(measured: dict[str, Rates | None]) -> float | None:
        at = {role: measured.get(role) or rates[role] for role in rates}
        costs = [priced(role, at[role], at["model"])[1] for role in needed]
        return None if None in costs else sum(c for c in costs if c is not None)

    rows_left = rows - len(estimator.sample.rows)  # the rows the pilot did not answer
    interval = (
        None if pilot is None else bootstrap_interval(estimator.sample, total, total_at, rows_left)
    )
    return {
        "task": task.kind,
        "rows": rows,
        "model": asdict(estimator.usage["model"]),
        "judge": asdict(estimator.usage["judge"]),
        **(
            {"jury": {role.name: asdict(estimator.usage[role.name]) for role in run_roles.jury}}
            if run_roles.jury
            else {}
        ),
        "total_cost_usd": total,
        "interval": None if interval is None else asdict(interval),
        "pilot": pilot,
        "rates": {role: asdict(rates[role]) for role in needed},
        "rate_limited_duration": expected_durations(run_roles.needed, estimator.usage),
        # the roles sent through the Batch API (no per-minute limits, half price already)
        "batched_roles": [name for name in needed if roles[name].batch],
        # the rows whose replies the cache holds (a pilot's, and earlier runs'): what a pilot's
        # rates and interval are measured on
        "measured_rows": len(estimator.sample.rows),
        "assumptions": {
            "tokenizer": estimator.tokenizer,
            "history_min_replies": HISTORY_MIN_REPLIES,
            "model_expected_completion_tokens": roles["model"].endpoint.expected_completion_tokens,
            "judge_expected_completion_tokens": judge.expected_completion_tokens,
            "judge_attempts_per_criterion": 1,
        },
    }
