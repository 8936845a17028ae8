"""What a run is, in words a reader needs before its numbers: the header of every report.

`run_context` turns a run's own records (summary.json, status.json, or a dry run's estimate, and
the resolved config they hold) into a `RunContext`: model, judge, data and count, sampling, date,
cost, protocol, and banners. Banners flag results that must not be read as a finished,
meaningful benchmark run:

- DEMO: the built-in endpoint wrote the replies or the verdicts (`model.builtin` /
  `judge.builtin`); its scores mean nothing.
- PARTIAL: the budget stopped the run (`budget.stopped` in summary.json, or status `partial`),
  or its scores cover only part of it (`partial` in summary.json: a dead endpoint stopped it,
  or more rows failed or criteria went ungraded than `runner.max_failure_fraction`): `N of M
  examples scored (...)`.
- any other final status than `completed` (failed, interrupted, ungraded, ...), upper-cased,
  with the reason status.json gives. `running` is not final: a report written at the end of a
  run, before its final status, shows none, and is refreshed when the status is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from healthbench_exp.core.run_config import DatasetPart, EndpointPart, RunConfig, SamplingPart
from healthbench_exp.core.run_end import Status
from healthbench_exp.core.summary import Completions, EvalCounts, RunSummary
from healthbench_exp.core.usage_record import is_illustrative

NOT_FINAL = (Status.RUNNING, None)


@dataclass(frozen=True)
class Banner:
    """A warning shown above a report's numbers: `label` (DEMO, PARTIAL, ...) and why."""

    label: str
    reason: str


@dataclass(frozen=True)
class RunContext:
    """The facts a report opens with; None where a run's records do not say."""

    task: str  # eval | meta_eval
    replies: str  # the model's name, or where the graded replies came from
    model: str | None
    judge: str | None
    data: str  # difficulty and source, e.g. "hard (hf)"
    count: str  # e.g. "24 examples x 1 rollout"
    sampling: str  # e.g. "T=0.5, max_tokens=2048, seed 0"
    date: str | None  # when the results were written, UTC
    cost_usd: float | None
    protocol: str  # "reference" or what differs from it
    banners: list[Banner] = field(default_factory=list)
    # the roles whose cost came from an illustrative (placeholder) price, e.g. the demo's
    illustrative: tuple[str, ...] = ()
    # requests a stop abandoned in flight (sent, never answered: maybe billed), over the run's
    # invocations, and their estimated cost (None: unknown), apart from `cost_usd`
    abandoned: int = 0
    abandoned_cost_usd: float | None = None

    @property
    def cost_note(self) -> str:
        """` (illustrative prices)` after a cost from placeholder prices; "" otherwise."""
        return " (illustrative prices)" if self.illustrative and self.cost_usd else ""

    def title(self, flags: bool = True) -> str:
        """One line naming the run: banners (with `flags`), replies, judge, data, temperature,
        date and cost."""
        parts = [
            f"{self.replies} judged by {self.judge}" if self.task == "eval" else f"{self.judge}",
            self.data,
            self.sampling.split(",")[0],
            self.date or "",
            "cost unknown" if self.cost_usd is None else f"${self.cost_usd:.2f}{self.cost_note}",
        ]
        marks = " ".join(f"[{b.label}]" for b in self.banners) if flags else ""
        return (f"{marks} " if marks else "") + " · ".join(p for p in parts if p)

    def fields(self) -> list[tuple[str, str]]:
        """(label, value) pairs for a header table."""
        cost = "unknown (a price is not set)" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        if self.cost_note:
            cost += (
                f" (illustrative {' and '.join(self.illustrative)} prices, not a provider's "
                "bill: see price.as_of)"
            )
        if self.abandoned:
            cost += f"; + {abandoned_text(self.abandoned, self.abandoned_cost_usd)}"
        return [
            ("model" if self.task == "eval" else "task", self.replies),
            ("judge", self.judge or "?"),
            ("data", f"{self.data}; {self.count}"),
            ("sampling", self.sampling),
            ("date", self.date or "unknown"),
            ("cost", cost),
            ("protocol", self.protocol),
        ]


