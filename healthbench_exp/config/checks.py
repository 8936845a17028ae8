"""Cross-field checks of a composed `Config`: what the dataclass schema cannot express.

`validate` runs once, before anything is loaded or sent; `needed_roles` says which endpoints a
run talks to (and so which keys, prices and addresses must exist).
"""

from __future__ import annotations

from healthbench_exp.config.ranges import (
    judge_flip_rates,
    model_strengths,
    out_of_range,
    rate_limit_schedule,
)
from healthbench_exp.config.schema import (
    PROFESSIONAL,
    REASONING_EFFORTS,
    SERVICE_TIERS,
    CompletionsConfig,
    CompletionSource,
    Config,
    ConfigError,
    EndpointConfig,
    ServeKind,
    TaskKind,
)


def validate(config: Config) -> None:
    """Checks the schema cannot express (ranges, combinations); raises ConfigError.

    Every numeric option out of its range (`config.ranges.NUMERIC_RANGES`: nan and inf never
    valid) is named in one error, with its valid range.
    """
    bad = out_of_range(config)
    for role in ("model", "judge"):
        effort = getattr(config, role).reasoning_effort
        if effort is not None and effort not in REASONING_EFFORTS:
            bad.append(
                f"{role}.reasoning_effort must be one of {', '.join(REASONING_EFFORTS)} "
                f"(or null: not sent), got {effort!r}"
            )
        tier = getattr(config, role).service_tier
        if tier is not None and tier not in SERVICE_TIERS:
            bad.append(
                f"{role}.service_tier must be one of {', '.join(SERVICE_TIERS)} "
                f"(or null: not sent), got {tier!r}"
            )
    try:
        judge_flip_rates(config.offline_server.judge_flip_rates)
        judge_flip_rates(
            config.offline_server.judge_lenient_rates, "offline_server.judge_lenient_rates"
        )
        model_strengths(config.offline_server.model_strengths)
    except ValueError as error:
        bad.append(str(error))
    try:  # named with the others, not after them
        rate_limit_schedule(config.offline_server.rate_limit_schedule)
    except ValueError as error:
        bad.append(str(error))
    if config.offline_server.limited_role not in ("all", "model", "judge"):
        bad.append(
            "offline_server.limited_role must be all, model or judge, "
            f"got {config.offline_server.limited_role!r}"
        )
    if bad:
        raise ConfigError("; ".join(bad))
    completions = config.completions
    physician_modes = (CompletionSource.physician, CompletionSource.physician_references)
    if completions.source in physician_modes and config.dataset.difficulty == PROFESSIONAL:
        check_professional_physician(completions)
    elif completions.source in physician_modes:
        valid = (2, 3) if completions.source is CompletionSource.physician_references else (1, 2, 3)
        if completions.group not in valid:
            raise ConfigError(
                f"completions={completions.source.value} needs completions.group="
                f"{' or '.join(map(str, valid))}, got {completions.group}"
                + (" (Group 1 has no reference completions)" if completions.group == 1 else "")
                + "; HealthBench Professional data: difficulty=professional, no group"
            )
    if completions.source is CompletionSource.file and not completions.path:
        raise ConfigError(
            "completions=file needs completions.path=<JSONL of prompt_id, completion>"
        )
    if config.task.kind is TaskKind.meta_eval and completions.source is not CompletionSource.model:
        raise ConfigError(
            "task=meta_eval grades the completions in the meta-eval file; "
            f"drop completions={completions.source.value}"
        )
    check_jury(config)
    judges = {"judge": config.judge, **{f"jury member {m.name}": m for m in config.jury_members}}
    cap = "budget.max_usd" if config.budget.max_usd is not None else "budget.max_usd_per_job"
    if any(judge.batch for judge in judges.values()) and config.budget.capped():
        raise ConfigError(
            f"{cap} cannot cap judge.batch=true (a batch is paid as a whole); "
            "use dry_run=true to see the cost first"
        )
    endpoints: dict[str, EndpointConfig] = {
        **{role: getattr(config, role) for role in needed_roles(config)},
        **{m.name: m for m in config.jury_members},
    }
    if config.budget.capped():
        unpriced = [
            role
            for role, endpoint in endpoints.items()
            if endpoint.price.input_per_mtok is None or endpoint.price.output_per_mtok is None
        ]
        if unpriced:
            raise ConfigError(
                f"{cap} needs prices for "
                + " and ".join(unpriced)
                + ": set "
                + ", ".join(
                    f"{r}.price.input_per_mtok and {r}.price.output_per_mtok" for r in unpriced
                )
            )
        untiered = [
            f"{role}.service_tier={endpoint.service_tier}"
            for role, endpoint in endpoints.items()
            if endpoint.service_tier not in (None, "default", *endpoint.price.tiers)
        ]
        if untiered:
            raise ConfigError(
                f"{cap} needs each tier's price: "
                + ", ".join(untiered)
                + " has no known price (set <role>.price.tiers.<tier>, its price as a "
                "multiple of the standard one)"
            )
    for role, endpoint in endpoints.items():
        if not endpoint.builtin and endpoint.base_url == "":
            raise ConfigError(f"{role}.base_url is empty; use null for OpenAI's API")
        if endpoint.builtin and endpoint.serve.kind is not ServeKind.none:
            raise ConfigError(
                f"{role}.builtin=true (the built-in endpoint) and {role}.serve.kind="
                f"{endpoint.serve.kind.value} exclude each other: choose "
                f"{role}={endpoint.serve.kind.value} {role}.name=<model> to serve a model"
            )


def check_jury(config: Config) -> None:
    """A jury (SPEC 7.1) grades an eval or a meta-eval (each member's figures); its members are
    named by their model names, which must differ from each other and from the primary judge's."""
    if not config.jury_members:
        return
    names = [config.judge.name, *(m.name for m in config.jury_members)]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice or {"model", "judge"} & set(names):
        raise ConfigError(
            f"jury members are named by their model names, which must differ from each other "
            f"and from the judge's ({config.judge.name}): {', '.join(twice or names)} "
            "named twice (or reserved); choose other presets"
        )


def check_professional_physician(completions: CompletionsConfig) -> None:
    """ConfigError unless the physician mode fits HealthBench Professional data: `physician`
    (each row's physician_response) without a group."""
    if completions.source is CompletionSource.physician_references:
        raise ConfigError(
            "HealthBench Professional has no reference completions; "
            "completions=physician grades each row's physician_response"
        )
    if completions.group is not None:
        raise ConfigError(
            f"completions.group={completions.group}: HealthBench Professional has no physician "
            "groups; drop completions.group (completions=physician grades each row's "
            "physician_response)"
        )


def needed_roles(config: Config) -> tuple[str, ...]:
    """The endpoints a run talks to: the judge always, the model only when it samples replies."""
    samples = (
        config.task.kind is TaskKind.eval and config.completions.source is CompletionSource.model
    )
    return ("model", "judge") if samples else ("judge",)
