"""The parts of a run's resolved config that readers of its records use, as a typed record.

`summary.json` keeps the resolved config as plain data (`RunSummary.config`, written back as
read); a dry run's `estimate.json` and `.hydra/config.yaml` hold the same shape. Readers (the
run's context line, sweeps, comparisons) read it through `RunConfig.from_dict(...)` and
attributes (`settings.judge.name`), never string keys. Reading is tolerant like every `Record`:
a section or key the config lacks reads as None, keys not listed here are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from healthbench_exp.core.record import Record


@dataclass
class PricePart(Record):
    as_of: str | None  # `illustrative: ...` marks a placeholder price (the offline demo's)


@dataclass
class EndpointPart(Record):
    """`model` or `judge`: who answered, and how."""

    name: str | None
    temperature: float | None
    reasoning: bool | None  # o-series: no temperature sent
    reasoning_effort: str | None  # sent as the reasoning effort (None: not sent)
    api: str | None  # chat | responses (None: not recorded, chat)
    builtin: bool | None  # the built-in offline server answered
    price: PricePart | None


@dataclass
class TaskPart(Record):
    kind: str | None  # eval | meta_eval


@dataclass
class DatasetPart(Record):
    source: str | None
    difficulty: str | None
    path: str | None
    hf_repo: str | None


@dataclass
class CompletionsPart(Record):
    source: str | None  # model | physician | physician_references | file


@dataclass
class SamplingPart(Record):
    temperature: float | None
    max_tokens: int | None
    num_examples: int | None
    rollouts_per_example: int | None
    seed: int | None


@dataclass
class RunConfig(Record):
    """A run's resolved config, the parts its readers use (None: not recorded)."""

    task: TaskPart | None
    model: EndpointPart | None
    judge: EndpointPart | None
    dataset: DatasetPart | None
    sampling: SamplingPart | None
    completions: CompletionsPart | None

    @classmethod
    def of(cls, config: Mapping[str, object] | None) -> RunConfig:
        """The record of a config as plain data (None or a non-dict: every part None)."""
        return cls.from_dict(config if isinstance(config, Mapping) else {})

    def endpoint(self, role: str) -> EndpointPart | None:
        """`model` or `judge` by role name."""
        return self.model if role == "model" else self.judge if role == "judge" else None
