"""What a task is to the engine: rows to run, how one row runs, and what the run amounts to.

A task (`tasks.eval.EvalTask`, `tasks.meta_eval.MetaEvalTask`) is an object built from the config
sections it needs; `engine.run.run` runs any task the same way: it loads the task's `items()`
while the endpoints start, runs `run_item` on each (at most `concurrency` at once) with the
endpoints in `Clients`, counts each result on the progress bar with `tally`, adds each to the
run's `summarizer` as it finishes (no whole-run list of results is kept: a summarizer keeps what
the summary needs of a row, in compact running form), asks it for the summary with the measured
request counters, and for a dry run lets `estimate` count the calls the rows would make.
Adding a task means writing one such class, never a pipeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from healthbench_exp.config.protocol import ProtocolCheck
from healthbench_exp.config.schema import Api, JudgeConfig
from healthbench_exp.core.completer import Completer
from healthbench_exp.core.counts import RunCounts
from healthbench_exp.core.protocol_record import Protocol as ProtocolRecord
from healthbench_exp.core.record import Record
from healthbench_exp.core.summary import BudgetState, RunSummary
from healthbench_exp.core.version import __version__
from healthbench_exp.grading.grader import template_sha256
from healthbench_exp.grading.verdict_watch import UnparseableWatch

Item = TypeVar("Item")
Result = TypeVar("Result")
Result_contra = TypeVar("Result_contra", contravariant=True)


@dataclass(frozen=True)
class Juror:
    """A further judge of a jury (SPEC 7.1): its model name, its Completer, its parse retries."""

    name: str
    judge: Completer
    max_parse_retries: int


@dataclass(frozen=True)
class Clients:
    """What one row runs with: the model's Completer (None when no reply is sampled), the
    judge's, the run's unparseable-verdict watch (the primary judge's) and the further judges
    of a jury (the roles: `model.roles`)."""

    model: Completer | None
    judge: Completer
    watch: UnparseableWatch
    jury: tuple[Juror, ...] = ()  # the further judges (`jury=[...]`), in order


@dataclass
class RoleCounters(Record):
    """One role's counters in `Measured.endpoints` (`model.endpoint_stats.EndpointStats` as plain
    data), the parts the summaries read."""

    requests: int
    cache_hits: int
    prompt_tokens: int
    cached_prompt_tokens: int
    completion_tokens: int
    peak_in_flight: int
    rate_limited: int
    lowest_limit: int
    errors: dict[str, int]


@dataclass(frozen=True)
class Measured:
    """What the engine measured of one invocation, for the summary.

    `endpoints`: per role (`model`, `judge`) the endpoint's counters as plain data, plus
    `evaluation_s` (first request to last reply) and `budget` (None without `budget.max_usd`),
    read through `role`, `evaluation_s` and `budget`; `usage`: `model.costs.usage_summary` of
    those counters; `wall_time_s`: the whole invocation.
    """

    endpoints: dict[str, Any]  # loose until tasks/meta_eval.py reads it via `role`, `budget`
    usage: dict[str, object]
    wall_time_s: float

    def role(self, name: str) -> RoleCounters:
        """`name`'s counters (every role of the run has them; KeyError for another)."""
        counters = self.endpoints[name]
        assert isinstance(counters, Mapping), f"{name}'s counters are a dict"
        return RoleCounters.from_dict(counters)

    @property
    def evaluation_s(self) -> float:
        """Seconds from the first request to the last reply."""
        seconds = self.endpoints["evaluation_s"]
        assert isinstance(seconds, int | float), "evaluation_s is a number"
        return float(seconds)

    @property
    def budget(self) -> BudgetState | None:
        """The invocation's spend against `budget.max_usd` (None without one)."""
        budget = self.endpoints.get("budget")
        return BudgetState.from_dict(budget) if isinstance(budget, Mapping) else None


class CallCounter(Protocol):
    """The dry run's counter (`engine.estimate.Estimator`), as a task's `estimate` sees it."""

    def sent(self, role: str, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """The messages `role`'s endpoint would send for `messages` (its system message added)."""

    def cached(self, role: str, messages: list[dict[str, str]], tag: str) -> str | None:
        """The reply the response cache holds for this call, if any."""

    def model_call(self, messages: list[dict[str, str]], cached: bool) -> None:
        """Count one model call sending `messages` (free when `cached`)."""

    def judge_calls(
        self,
        conversation: str,
        reply_tokens: int,
        rubric_items: list[str],
        known: bool,
        rollout: int,
    ) -> None:
        """Count the judge calls on one conversation (see `Estimator.judge_calls`)."""


class Summarizer(Protocol[Result_contra]):
    """One run's summary, built as its rows finish (a task's `summarizer`)."""

    def add(self, position: int, result: Result_contra) -> None:
        """Take in one finished row; `position`: its index in the task's `items()` (rows
        finish out of order; the summary is of the rows in their order)."""

    def summary(self, measured: Measured) -> RunSummary:
        """The run's summary (summary.json) of the rows added and the measured counters; the
        engine then adds the run's whole usage, `partial`, `demo` and the sinks' fields."""


class Task(Protocol[Item, Result]):
    """One kind of run, as the engine drives it (see the module docstring)."""

    @property
    def kind(self) -> str:
        """summary.json's `task`: "eval" | "meta_eval"."""
        ...

    @property
    def unit(self) -> str:
        """The progress bar's unit: "ex" (examples) | "row"."""
        ...

    def items(self) -> list[Item]:
        """Load the data and return the rows to run, in order (DataError / ConfigError)."""

    def criteria(self, items: list[Item]) -> int:
        """How many criteria the rows `items` send to the judge, at most (the bound of the
        failure-fraction stop, `core.outcome.certainly_over`); called after `items()`."""

    def concurrency(self, rows: int) -> int:
        """How many of the `rows` rows may run at once."""

    def continue_from(self, output_dir: Path) -> None:
        """Take up what earlier invocations of this run recorded in `output_dir` (replies,
        verdicts: `tasks.records`), so a resume asks none of it again; called before the run
        writes its own records there."""

    async def run_item(self, item: Item, clients: Clients) -> Result:
        """Run one row; a failed request is a result (with its error), not an exception,
        except FatalEndpointError, which stops the run."""

    def tally(self, counts: RunCounts, result: Result) -> None:
        """Count a finished row into the run's counts (the progress bar's)."""

    def summarizer(self, rows: int) -> Summarizer[Result]:
        """A new `Summarizer` for one run of `rows` rows (a pilot and its run each have one)."""

    def estimate(self, counter: CallCounter) -> int:
        """Count the calls the rows would make (a dry run); return the number of rows."""


def protocol(judge: JudgeConfig, grading: str, check: ProtocolCheck) -> ProtocolRecord:
    """How the run graded, the reference bundle it is measured against (`check.name`) and every
    deviation from it; `grading` describes the method, naming the deviations when there are."""
    order = judge.prompt_order.value
    return ProtocolRecord(
        reference=check.reference,
        grading=grading
        + (
            "; NOT the reference protocol: " + "; ".join(check.deviations)
            if check.deviations
            else ""
        ),
        grader_template_sha256=template_sha256(order),
        prompt_order=order,
        judge_transport="batch"
        if judge.batch
        else ("responses" if judge.api is Api.responses else "chat.completions"),
        harness_version=__version__,
        name=check.name,
        deviations=list(check.deviations),
        data_file=check.data_file,
        endpoints=check.endpoints or None,
    )