def abandoned_text(count: int, estimate: float | None) -> str:
    """`about $0.0012 for 2 requests abandoned in flight (estimated: ...)`: what a stop left
    unanswered, apart from the measured cost."""
    about = "an unknown sum" if estimate is None else f"about ${estimate:.4f}"
    return (
        f"{about} for {count} request{'s' * (count != 1)} abandoned in flight "
        "(estimated: sent, never answered)"
    )


def _part(config: RunConfig, role: str) -> EndpointPart:
    """`model` or `judge` of `config` (every field None when the config has no such section)."""
    return config.endpoint(role) or EndpointPart.from_dict({})


def replies_label(completions: Completions | None, config: RunConfig) -> str:
    """Whose replies a run graded: the model's name, or the physician / file source."""
    if completions is None or completions.source == "model":
        return str(_known(_part(config, "model").name))
    if completions.source == "file":
        return f"replies from {completions.path}"
    return f"{completions.source} completions, Group {completions.group}"


def _text(row: Mapping[str, object], key: str) -> str:
    """`row[key]` of decoded JSON as text ("" when missing or null)."""
    value = row.get(key)
    return "" if value is None else str(value)


def _known(value: object) -> object:
    return "?" if value is None else value


def _g(value: object) -> str:
    """A number in its shortest form (0, 0.7); `?` when unknown; anything else as it is."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    return "?" if value is None else str(value)


def data_label(config: RunConfig) -> str:
    """The data a run read: a file, or its difficulty and source."""
    dataset = config.dataset or DatasetPart.from_dict({})
    if dataset.path:
        return f"file {dataset.path}"
    return f"{_known(dataset.difficulty)} ({_known(dataset.source)})"


def sampling_label(config: RunConfig, task: str = "eval") -> str:
    """Temperature, reply length, subset and seed, e.g. `T=0.5, max_tokens=2048, seed 0`
    (for a meta-eval, the judge's temperature: no replies are sampled)."""
    sampling = config.sampling or SamplingPart.from_dict({})
    parts = [f"T={_g(sampling.temperature)}", f"max_tokens={sampling.max_tokens}"]
    if task == "meta_eval":
        parts = [f"judge T={_g(_part(config, 'judge').temperature)}"]
    elif _part(config, "model").reasoning:
        parts = ["reasoning model (no temperature sent)"]
    if sampling.num_examples is not None:
        parts.append(f"num_examples={sampling.num_examples}")
    if (sampling.rollouts_per_example or 1) > 1:
        parts.append(f"{sampling.rollouts_per_example} rollouts")
    parts.append(f"seed {_known(sampling.seed)}")
    return ", ".join(parts)


def count_label(summary: RunSummary | None) -> str:
    """How much was graded, e.g. `24 examples x 1 rollout (24 rows)`."""
    counts = summary.counts if summary is not None else None
    if summary is not None and summary.is_meta_eval:
        rows, graded = (counts.rows, summary.meta_counts.rows_graded) if counts else (None, None)
        return f"{_known(rows)} rows, {_known(graded)} graded"
    if counts is None:
        return "not run"
    assert isinstance(counts, EvalCounts)
    rollouts = 1 if counts.rollouts_per_example is None else counts.rollouts_per_example
    return (
        f"{_known(counts.examples)} examples x {rollouts} rollout{'s' * (rollouts != 1)} "
        f"({_known(counts.rows_scored)} of {_known(counts.rows)} rows scored)"
    )


def is_demo(config: RunConfig, reply_source: str = "model") -> bool:
    """True when the built-in endpoint wrote the verdicts, or the graded replies."""
    model_builtin = bool(_part(config, "model").builtin) and reply_source == "model"
    return model_builtin or bool(_part(config, "judge").builtin)


def banners(
    config: RunConfig,
    summary: RunSummary | None,
    status: Mapping[str, object] | None,
) -> list[Banner]:
    """DEMO, PARTIAL and non-completed status banners (see the module docstring)."""
    completions = summary.completions if summary is not None else None
    out = []
    if is_demo(config, completions.source if completions else "model"):
        out.append(Banner("DEMO", "built-in offline endpoint: the scores mean nothing"))
    status = status or {}
    state = status.get("status")
    if (summary is not None and summary.budget_stopped) or state == Status.PARTIAL:
        counts = summary.counts if summary is not None else None
        not_run = counts.rows_not_run if counts is not None else None
        reason = _text(status, "error") or (
            f"budget reached; {not_run} rows not run" if not_run is not None else "budget reached"
        )
        out.append(Banner("PARTIAL", reason))
        return out
    if summary is not None and summary.partial:
        # stopped early (a dead endpoint), or too much failed or ungraded: the scores are partial
        out.append(Banner("PARTIAL", f"{scored_of(summary)}; the scores cover those only"))
    if state not in (*NOT_FINAL, Status.COMPLETED):
        out.append(Banner(str(state).upper(), _text(status, "error") or str(state)))
    return out


def scored_of(summary: RunSummary) -> str:
    """`N of M examples scored (...)`: how much of a partial run its scores cover (a
    meta-eval's: `N of M rows graded (...)`)."""
    if summary.is_meta_eval:
        meta = summary.meta_counts
        return (
            f"{meta.rows_graded} of {meta.rows} rows graded ({meta.rows_not_run} not run, "
            f"{meta.rows_failed} failed)"
        )
    counts = summary.eval_counts
    return (
        f"{counts.rows_scored} of {counts.rows} examples scored ({counts.rows_not_run} not "
        f"run, {counts.rows_failed} failed, {counts.ungraded_criteria} of {counts.criteria} "
        "criteria ungraded)"
    )


def protocol_label(summary: RunSummary | None) -> str:
    """`<set> reference` or `NOT the <set> reference protocol: <every deviation>`; for a summary
    written before protocols were named, `reference: <grading>` or the grading description
    naming what differs from the reference."""
    protocol = summary.protocol if summary is not None else None
    if protocol is None:
        return "unknown"
    if protocol.name is not None:
        if protocol.reference:
            return f"{protocol.name} reference"
        deviations = "; ".join(protocol.deviations or [])
        return f"NOT the {protocol.name} reference protocol: {deviations}"
    grading = "" if protocol.grading is None else str(protocol.grading)
    return f"reference: {grading}" if protocol.reference else grading


def utc_date(timestamp: float | None) -> str | None:
    """`YYYY-MM-DD HH:MM UTC` of a POSIX time."""
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def run_context(
    summary: RunSummary | None,
    status: Mapping[str, object] | None = None,
    config: Mapping[str, object] | None = None,
    written_at: float | None = None,
) -> RunContext:
    """The context of one run from its records; `config` defaults to the one summary.json holds
    (a dry run or a failed job has none: pass the estimate's or `.hydra/config.yaml`'s)."""
    if config is None:
        config = (summary.config if summary is not None else None) or {}
    settings = RunConfig.of(config)
    task = (
        (summary.task if summary is not None else None)
        or (settings.task.kind if settings.task is not None else None)
        or "eval"
    )
    usage = summary.usage if summary is not None else None
    replies = replies_label(summary.completions if summary is not None else None, settings)
    return RunContext(
        task=str(task),
        replies="meta-eval (judge vs physicians)" if task == "meta_eval" else replies,
        model=_part(settings, "model").name,
        judge=_part(settings, "judge").name,
        data=data_label(settings),
        count=count_label(summary),
        sampling=sampling_label(settings, str(task)),
        date=utc_date(written_at),
        cost_usd=usage.total_cost_usd if usage is not None else None,
        abandoned=usage.abandoned() if usage is not None else 0,
        abandoned_cost_usd=usage.abandoned_cost_usd if usage is not None else None,
        protocol=protocol_label(summary),
        banners=banners(settings, summary, status),
        illustrative=tuple(
            role
            for role in ("model", "judge")
            if (price := _part(settings, role).price) is not None and is_illustrative(price.as_of)
        ),
    )
