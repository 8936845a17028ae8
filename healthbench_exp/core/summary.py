"""`summary.json`: the typed record of one run, and the one place its schema is documented.

A run (an eval, or a meta-eval of the judge against physicians) ends by writing one
`summary.json` into its directory. `RunSummary` is that file as a record: the engine builds it,
`RunSummary.to_dict()` is exactly the JSON written (keys in this order), and every reader (the
end-of-run table, report.html, W&B, sweeps, `resume=`) reads it back with
`RunSummary.from_dict(json.loads(...))` and then uses attributes, never string keys.

The top level, in file order (`eval` / `meta_eval`: written by that task only):

- `task`: `"eval"` or `"meta_eval"`.
- `metrics`: flat `name -> number` (None: undefined), the reference's names. Eval:
  `overall_score`, `theme:<t>`, `axis:<a>`, `cluster:<c>` (consensus criteria), each with
  `:n_samples` and `:bootstrap_std`, `score` (= overall_score), and with a length penalty
  `length_adjusted_score` and `length_adjusted_score:<example tag>` (+ stats). Meta-eval:
  `score` (= `pairwise_model_f1_balanced`), the judge's
  `pairwise_model_{f1,precision,recall}_{balanced,pos,neg}`, the physicians'
  `physicians_mean:` / `physicians_weighted_mean:` of their F1s, `category_mean:` of the two
  balanced F1s, and the per-row means. Kept as a dict: the names are data, not schema.
- `counts`: `EvalCounts` or `MetaEvalCounts` (rows by state, requests, tokens, times).
- `headline`: the name of the metric the run is quoted by: `length_adjusted_score` for
  HealthBench Professional with its reference length adjustment, else `overall_score` (eval) or
  `score` (meta-eval).
- `repeats` (eval): `Repeats` when `sampling.rollouts_per_example > 1`, else null.
- `consensus` (eval): one `ConsensusRow` per consensus criterion scored.
- `by_category` (meta_eval): one `CategoryRow` per category.
- `agreement` (meta_eval): `Agreement`, the judge's and each physician's rates in detail.
- `failures`: one `Failure` per row that failed (eval) or got no verdict (meta-eval).
- `usage`: `Usage`, tokens and dollars per endpoint role, summed over every invocation of the
  run (a budget stop and `resume=` make several), each invocation under `usage.invocations`.
- `budget`: `BudgetState` of this invocation when `budget.max_usd` was set, else null.
- `protocol`: `Protocol` (`core.protocol_record`), how the judge graded, the reference bundle
  the run is measured against (`name`), and every setting that deviates from it.
- `config`: the resolved config as plain data (env var names, never keys). Kept as a dict.
- `completions` (eval): `Completions`, where the graded replies came from.
- `calibrated` (eval, with `calibration.meta_eval_run`): `Calibrated`, the judge's consensus
  met rates corrected by its sensitivity and specificity against physicians (SPEC 7.3).
- `jury` (eval, with `jury=[...]`): `Jury`, the jury's metrics under the `mean` rule, each
  judge's metrics, and every pair's agreement with Cohen's kappa (SPEC 7.1).
- `bridged` (eval, with `bridge.runs`): `Bridged`, the run rescored on the reference
  grader's scale through verdicts of both judges on the same replies (docs/bridge.md).
- `published` (eval): one `PublishedComparison` (`core.published_record`) per published number
  of the run's model and set, best-matching first (docs/reproducing.md); `published_note`: why
  nothing published applies, when nothing does.
- `partial`: true when rows were not run (the budget, a dead endpoint or a stopping signal
  stopped the run): a resume finishes them.
- `demo`: true when the built-in offline endpoint answered: the scores mean nothing.
- `wandb`: `WandbInfo`, where the W&B run is; null when W&B was disabled.

Reading is tolerant of summaries written by older versions: a part they lack reads as None
(and a count or usage field they lack as None), keys this version does not know are ignored.
`to_dict()` writes back what was read: the parts of its task always, `completions`, `partial`
and `demo` only when known, so a summary of this version round-trips byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import ClassVar

from healthbench_exp.core.bridged import Bridged
from healthbench_exp.core.calibrated_record import Calibrated, CalibratedCategory
from healthbench_exp.core.protocol_record import Protocol
from healthbench_exp.core.published_record import PublishedComparison
from healthbench_exp.core.record import OMIT_NONE, Record, encode
from healthbench_exp.core.run_config import RunConfig
from healthbench_exp.core.usage_record import (
    USAGE_FIELDS,
    BudgetState,
    Invocation,
    Price,
    RoleUsage,
    Usage,
)

__all__ = [  # the parts defined beside this module, importable from here as before
    "USAGE_FIELDS",
    "Bridged",
    "BudgetState",
    "Calibrated",
    "CalibratedCategory",
    "Invocation",
    "Price",
    "Protocol",
    "RoleUsage",
    "Usage",
]

EVAL = "eval"
META_EVAL = "meta_eval"

Metrics = Mapping[str, float | None]  # `metrics`: name -> number (None: undefined)


@dataclass
class EvalCounts(Record):
    """`counts` of an eval: rows by state (see `core.counts`), criteria, requests, tokens."""

    examples: int  # distinct prompt_ids graded
    rollouts_per_example: int
    rows: int  # example x rollout rows the run was to grade
    rows_scored: int
    rows_failed: int  # no usable reply: not scored
    rows_unscorable: int  # a reply, but no positive criterion graded
    rows_not_run: int  # stopped by the budget: a resume runs them
    criteria_graded: int  # criteria with a verdict
    ungraded_criteria: int  # criteria without one after every attempt (left out of the scores)
    criteria: int  # criteria of every row
    judge_replies: int  # judge replies read (attempts), over every criterion
    model_requests: int  # requests sent this invocation (not from the response cache)
    judge_requests: int
    model_cache_hits: int  # calls answered by the response cache (not paid again)
    judge_cache_hits: int
    model_prompt_tokens: int
    model_completion_tokens: int
    judge_prompt_tokens: int
    judge_cached_prompt_tokens: int  # cached by the provider (billed at the cached rate)
    judge_completion_tokens: int
    peak_requests_in_flight: dict[str, int]  # per role (model, judge, each jury member's name)
    request_errors: dict[str, dict[str, int]]  # per role, by kind: failed after every retry
    rate_limited: dict[str, int]  # per role: 429 replies
    lowest_in_flight_limit: dict[str, int | None]  # per role: the adaptive limit's lowest
    evaluation_s: float  # sampling and grading only
    wall_time_s: float  # the whole invocation, data loading included


@dataclass
class MetaEvalCounts(Record):
    """`counts` of a meta-eval: rows (row x repeat) graded, physicians, judge requests."""

    rows: int
    rows_graded: int  # rows with a judge verdict
    rows_failed: int  # no verdict: left out of the judge's metrics
    rows_not_run: int  # stopped by the budget: a resume runs them
    rollouts_per_example: int  # repeats of each row
    examples: int  # distinct (prompt_id, completion_id)
    categories: int
    physicians: int
    physician_labels: int  # physician labels over every row
    judge_replies: int
    judge_requests: int
    judge_cache_hits: int
    judge_prompt_tokens: int
    judge_cached_prompt_tokens: int
    judge_completion_tokens: int
    request_errors: dict[str, dict[str, int]]  # {"judge": {kind: n}}
    rate_limited: dict[str, int]  # {"judge": n, <jury member>: n, ...}
    evaluation_s: float
    wall_time_s: float


Counts = EvalCounts | MetaEvalCounts


@dataclass
class Repeats(Record):
    """`repeats` of an eval with several rollouts per example."""

    rollouts: int
    run_to_run_std: float | None  # std of the overall score across rollouts
    worst_at_k: dict[str, float]  # "k" -> mean over examples of the worst of k rollouts


@dataclass
class ConsensusRow(Record):
    """One consensus criterion's score (metrics `cluster:<cluster>`), labelled."""

    cluster: str
    theme: str | None
    behavior_category: str | None
    criterion: str | None
    score: float | None
    n_samples: int
    bootstrap_std: float | None


