"""Typed configuration: the dataclass schemas Hydra validates `conf/` against.

Plain dataclasses, standard library only: everything below the CLI receives these plain objects,
never an OmegaConf node. The CLI registers the schema in Hydra's ConfigStore as `base_config`
(`cli.hydra_schema.register_configs`), so a misspelt key in a YAML file or on the command line,
or a value of the wrong type, is rejected before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum

from healthbench_exp.config.bridge import BridgeConfig
from healthbench_exp.config.endpoint import MISSING as MISSING
from healthbench_exp.config.endpoint import REFERENCE_SYSTEM_MESSAGE as REFERENCE_SYSTEM_MESSAGE
from healthbench_exp.config.endpoint import SERVICE_TIERS as SERVICE_TIERS
from healthbench_exp.config.endpoint import Api as Api
from healthbench_exp.config.endpoint import EndpointConfig as EndpointConfig
from healthbench_exp.config.endpoint import JudgeConfig as JudgeConfig
from healthbench_exp.config.endpoint import PriceConfig as PriceConfig
from healthbench_exp.config.endpoint import PromptOrder as PromptOrder
from healthbench_exp.config.endpoint import RateLimitConfig as RateLimitConfig
from healthbench_exp.config.endpoint import ServeConfig as ServeConfig
from healthbench_exp.config.endpoint import ServeKind as ServeKind

# `reasoning_effort` values the openai SDK's `ReasoningEffort` type allows (openai.types.shared;
# tests/model/test_reasoning_effort.py checks this against the installed SDK)
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
PROFESSIONAL = "professional"  # dataset.difficulty of HealthBench Professional (SPEC 6)


class DataSource(Enum):
    """Where the examples come from (a `dataset.path` overrides all of them)."""

    # a Hugging Face dataset `dataset.hf_repo`, split `dataset.hf_split`: HealthBench
    # Professional's official copy (openai/healthbench-professional); for the 2025 sets a
    # third-party mirror (neuralleap/*; its consensus split has 3670 rows, the official 3671)
    hf = "hf"
    # the official simple-evals file, sha256-verified and cached: the 2025 sets' default
    openai = "openai"
    bundled = "bundled"  # a synthetic sample shipped in the package (`dataset.bundled_file`)


class HttpClient(Enum):
    """How a chat request is sent: through the openai client over one of its transports (aiohttp,
    httpx), or, opt-in, `direct`: the same request over one aiohttp session without the client
    (model/http.py; the same auth, bounded retries, timeouts and error names, for half the CPU)."""

    # openai.DefaultAioHttpClient: a quarter to a third less CPU per request than httpx, one
    # connection pool however many requests are in flight
    aiohttp = "aiohttp"
    httpx = "httpx"  # the SDK's default transport
    direct = "direct"  # opt-in: no openai client on the request path (model/http.py)


class TaskKind(Enum):
    eval = "eval"  # score replies against the rubrics (SPEC 3)
    meta_eval = "meta_eval"  # grade the meta-eval rows once; agreement with physicians (SPEC 4)


class CompletionSource(Enum):
    """Which replies an eval grades."""

    model = "model"  # sample them from `model` (the benchmark)
    physician = "physician"  # each row's `ideal_completion` (one group); no model calls
    physician_references = "physician_references"  # each of the 4 reference completions
    file = "file"  # a JSONL of prompt_id + completion the user already has


class WandbMode(Enum):
    auto = "auto"  # online when W&B credentials exist, otherwise offline; never prompts
    online = "online"
    offline = "offline"
    disabled = "disabled"


@dataclass
class DatasetConfig:
    difficulty: str = "all"  # label: all | hard | consensus | professional | sample
    source: DataSource = DataSource.openai
    # a local JSONL, each row in the 2025 HealthBench or the Professional schema (told apart by
    # its keys); overrides `source`
    path: str | None = None
    hf_repo: str = "neuralleap/healthbench-regular"
    hf_split: str = "test"
    openai_file: str | None = "2025-05-07-06-14-12_oss_eval.jsonl"  # null: the set has none
    sha256: str | None = "e99dd3c6372c10d6fcc5e385c5fae69d0dd40392dae56836ef9493ae324ecd2f"
    # rows of the official set: a full load (source hf or openai) of another count is warned
    # about; null: no check
    official_rows: int | None = 5000
    bundled_file: str = "sample.jsonl"  # source=bundled: which file of healthbench_exp/data/
    cache_dir: str = "~/.cache/healthbench_exp"  # where official files are kept once downloaded


@dataclass
class SamplingConfig:
    temperature: float | None = 0.5  # policy model; null = not sent
    max_tokens: int | None = 2048  # policy model; null = not sent
    num_examples: int | None = None  # seeded sample of this many examples (before repeats)
    rollouts_per_example: int = 1  # repeats; each repeat is one more scored row
    seed: int = 0  # example sampling and bootstrap; 0 picks the reference's subset


@dataclass
class TaskConfig:
    kind: TaskKind = TaskKind.eval
    # meta-eval data: `dataset.path` if set, the bundled synthetic sample for
    # `dataset.source=bundled`, otherwise this official file (it has no HF mirror)
    meta_eval_file: str = "2025-05-07-06-14-12_oss_meta_eval.jsonl"
    meta_eval_sha256: str | None = (
        "6a343ed3fcb6f28353c2c6c157ae30ddf2db874c947b27ba474ad54da9c5dbac"
    )


@dataclass
class CompletionsConfig:
    source: CompletionSource = CompletionSource.model
    # physician modes on the 2025 sets: ideal-completion group 1, 2 or 3; HealthBench
    # Professional has no groups (null: `physician` grades each row's physician_response)
    group: int | None = None
    path: str | None = None  # file mode: JSONL with prompt_id and completion per line
    # a regrade (`regrade=<run dir>`, cli.regrade): the source run whose examples.jsonl `path` is
    regrade_of: str | None = None


@dataclass
class RunnerConfig:
    max_concurrent: int = 64  # examples in flight
    max_parallel_judges: int = 48  # judge calls in flight per example
    max_in_flight: int | None = None  # model and judge requests in flight together; null: no cap
    max_retries: int = 4  # HTTP retries (5xx, 408, 409, timeouts); a 429 is waited out, not here
    http_client: HttpClient = HttpClient.aiohttp  # aiohttp | httpx (openai client) | direct
    # per attempt: no byte of a reply for so long and the request is retried (runner.max_retries)
    request_timeout_s: float = 180.0
    reasoning_request_timeout_s: float = 600.0  # the same for endpoints with `reasoning: true`
    connect_timeout_s: float = 10.0  # start-up reachability check and each connection; fails fast
    stall_notice_s: float = 30.0  # log a notice when an endpoint has not answered for so long
    # give an endpoint up (the run halts, resumable) when none of its first so many attempts
    # (each try of a call: 5xx, refused, timed out, 429 without rate-limit headers) was a
    # success, or at least 3 attempts failed and none succeeded for so long; 0: never
    dead_endpoint_calls: int = 30
    dead_endpoint_s: float = 45.0
    # at a stopping signal (Ctrl-C, SIGTERM, SIGHUP): nothing new is sent, and the requests in
    # flight (already paid) get so many seconds to answer; a second signal leaves at once; 0:
    # leave at once (what was in flight is counted as abandoned, its cost estimated)
    stop_grace_s: float = 15.0
    bootstrap_samples: int = 1000
    progress: bool = True
    # exit non-zero (partial) when more rows, or ungraded criteria, than this share fail; the
    # run stops sending as soon as that is certain; 1.0: every row and criterion is tried
    max_failure_fraction: float = 0.01


@dataclass
class BudgetConfig:
    # stop sending requests once the measured spend plus the estimated cost of the requests in
    # flight would pass this; what finished is written as a partial, resumable run. A run's
    # invocation: its own new spend; a sweep (-m): the spend of all its jobs together
    max_usd: float | None = None
    # the same cap on each job's own spend (a sweep's job; in a single run, its invocation's)
    max_usd_per_job: float | None = None
    # set by a sweep (-m) for each of its jobs, not on the command line: the sweep's directory,
    # whose other jobs' spend counts against max_usd
    sweep_dir: str | None = None

    def capped(self) -> bool:
        """Whether a cap is set (`max_usd` or `max_usd_per_job`)."""
        return self.max_usd is not None or self.max_usd_per_job is not None


@dataclass
class CacheConfig:
    enabled: bool = True
    dir: str | None = None  # null: $HEALTHBENCH_CACHE_DIR, else ~/.cache/healthbench_exp/cache


@dataclass
class DryRunConfig:
    """`dry_run=true` (the CLI reads it as `dry_run.enabled=true`): estimate calls, tokens and
    cost, send nothing. `dry_run.pilot=N` (implies a dry run): first send the N rows the run
    would start with (through the response cache, so the run reuses them), then extrapolate
    from what they measured, with an interval (see `engine.estimate`)."""

    enabled: bool = False
    pilot: int = 0  # rows to send first; 0: none

    @property
    def requested(self) -> bool:
        """Whether the job is a dry run (`enabled`, or a pilot asked for)."""
        return self.enabled or self.pilot > 0


@dataclass
class ScoringConfig:
    """Opt-in extras reported beside the reference metrics, never instead of them."""

    length_penalty_per_500_chars: float | None = None  # set to report length_adjusted_score
    length_center_chars: int = 2000


@dataclass
class CalibrationConfig:
    """Calibrated consensus rates (SPEC 7.3), reported beside the reference metrics."""

    # a finished meta-eval run of this run's judge (same name and settings): per `cluster:`
    # category, the judge's met rate corrected by its sensitivity and specificity there
    meta_eval_run: str | None = None


@dataclass
class ProtocolConfig:
    """The reference protocol a run is measured against (`config.protocol`)."""

    # refuse to run, before any request, when a setting deviates from the reference bundle of
    # the chosen set (as simple-evals' --healthbench-professional-mode does); false: run, and
    # record and announce the deviations
    strict: bool = False


@dataclass
class OfflineServerConfig:
    """The built-in loopback endpoint; its scores are meaningless, it exercises the pipeline."""

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    error_rate: float = 0.0  # share of requests answered 429 / 500 / 503
    # the `retry-after-ms` those injected errors carry (an overloaded provider, not a limit)
    error_retry_after_ms: float = 5.0
    malformed_rate: float = 0.0  # chance that a judge reply is not a valid verdict (seeded)
    empty_reply_rate: float = 0.0  # share of model replies with empty content
    fenced_rate: float = 0.0  # share of verdicts fenced as ``` without `json` (unparseable)
    judge_empty_rate: float = 0.0  # share of judge replies with empty content
    judge_error_rate: float = 0.0  # share of judge requests answered 500
    # judges that disagree by known rates ("model=rate,..."): a named judge's verdict is the
    # base verdict (a hash of the grader prompt alone) flipped at its rate; others: see replies
    judge_flip_rates: str = ""
    judge_lenient_rates: str = ""  # "model=rate,...": these judges also say met where not met
    # models of set strength ("model=pos:neg,..."): the base verdict on such a model's reply
    # meets a positive criterion at share pos and avoids a negative one at share neg
    model_strengths: str = ""
    seed: int = 0
    # reply lengths, in tokens (4 characters each): 0 keeps the 1 to 5 canned sentences (about
    # 15 to 90 tokens); N gives model replies of about N tokens (seeded per reply, N/2 to 3N/2)
    reply_tokens: int = 0
    verdict_tokens: int = 0  # 0: a verdict of about 30 tokens; N: about N (explanation padded)
    batch_delay_s: float = 0.0  # Batch API batches are reported in_progress this long
    # account faults (see offline_limits), applied to the requests of `limited_role`
    rate_limit_requests: int = 0  # requests per rate_limit_window_s, as OpenAI limits; 0: none
    rate_limit_tokens: int = 0  # tokens (prompt + max_tokens) per rate_limit_window_s; 0: none
    rate_limit_window_s: float = 60.0
    # a limit that moves: "T:S,...": from T s after a model's first request the account's other
    # jobs spend share S of its refill ("20:0.5,40:0": half from 20 s, none again from 40 s)
    rate_limit_schedule: str = ""
    # the rate limiter's replies and 429s carry no rate-limit header (no x-ratelimit-*, no
    # retry-after, no "try again in"), as most OpenAI-compatible servers other than OpenAI's
    rate_limit_bare: bool = False
    rate_limited_first: int = 0  # answer the first N requests 429 without any rate header
    quota_exhausted: bool = False  # answer 429 insufficient_quota
    silent: bool = False  # accept requests and never answer
    # an outage: once fail_after requests of limited_role were answered, answer every further
    # one with HTTP fail_status (no rate-limit headers); 0: never
    fail_status: int = 0
    fail_after: int = 0
    # the server goes down at its down_after-th chat request (answered 503, then the port
    # closes: connections are refused); 0: never
    down_after: int = 0
    limited_role: str = "all"  # all | model | judge
    # `GET /v1/models/{id}` reports these shutdown dates ("id=YYYY-MM-DD,..."); past its date a
    # model is answered 404 model_not_found, as OpenAI's API answers a retired model
    shutdown_dates: str = ""
    no_responses_api: bool = False  # answer POST /v1/responses 404, as an older server does
    flex_unavailable: int = 0  # answer this many service_tier=flex requests 429 (no capacity)


@dataclass
class WandbConfig:
    mode: WandbMode = WandbMode.auto
    project: str = "healthbench-exp"
    entity: str | None = None
    group: str | None = None
    tags: list[str] = field(default_factory=list)
    name: str | None = None  # default: model, judge, difficulty, temperature


@dataclass
class Config:
    task: TaskConfig = field(default_factory=TaskConfig)
    completions: CompletionsConfig = field(default_factory=CompletionsConfig)
    model: EndpointConfig = field(default_factory=EndpointConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    scoring: ScoringConfig = field(default_factory=ScoringConfig)
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)
    bridge: BridgeConfig = field(default_factory=BridgeConfig)  # docs/bridge.md
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    # load the data, count the calls, estimate tokens and cost (minus what the response cache
    # holds), print the estimate; send no request (but a pilot's): see DryRunConfig
    dry_run: DryRunConfig = field(default_factory=DryRunConfig)
    offline_server: OfflineServerConfig = field(default_factory=OfflineServerConfig)
    wandb: WandbConfig = field(default_factory=WandbConfig)
    # further judges (SPEC 7.1): judge presets by name (conf/judge/ or a `hydra.searchpath` dir);
    # each grades every criterion beside `judge`, whose metrics stay the run's
    jury: list[str] = field(default_factory=list)
    # the presets of `jury`, composed by the CLI (cli.compose): not set by hand
    jury_members: list[JudgeConfig] = field(default_factory=list)


class ConfigError(ValueError):
    """A configuration the harness cannot run; the message says what to change."""


def unknown_option(key: str) -> tuple[str, list[str]] | None:
    """None if dotted `key` exists in the schema, else (where it went wrong, the valid names there).

    Keys inside free-form fields (such as `model.extra_body.*`) are not checked.
    """
    schema: type | None = Config
    prefix = ""
    for part in key.split("."):
        if schema is None:
            return None
        by_name = {f.name: f for f in fields(schema)}
        if part not in by_name:
            return prefix, sorted(by_name)
        factory = by_name[part].default_factory
        schema = factory if isinstance(factory, type) and is_dataclass(factory) else None
        prefix = f"{prefix}.{part}" if prefix else part
    return None
