"""Which reference protocol a run is measured against, and every setting where it deviates.

Each HealthBench set has a reference bundle, the settings of simple-evals (SPEC sections 2, 3
and 6) under which its published scores were made:

- the 2025 sets (`healthbench`, `healthbench-hard`, `healthbench-consensus`, and the meta-eval
  `healthbench-meta-eval`): judge `gpt-4.1-2025-04-14` at temperature 0.5 and max_tokens 2048
  with the system message "You are a helpful assistant.", no reasoning effort, the reference
  prompt order, chat.completions (not the Batch API), no length adjustment, the official file
  (`dataset.source=openai`, its sha256), every example;
- `healthbench-professional`: judge `gpt-5.4-2026-03-05` with reasoning effort `low` (a
  reasoning call: no temperature or max_tokens sent; inferred, see docs/professional.md), the
  same system message, prompt order and transport, length penalty 0.0147 per 500 characters
  around 2000, the data `openai/healthbench-professional` (split `test`), every example.

`protocol_check` compares a run's settings with its set's bundle. A deviation reads
`"<option>: <reference value> -> <this run's value>"`. Where a run's endpoint is or what key it
uses is never a deviation (the same model answers), nor its service tier; the policy model is
what is measured, not part of the protocol, but a model the reference has a sampler for
(`REFERENCE_SAMPLERS`: o3 and o4-mini through the Responses API without a system message, the
GPT-4.1 and GPT-4o models through chat with "You are a helpful assistant.", T 0.5 and 2048
tokens) is sampled as that sampler samples it: its API, system message, temperature and max
tokens are compared (the grader sees the conversation as sent, so each changes the scores).

A `dataset.path` run is recorded by the file it read, its name and sha256 (`data_file`; never
the local path): a file whose sha256 is the official file's (a local copy of the real data) is
no deviation, any other is `dataset.path: <official file> -> <name> (sha256 <first 12>...)`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from healthbench_exp.config.schema import (
    PROFESSIONAL,
    REFERENCE_SYSTEM_MESSAGE,
    Api,
    DatasetConfig,
    DataSource,
    EndpointConfig,
    JudgeConfig,
    PromptOrder,
    SamplingConfig,
    ScoringConfig,
    TaskConfig,
    TaskKind,
)
from healthbench_exp.core.protocol_record import LENGTH_ADJUSTED_SCORE, OVERALL_SCORE

PROFESSIONAL_PROTOCOL = "healthbench-professional"
PROFESSIONAL_HF_REPO = "openai/healthbench-professional"
PROFESSIONAL_JUDGE = "gpt-5.4-2026-03-05"
REFERENCE_JUDGE = "gpt-4.1-2025-04-14"

# the official 2025 files (SPEC section 1): difficulty -> (protocol name, file, sha256)
OFFICIAL_2025: dict[str, tuple[str, str, str]] = {
    "all": (
        "healthbench",
        "2025-05-07-06-14-12_oss_eval.jsonl",
        "e99dd3c6372c10d6fcc5e385c5fae69d0dd40392dae56836ef9493ae324ecd2f",
    ),
    "hard": (
        "healthbench-hard",
        "hard_2025-05-08-21-00-10.jsonl",
        "b0320430e5cd974e746585594c1dd10b5a3fc2aff9c72b26106c2c4a069d74e9",
    ),
    "consensus": (
        "healthbench-consensus",
        "consensus_2025-05-09-20-00-46.jsonl",
        "fabe37553327238928b05357d8b309737b5d426d6dee432a3376da618d0969d6",
    ),
}
META_EVAL = (
    "healthbench-meta-eval",
    "2025-05-07-06-14-12_oss_meta_eval.jsonl",
    "6a343ed3fcb6f28353c2c6c157ae30ddf2db874c947b27ba474ad54da9c5dbac",
)


@dataclass(frozen=True)
class JudgeBundle:
    """The reference grader call of a set: what is sent (None: not sent)."""

    name: str
    temperature: float | None
    max_tokens: int | None
    reasoning_effort: str | None
    system_message: str | None = REFERENCE_SYSTEM_MESSAGE


@dataclass(frozen=True)
class ScoringBundle:
    """The reference length adjustment of a set (None: none)."""

    length_penalty_per_500_chars: float | None
    length_center_chars: int = 2000


@dataclass(frozen=True)
class SamplerBundle:
    """How the reference samples a model (simple-evals' sampler for it): `reasoning` sends
    neither temperature nor max tokens."""

    api: Api
    system_message: str | None
    reasoning: bool
    temperature: float | None = None
    max_tokens: int | None = None


_RESPONSES_REASONING = SamplerBundle(Api.responses, None, reasoning=True)  # ResponsesSampler
_CHAT_2048 = SamplerBundle(Api.chat, REFERENCE_SYSTEM_MESSAGE, False, 0.5, 2048)
# simple-evals' samplers (simple_evals.py), by the model name they send
REFERENCE_SAMPLERS: dict[str, SamplerBundle] = {
    "o3-2025-04-16": _RESPONSES_REASONING,
    "o4-mini-2025-04-16": _RESPONSES_REASONING,
    "gpt-4.1-2025-04-14": _CHAT_2048,
    "gpt-4.1-mini-2025-04-14": _CHAT_2048,
    "gpt-4.1-nano-2025-04-14": _CHAT_2048,
    "gpt-4o-2024-08-06": _CHAT_2048,
    "gpt-4o-2024-11-20": _CHAT_2048,
    "gpt-4o-mini-2024-07-18": _CHAT_2048,
}

JUDGE_2025 = JudgeBundle(REFERENCE_JUDGE, temperature=0.5, max_tokens=2048, reasoning_effort=None)
JUDGE_PROFESSIONAL = JudgeBundle(
    PROFESSIONAL_JUDGE, temperature=None, max_tokens=None, reasoning_effort="low"
)
SCORING_2025 = ScoringBundle(None)
SCORING_PROFESSIONAL = ScoringBundle(0.0147, 2000)


@dataclass(frozen=True)
class ProtocolCheck:
    """A run's protocol: the reference bundle it is measured against and its deviations.

    `fixes` holds, for each deviation, the option that would remove it (`key=value`).
    """

    name: str
    deviations: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    # a dataset.path run: {"name": the file's name, "sha256": its digest (null: unreadable)}
    data_file: dict[str, str | None] | None = None
    # how each endpoint is sent its calls, by role (`model` when it samples, `judge`, and
    # `jury:<model name>` for each jury member):
    # {"api": chat | responses, "system_message": its text or None, "service_tier": ...}
    endpoints: dict[str, dict[str, str | None]] = field(default_factory=dict)

    @property
    def reference(self) -> bool:
        """True exactly when no setting deviates from the reference bundle."""
        return not self.deviations


def headline_metric(name: str, scoring: ScoringConfig) -> str:
    """The metric an eval of protocol `name` is quoted by: Professional's length-adjusted score
    when the run computes one (`scoring.length_penalty_per_500_chars` set), else the plain
    clipped mean `overall_score` (which the reference also writes as `score`)."""
    if name == PROFESSIONAL_PROTOCOL and scoring.length_penalty_per_500_chars is not None:
        return LENGTH_ADJUSTED_SCORE
    return OVERALL_SCORE


def is_professional(dataset: DatasetConfig) -> bool:
    """The Professional set: `difficulty=professional` (its bundled sample too)."""
    return dataset.difficulty == PROFESSIONAL


def protocol_name(task: TaskConfig, dataset: DatasetConfig) -> str:
    """The reference bundle a run is measured against (see the module docstring)."""
    if task.kind is TaskKind.meta_eval:
        return META_EVAL[0]
    if is_professional(dataset):
        return PROFESSIONAL_PROTOCOL
    return OFFICIAL_2025.get(dataset.difficulty, OFFICIAL_2025["all"])[0]


def _text(value: object) -> str:
    """A setting as it reads in a deviation: JSON-like (null, true, 0.5, "text" unquoted)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


class _Deviations:
    """Collects `option: reference -> run` lines and the override that fixes each."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.fixes: list[str] = []

        self.data_file: dict[str, str | None] | None = None

    def compare(self, option: str, reference: object, actual: object) -> None:
        """Record `option` when the run's value differs from the reference's."""
        if reference != actual:
            self.add(option, f"{_text(reference)} -> {_text(actual)}", _text(reference))

    def add(self, option: str, change: str, fix: str) -> None:
        """Record `option: change`, removed by setting `option` to `fix`."""
        self.lines.append(f"{option}: {change}")
        self.fixes.append(f"{option}='{fix}'" if " " in fix else f"{option}={fix}")

    def data_path(self, path: str, reference: str, sha256: str | None) -> None:
        """A `dataset.path` run: record the file by name and sha256 (`data_file`); a deviation
        from the `reference` data unless the file's sha256 is `sha256` (the official file's;
        None: the reference data is no single file)."""
        name, digest = Path(path).expanduser().name, file_sha256(path)
        self.data_file = {"name": name, "sha256": digest}
        if sha256 is not None and digest == sha256:
            return
        read = f"{name} (sha256 {digest[:12]}...)" if digest else f"{name} (unreadable)"
        self.add("dataset.path", f"{reference} -> {read}", "null")


def file_sha256(path: str) -> str | None:
    """The sha256 of the file at `path`, None when it cannot be read (the data loader then
    says why); remembered per path, size and modification time."""
    try:
        resolved = Path(path).expanduser().resolve()
        stat = resolved.stat()
    except OSError:
        return None
    return _sha256(str(resolved), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=16)
def _sha256(path: str, size: int, mtime_ns: int) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _judge(out: _Deviations, judge: JudgeConfig, bundle: JudgeBundle) -> None:
    out.compare("judge.name", bundle.name, judge.name)
    out.compare("judge.api", Api.chat.value, judge.api.value)
    reasoning_call = bundle.temperature is None and bundle.max_tokens is None
    out.compare("judge.reasoning", reasoning_call, judge.reasoning)
    if not judge.reasoning:  # what is sent; a reasoning call sends neither
        out.compare("judge.temperature", bundle.temperature, judge.temperature)
        out.compare("judge.max_tokens", bundle.max_tokens, judge.max_tokens)
    out.compare("judge.reasoning_effort", bundle.reasoning_effort, judge.reasoning_effort)
    out.compare("judge.system_message", bundle.system_message, judge.system_message)
    out.compare("judge.prompt_order", PromptOrder.reference.value, judge.prompt_order.value)
    out.compare("judge.batch", False, judge.batch)
    out.compare("judge.extra_body", {}, dict(judge.extra_body))


def _model(out: _Deviations, model: EndpointConfig, sampling: SamplingConfig) -> None:
    """A model the reference has a sampler for, against that sampler (see the docstring)."""
    bundle = REFERENCE_SAMPLERS.get(model.name)
    if bundle is None:
        return
    out.compare("model.api", bundle.api.value, model.api.value)
    out.compare("model.system_message", bundle.system_message, model.system_message)
    out.compare("model.reasoning", bundle.reasoning, model.reasoning)
    if not model.reasoning:  # what is sent; a reasoning call sends neither
        out.compare("sampling.temperature", bundle.temperature, sampling.temperature)
        out.compare("sampling.max_tokens", bundle.max_tokens, sampling.max_tokens)


def _scoring(out: _Deviations, scoring: ScoringConfig, bundle: ScoringBundle) -> None:
    penalty = scoring.length_penalty_per_500_chars
    if penalty is None:  # not given: the set's published value applies (`grading.length`)
        penalty = bundle.length_penalty_per_500_chars
    out.compare(
        "scoring.length_penalty_per_500_chars", bundle.length_penalty_per_500_chars, penalty
    )
    if penalty is not None and bundle.length_penalty_per_500_chars is not None:
        out.compare(
            "scoring.length_center_chars", bundle.length_center_chars, scoring.length_center_chars
        )


def _data(
    out: _Deviations,
    dataset: DatasetConfig,
    sampling: SamplingConfig,
    official: tuple[str, str, str] | None,
) -> None:
    """Official data, every example: `official` is (name, file, sha256) of a 2025 file; None
    for Professional, whose reference data is the HF set `openai/healthbench-professional`.
    A `dataset.path` is the file read, whatever `dataset.source` says."""
    if dataset.path:
        if official is None:
            out.data_path(dataset.path, PROFESSIONAL_HF_REPO, None)
        else:
            out.data_path(dataset.path, official[1], official[2])
    elif official is None:
        out.compare("dataset.source", DataSource.hf.value, dataset.source.value)
        out.compare("dataset.hf_repo", PROFESSIONAL_HF_REPO, dataset.hf_repo)
        out.compare("dataset.hf_split", "test", dataset.hf_split)
    else:
        _, file, sha256 = official
        out.compare("dataset.source", DataSource.openai.value, dataset.source.value)
        if dataset.source is DataSource.openai:  # the file read, and its check
            out.compare("dataset.openai_file", file, dataset.openai_file)
            out.compare("dataset.sha256", sha256, dataset.sha256)
    out.compare("sampling.num_examples", None, sampling.num_examples)


def protocol_check(
    task: TaskConfig,
    dataset: DatasetConfig,
    sampling: SamplingConfig,
    judge: JudgeConfig,
    scoring: ScoringConfig,
    model: EndpointConfig | None = None,
    bridge_runs: Sequence[str] = (),
    jury: Sequence[JudgeConfig] = (),
) -> ProtocolCheck:
    """The run's protocol name and every deviation from that set's reference bundle (see the
    module docstring), in a fixed order: judge, model (when it samples: `model`), scoring,
    data, then a bridge (`bridge.runs`: the bridged figures are the judge's verdicts mapped to
    the reference grader's scale). The jury's members (`jury`) are recorded beside the
    endpoints, as `jury:<model name>`; they deviate from nothing, the metrics being the
    judge's."""
    name = protocol_name(task, dataset)
    out = _Deviations()
    professional = name == PROFESSIONAL_PROTOCOL
    _judge(out, judge, JUDGE_PROFESSIONAL if professional else JUDGE_2025)
    if model is not None:
        _model(out, model, sampling)
    if task.kind is TaskKind.eval:
        _scoring(out, scoring, SCORING_PROFESSIONAL if professional else SCORING_2025)
    if task.kind is TaskKind.meta_eval:
        _meta_eval_data(out, task, dataset, sampling)
    elif professional:
        _data(out, dataset, sampling, None)
    else:
        # a label with no official file (the bundled sample) stands in for all 5000
        _data(out, dataset, sampling, OFFICIAL_2025.get(dataset.difficulty, OFFICIAL_2025["all"]))
    if bridge_runs:
        out.add("bridge.runs", f"[] -> {json.dumps(list(bridge_runs))}", "[]")
    endpoints: dict[str, EndpointConfig] = {"judge": judge}
    if model is not None:
        endpoints = {"model": model, **endpoints}
    endpoints |= {f"jury:{member.name}": member for member in jury}
    return ProtocolCheck(
        name,
        out.lines,
        out.fixes,
        out.data_file,
        {role: _sending(endpoint) for role, endpoint in endpoints.items()},
    )


def _sending(endpoint: EndpointConfig) -> dict[str, str | None]:
    """How an endpoint is sent its calls: its API, system message and service tier."""
    return {
        "api": endpoint.api.value,
        "system_message": endpoint.system_message,
        "service_tier": endpoint.service_tier,
    }


def _meta_eval_data(
    out: _Deviations, task: TaskConfig, dataset: DatasetConfig, sampling: SamplingConfig
) -> None:
    """The meta-eval reads its own official file (task.meta_eval_file), or a dataset.path,
    or the bundled sample (dataset.source=bundled)."""
    _, file, sha256 = META_EVAL
    if dataset.path:  # the file read: the official file's settings are not used
        out.data_path(dataset.path, file, sha256)
    else:
        if dataset.source is DataSource.bundled:
            out.compare("dataset.source", DataSource.openai.value, "bundled")
        out.compare("task.meta_eval_file", file, task.meta_eval_file)
        out.compare("task.meta_eval_sha256", sha256, task.meta_eval_sha256)
    out.compare("sampling.num_examples", None, sampling.num_examples)