@dataclass
class CategoryRow(Record):
    """A meta-eval category: the judge's and the physicians' balanced F1 over its rows."""

    category: str
    rows: int
    rows_graded: int
    model_f1_balanced: float | None  # None: undefined (no pairs)
    model_n: int
    physicians_mean_f1_balanced: float | None
    physicians_weighted_mean_f1_balanced: float | None
    physicians: int  # physicians for whom it is defined


@dataclass
class Rate(Record):
    """A rate and the pairs behind it (`grading.agreement.Rate`)."""

    n: int
    value: float | None  # None: undefined (no pairs)


@dataclass
class RaterAverage(Record):
    """A metric averaged over physicians (`grading.agreement.Average`)."""

    mean: float | None
    weighted_mean: float | None  # weighted by each physician's n
    raters: int  # physicians for whom it is defined


@dataclass
class Agreement(Record):
    """`agreement` of a meta-eval: every rate of the judge and of each physician, by metric
    name (overall and `:<category>`)."""

    model: dict[str, Rate]
    physicians: dict[str, dict[str, Rate]]  # physician id -> metric -> rate (leave-one-out)
    physicians_average: dict[str, RaterAverage]


@dataclass
class Failure(Record):
    """A row that failed (eval) or got no verdict (meta-eval), and why."""

    prompt_id: str
    completion_id: str | None = field(default=None, metadata=OMIT_NONE)  # meta-eval
    rollout: int = 0  # the rollout (meta-eval: the repeat)
    error: str | None = None


