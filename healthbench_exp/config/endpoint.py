"""The schema of one endpoint's section (`model`, `judge`, a jury member): how it is reached,
which API it speaks, what it is sent, its prices, limits and server. Re-exported by
`config.schema`, where the rest of the configuration is."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

REFERENCE_SYSTEM_MESSAGE = "You are a helpful assistant."
# a required value, as Hydra reads it (the string `omegaconf.MISSING` is): a config that leaves
# it unset is refused when it is composed
MISSING = "???"
# `service_tier` values the openai SDK's `ServiceTier` type allows (openai.types.responses;
# tests/model/test_service_tier.py checks this against the installed SDK)
SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority", "fast", "ultrafast")
STANDARD_TIER = "default"  # the tier the listed price is for


class Api(Enum):
    """Which OpenAI API an endpoint is sent its requests through."""

    chat = "chat"  # Chat Completions: POST /v1/chat/completions
    # the Responses API: POST /v1/responses (the system message as a `developer` message,
    # reasoning effort as `reasoning.effort`, the reply length as `max_output_tokens`)
    responses = "responses"


class PromptOrder(Enum):
    reference = "reference"  # the official template as is
    # NOT the reference protocol: the rubric item moved after the instructions, so the template
    # and the conversation form one long prefix shared by all of an example's judge calls
    shared_prefix_first = "shared_prefix_first"


class ServeKind(Enum):
    """Who serves an endpoint: nobody (it is at `base_url` already), or a server the harness
    starts for the run (`engine.serve`)."""

    none = "none"
    vllm = "vllm"  # `vllm serve <name>` on a free port of this machine, stopped when the run ends
    # llama-cpp-python's server (`python -m llama_cpp.server`) with a GGUF file, the same way
    llamacpp = "llamacpp"


@dataclass
class PriceConfig:
    """US dollars per million tokens; null = unknown, and then no cost is computed."""

    input_per_mtok: float | None = None
    cached_input_per_mtok: float | None = None  # prompt tokens the provider cached; null: input
    output_per_mtok: float | None = None  # completion tokens, reasoning tokens included
    as_of: str | None = None  # when and where the prices were taken
    # per `service_tier`: its price as a multiple of the listed (standard) one, e.g. flex: 0.5
    # (billed at Batch rates), priority: 1.75; the standard tier ("default") is 1. A tier not
    # listed here has no known price: its cost is unknown, not the standard one
    tiers: dict[str, float] = field(default_factory=dict)


@dataclass
class RateLimitConfig:
    """An account's known limits for one endpoint (null = unknown). A run starts at this pace
    instead of finding it by 429s; `dry_run` turns them into an expected duration."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None  # prompt + completion tokens
    # dry_run only: send one minimal request and read the limits not set here from its
    # x-ratelimit-limit-* headers (else a dry run sends nothing)
    probe: bool = False


@dataclass
class ServeConfig:
    """A model server the harness starts for one run and stops when it ends, on a free port of
    this machine, its log in the run directory (`<kind>.log`); the endpoint's `base_url` and API
    key are then not used. `kind: vllm`: `<executable> serve <name> --host 127.0.0.1 --port <port>
    <args...>`. `kind: llamacpp`: `<python> -m llama_cpp.server --model <gguf> --model_alias
    <name> --host 127.0.0.1 --port <port> <args...>` (`engine.serve_commands`)."""

    kind: ServeKind = ServeKind.none
    # a name on PATH or a path; null: `vllm`, or (llamacpp) the Python running the harness
    executable: str | None = None
    # more arguments after those, e.g. ["--max-model-len", "8192"]
    args: list[str] = field(default_factory=list)
    # the server must answer /v1/models within this (weights download and load included)
    ready_timeout_s: float = 1800.0
    # llamacpp: the GGUF file to serve; null: the one a preset names for the role's `name`
    gguf: str | None = None


@dataclass
class EndpointConfig:
    """One endpoint: the policy model or the judge."""

    name: str = MISSING  # model id sent to the API; every model/judge option sets it
    base_url: str | None = None  # null = OpenAI's API
    api_key_env: str | None = "OPENAI_API_KEY"  # env var holding the key; null = no key needed
    builtin: bool = False  # start and use the built-in offline server (ignores base_url)
    api: Api = Api.chat  # chat (Chat Completions) | responses (the Responses API)
    # OpenAI's `service_tier`, sent with every request (SERVICE_TIERS: flex, priority, ...);
    # null: not sent (the project's default tier). Priced by `price.tiers`
    service_tier: str | None = None
    system_message: str | None = REFERENCE_SYSTEM_MESSAGE  # prepended to every request; null = none
    reasoning: bool = False  # o-series: temperature and max_tokens are not sent (as the reference)
    # sent as `reasoning_effort` (chat) or `reasoning.effort` (responses), one of
    # REASONING_EFFORTS; null: not sent
    reasoning_effort: str | None = None
    max_concurrency: int = 64  # requests in flight to this endpoint at most
    prompt_cache_key: bool = (
        False  # send OpenAI's prompt_cache_key (one per example) with judge calls
    )
    # merged into every request body; a free-form dict, which OmegaConf types as dict[str, Any]
    # (it refuses `object`)
    extra_body: dict[str, Any] = field(default_factory=dict)
    price: PriceConfig = field(default_factory=PriceConfig)
    # the reply length cost estimates assume (dry_run, budget): tokens, reasoning included
    expected_completion_tokens: int = 600
    rate_limit: RateLimitConfig = field(default_factory=RateLimitConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)  # a server started for the run
    # the provider's announced shutdown (YYYY-MM-DD; null: none announced), where and when that
    # was read, and the presets to use instead; checked at start-up (`model.retired`)
    shutdown_date: str | None = None
    shutdown_source: str | None = None
    replacements: list[str] = field(default_factory=list)


@dataclass
class JudgeConfig(EndpointConfig):
    temperature: float | None = 0.5
    max_tokens: int | None = 2048
    max_parse_retries: int = 3  # resamples after an unparseable or empty verdict; then "ungraded"
    # stop the run when its first this many judge replies are all unparseable (0: never)
    early_stop_unparseable: int = 20
    max_concurrency: int = 256
    expected_completion_tokens: int = 80  # a verdict: a short explanation and the boolean
    prompt_order: PromptOrder = PromptOrder.reference
    # NOT the reference protocol's transport: judge calls go through OpenAI's Batch API (half
    # price, results within 24 h); the run waits for them and resumes a batch it submitted
    batch: bool = False
    batch_poll_s: float = 30.0