@dataclass
class Completions(Record):
    """Where an eval's graded replies came from (`completions.source`)."""

    source: str  # model | physician | physician_references | file
    # physician sources: the `ideal_completions_group` number, and the rows in it
    group: int | None = field(default=None, metadata=OMIT_NONE)
    rows_in_group: int | None = field(default=None, metadata=OMIT_NONE)
    path: str | None = field(default=None, metadata=OMIT_NONE)  # file
    examples_without_completion: int | None = field(default=None, metadata=OMIT_NONE)  # file
    # a regrade (`regrade=<run dir>`): the source run's directory, model, judge, overall_score
    regrade_of: dict[str, object] | None = field(default=None, metadata=OMIT_NONE)


@dataclass
class PairStats(Record):
    """Two jury members' agreement over the criteria both graded (SPEC 7.1)."""

    n: int  # criteria both graded
    agreement: float | None  # share with equal verdicts; None: n is 0
    kappa: float | None  # Cohen's kappa; None: undefined (n is 0, or both said one thing only)


@dataclass
class JuryPair(Record):
    """One pair of jury members: overall, and `by` axis (`axis:<a>`) and theme (`theme:<t>`)."""

    a: str
    b: str
    n: int
    agreement: float | None
    kappa: float | None
    by: dict[str, PairStats]


@dataclass
class Jury(Record):
    """`jury` of an eval graded by a jury (`jury=[...]`, SPEC 7.1; `grading.jury`): beside the
    primary judge's `metrics`, never instead of them."""

    members: list[str]  # judge names, the primary judge first
    rule: str  # how verdicts combine: "mean" (the share of graded members that said met)
    metrics: dict[str, float | int | None]  # the jury's, under the names of `metrics`
    by_judge: dict[str, dict[str, float | int | None]]  # each member's, as a one-judge run's
    agreement: list[JuryPair]  # every pair of members, in member order
    # each member's criteria left ungraded (no valid verdict) over the rows scored, by name
    ungraded: dict[str, int] = field(default_factory=dict)


@dataclass
class WandbInfo(Record):
    """Where the run's W&B record is."""

    run_id: str
    group: str | None
    project: str | None
    entity: str | None
    mode: str | None  # online | offline
    warnings: list[str] = field(default_factory=list)


@dataclass
class RunSummary(Record):
    """summary.json (see the module docstring for every part)."""

    task: str
    metrics: Metrics
    counts: EvalCounts | MetaEvalCounts | None
    # the metric the run is quoted by (see `core.protocol_record`); None: an older version
    headline: str | None = field(default=None, metadata=OMIT_NONE)
    repeats: Repeats | None = field(default=None, metadata={"task": EVAL})
    consensus: list[ConsensusRow] | None = field(default=None, metadata={"task": EVAL})
    by_category: list[CategoryRow] | None = field(default=None, metadata={"task": META_EVAL})
    agreement: Agreement | None = field(default=None, metadata={"task": META_EVAL})
    failures: list[Failure] = field(default_factory=list)
    usage: Usage | None = None
    budget: BudgetState | None = None
    protocol: Protocol | None = None
    config: dict[str, object] = field(default_factory=dict)  # read it through `settings`
    completions: Completions | None = field(default=None, metadata=OMIT_NONE)
    # eval: the penalty `length_adjusted_score` uses, its set and source (`grading.length`)
    length_penalty: dict[str, object] | None = field(default=None, metadata=OMIT_NONE)
    # eval with `calibration.meta_eval_run`: calibrated consensus rates (SPEC 7.3)
    calibrated: Calibrated | None = field(default=None, metadata=OMIT_NONE)
    # eval with `jury=[...]`: the jury's and each judge's metrics and their agreement (SPEC 7.1)
    jury: Jury | None = field(default=None, metadata=OMIT_NONE)
    # eval with `bridge.runs`: the run on the reference grader's scale (`core.bridged`)
    bridged: Bridged | None = field(default=None, metadata=OMIT_NONE)
    # eval: the run beside each published number of its model and set (`core.published_record`)
    published: list[PublishedComparison] | None = field(default=None, metadata=OMIT_NONE)
    published_note: str | None = field(default=None, metadata=OMIT_NONE)  # why none applies
    # partial, demo: None when not recorded (an older version)
    partial: bool | None = field(default=None, metadata=OMIT_NONE)
    demo: bool | None = field(default=None, metadata=OMIT_NONE)
    wandb: WandbInfo | None = None

    FILE: ClassVar[str] = "summary.json"

    @property
    def is_meta_eval(self) -> bool:
        return self.task == META_EVAL

    @property
    def eval_counts(self) -> EvalCounts:
        """`counts` of an eval (AssertionError for a meta-eval or a summary without counts)."""
        assert isinstance(self.counts, EvalCounts), f"not an eval's counts: {self.counts!r}"
        return self.counts

    @property
    def meta_counts(self) -> MetaEvalCounts:
        """`counts` of a meta-eval (AssertionError otherwise)."""
        assert isinstance(self.counts, MetaEvalCounts), f"not a meta-eval's: {self.counts!r}"
        return self.counts

    @property
    def budget_stopped(self) -> bool:
        """The budget refused a request in this invocation (rows were left unrun)."""
        return bool(self.budget and self.budget.stopped)

    @property
    def settings(self) -> RunConfig:
        """`config` as a typed record (the parts readers use)."""
        return RunConfig.of(self.config)

    def to_dict(self) -> dict[str, object]:
        """The JSON of summary.json: a task's own parts always (null when None), another
        task's only when set, `omit_none` fields only when known."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                task = f.metadata.get("task")
                if f.metadata.get("omit_none") or (task is not None and task != self.task):
                    continue
            out[f.name] = encode(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> RunSummary:
        """Read summary.json's content (tolerant of older versions; see the module docstring)."""
        summary = super().from_dict({k: v for k, v in data.items() if k != "counts"})
        summary.task = summary.task or EVAL  # versions before the meta-eval wrote no task
        counts = data.get("counts")
        if isinstance(counts, dict) and counts:
            kind = MetaEvalCounts if data.get("task") == META_EVAL else EvalCounts
            summary.counts = kind.from_dict(counts)
        else:
            summary.counts = None
        return summary


def read_summary(run_dir: Path) -> RunSummary | None:
    """The summary.json of the run in `run_dir`; None when it is missing or not a JSON object
    (a run that has not finished, or a damaged file)."""
    try:
        data = json.loads((run_dir / RunSummary.FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return RunSummary.from_dict(data) if isinstance(data, dict) else None
