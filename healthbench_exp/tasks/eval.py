"""The eval (`task=eval`): sample replies (or take given ones), grade every criterion, score.

Each row is one (example, rollout): the model is asked once (unless the reply is given by
physicians or a file), then all the example's criteria are graded together, at most
`runner.max_parallel_judges` judge calls at once. Up to `runner.max_concurrent` rows run at once
(every row, with batched judge calls: each must reach its judge calls before a batch goes out).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from healthbench_exp.config.bridge import BridgeConfig
from healthbench_exp.config.protocol import ProtocolCheck, protocol_check
from healthbench_exp.config.schema import (
    CalibrationConfig,
    CompletionsConfig,
    CompletionSource,
    DatasetConfig,
    EndpointConfig,
    JudgeConfig,
    RunnerConfig,
    SamplingConfig,
    ScoringConfig,
    TaskConfig,
    TaskKind,
)
from healthbench_exp.core.completer import Completer
from healthbench_exp.core.counts import RunCounts
from healthbench_exp.core.endpoint_errors import BudgetExhausted, RequestFailed
from healthbench_exp.core.summary import Completions, RunSummary
from healthbench_exp.core.types import (
    Criterion,
    CriterionGrade,
    Example,
    ExampleResult,
    RowItem,
    WorkItem,
)
from healthbench_exp.data.completions import row_items
from healthbench_exp.data.example_rows import load_rows
from healthbench_exp.grading.grader import grade_criterion, render_conversation, rubric_item_text
from healthbench_exp.grading.scoring import example_metrics
from healthbench_exp.grading.verdict_watch import UnparseableWatch
from healthbench_exp.tasks.base import CallCounter, Clients, Juror, Measured
from healthbench_exp.tasks.bridge_result import bridged
from healthbench_exp.tasks.bridge_source import load_sources
from healthbench_exp.tasks.calibration_source import calibrated, load_source
from healthbench_exp.tasks.eval_summary import EvalTally, build_summary
from healthbench_exp.tasks.jury import juror_grades, jury_of
from healthbench_exp.tasks.length import effective_scoring, run_length_penalty
from healthbench_exp.tasks.records import RecordedRow, Records, records_to_continue

log = logging.getLogger(__name__)


@dataclass
class EvalTask:
    """The HealthBench eval over the configured dataset, as the engine runs it.

    `config_dict` is the resolved config as plain data: it is written as the summary's `config`.
    """

    dataset: DatasetConfig
    completions: CompletionsConfig
    sampling: SamplingConfig
    model: EndpointConfig
    judge: JudgeConfig
    runner: RunnerConfig
    scoring: ScoringConfig
    config_dict: dict[str, object]
    kind: str = "eval"
    unit: str = "ex"
    completions_info: dict[str, object] = field(default_factory=dict)  # set by `items`
    records: Records = field(default_factory=dict)  # set by `continue_from`
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)
    jury_members: Sequence[JudgeConfig] = ()  # the further judges' presets, in order
    bridge: BridgeConfig = field(default_factory=BridgeConfig)
    examples: Sequence[Example] = ()  # the dataset's examples, built as rows start: set by `items`

    @property
    def jury(self) -> list[str]:
        """The further judges' model names, in order (each reported as its own judge)."""
        return [member.name for member in self.jury_members]

    def continue_from(self, output_dir: Path) -> None:
        self.records = records_to_continue(output_dir, self.config_dict)

    def items(self) -> list[RowItem]:
        """Every row validated before the run's first request; each item names its example by
        position in `examples`, where `run_item` builds it when the row starts."""
        self.examples = load_rows(self.dataset)
        work, self.completions_info = row_items(
            self.examples,
            self.completions,
            self.sampling,
            system_message=self.model.system_message,
        )
        sampled = self.completions.source is CompletionSource.model
        rows = len({item.position for item in work})
        asked = self.sampling.num_examples
        if asked is not None and asked > rows:  # said once: the run is smaller than asked
            log.warning(
                "sampling.num_examples=%d: the data has %d rows; running all %d", asked, rows, rows
            )
        log.info(
            "%d examples x %d rollouts (%s replies): %d model calls, %d criteria to grade",
            rows,
            self.sampling.rollouts_per_example,
            self.completions.source.value,
            len(work) if sampled else 0,
            self.criteria(work),
        )
        return work

    def criteria(self, items: list[RowItem]) -> int:
        """The criteria of the rows `items` (each row's example's rubric), after `items()`."""
        per_example = getattr(self.examples, "criteria", None)  # `ExampleRows` counts them
        if per_example is None:
            return sum(len(self.examples[item.position].rubrics) for item in items)
        return sum(per_example[item.position] for item in items)

    def concurrency(self, rows: int) -> int:
        return self.runner.max_concurrent  # (a batched judge: every row at once, see the engine)

    async def run_item(self, row: RowItem, clients: Clients) -> ExampleResult:
        item = row.work_item(self.examples)  # the row's example is built as it starts
        return await run_example(
            item,
            clients.model,
            clients.judge,
            self.runner.max_parallel_judges,
            self.judge.max_parse_retries,
            clients.watch,
            prompt_order=self.judge.prompt_order.value,
            recorded=self.records.get((item.example.prompt_id, item.rollout)),
            jury=clients.jury,
            judge_name=self.judge.name,
        )

    def tally(self, counts: RunCounts, result: ExampleResult) -> None:
        counts.add(result)

    def protocol(self) -> ProtocolCheck:
        """The run's reference protocol and its deviations (`config.protocol`)."""
        sampled = self.completions.source is CompletionSource.model  # the model is sampled
        return protocol_check(
            TaskConfig(kind=TaskKind.eval),
            self.dataset,
            self.sampling,
            self.judge,
            self.scoring,
            self.model if sampled else None,
            bridge_runs=self.bridge.runs,
            jury=self.jury_members,
        )

    def summarizer(self, rows: int) -> EvalSummarizer:
        tally = EvalTally(
            rows,
            length=effective_scoring(self.scoring, self.dataset).length_penalty_per_500_chars
            is not None,
            repeats=self.sampling.rollouts_per_example > 1,
            jury=(self.judge.name, *self.jury) if self.jury else (),
            clusters=self.calibration.meta_eval_run is not None,
            bridge=bool(self.bridge.runs),
        )
        return EvalSummarizer(self, tally)

    def summarize(self, tally: EvalTally, measured: Measured) -> RunSummary:
        """The run's summary of the rows `tally` took in (see `tasks.eval_summary`)."""
        summary = build_summary(
            tally,
            self.runner,
            self.sampling,
            effective_scoring(self.scoring, self.dataset),
            self.judge,
            self.config_dict,
            measured,
            self.protocol(),
            self.jury,
        )
        penalty = run_length_penalty(self.scoring, self.dataset)
        summary.length_penalty = None if penalty is None else penalty.to_dict()
        summary.completions = Completions.from_dict(self.completions_info)
        members = [self.judge.name, *self.jury] if self.jury else []
        if members and summary.protocol is not None:
            summary.protocol = replace(
                summary.protocol,
                jury=members,
                grading=summary.protocol.grading
                + f"; every criterion also graded by the jury {', '.join(self.jury)} "
                "(figures in `jury`; the metrics are the judge's)",
            )
        summary.jury = jury_of(
            tally.jury_in_order(),
            members,
            effective_scoring(self.scoring, self.dataset),
            self.runner.bootstrap_samples,
            self.sampling.seed,
        )
        if self.completions.regrade_of is not None and summary.protocol is not None:
            summary.protocol.regrade_of = self.completions.regrade_of  # cli.regrade
        if self.calibration.meta_eval_run is not None:  # SPEC 7.3, beside the metrics
            source = load_source(self.calibration.meta_eval_run, self.judge)
            samples, seed = self.runner.bootstrap_samples, self.sampling.seed
            counts = tally.clusters_in_order()
            summary.calibrated = calibrated(counts, source, self.judge.name, samples, seed)
        if self.bridge.runs:  # beside the metrics, which stay the judge's
            sources = load_sources(self.bridge, self.judge)
            samples, seed = self.runner.bootstrap_samples, self.sampling.seed
            rows = tally.bridge_in_order()
            summary.bridged = bridged(
                rows, sources, self.judge.name, samples, seed, self.bridge.method.value
            )
        return summary

    def estimate(self, counter: CallCounter) -> int:
        examples = load_rows(self.dataset)
        rows, _ = row_items(
            examples, self.completions, self.sampling, system_message=self.model.system_message
        )
        for row in rows:
            item = row.work_item(examples)
            if item.error is not None:
                continue
            example = item.example
            rubric = [rubric_item_text(c) for c in example.rubrics]
            if item.completion is not None:
                sent = list(item.messages or example.prompt)
                reply: str | None = item.completion
            else:
                sent = counter.sent("model", list(example.prompt))
                reply = counter.cached("model", sent, f"rollout={item.rollout}")
                counter.model_call(sent, cached=reply is not None)
            if reply is None:  # grade a conversation ending in an empty reply, plus its length
                conversation = render_conversation([*sent, {"role": "assistant", "content": ""}])
                counter.judge_calls(
                    conversation,
                    self.model.expected_completion_tokens,
                    rubric,
                    False,
                    item.rollout,
                )
            else:
                conversation = render_conversation([*sent, {"role": "assistant", "content": reply}])
                counter.judge_calls(conversation, 0, rubric, True, item.rollout)
        return len(rows)


@dataclass
class EvalSummarizer:
    """One eval run's `tasks.base.Summarizer`: its rows into an `EvalTally` as they finish."""

    task: EvalTask
    tally: EvalTally

    def add(self, position: int, result: ExampleResult) -> None:
        self.tally.add(position, result)

    def summary(self, measured: Measured) -> RunSummary:
        return self.task.summarize(self.tally, measured)


async def run_example(
    item: WorkItem,
    model: Completer | None,
    judge: Completer,
    max_parallel_judges: int,
    max_parse_retries: int,
    watch: UnparseableWatch | None = None,
    prompt_order: str = "reference",
    recorded: RecordedRow | None = None,
    jury: Sequence[Juror] = (),
    judge_name: str = "judge",
) -> ExampleResult:
    """Get the reply (sampled, or given by the item) and grade every criterion concurrently,
    by the judge and (a jury, SPEC 7.1) by each further judge in `jury` (`judge_name`: the
    primary judge's model name, its key in the result's `jury`).

    `prompt_order` is the grader prompt's layout (`judge.prompt_order`): the reference's, or the
    cache-friendly shared-prefix-first one. `recorded`: what an earlier invocation of the run
    recorded of this row (`tasks.records`): its reply and verdicts are not asked again.
    """
    example, rollout = item.example, item.rollout
    given = item.completion is not None or item.error is not None
    if item.error is not None:
        return ExampleResult(
            example, rollout, list(example.prompt), None, [], error=item.error, sampled=False
        )
    if item.completion is not None:  # physician or file completions: nothing is sampled
        sent = list(item.messages or example.prompt)
        text = item.completion
    else:
        assert model is not None
        prompt = list(example.prompt)
        sent = model.messages_for(prompt)
        known_reply = recorded.reply(sent) if recorded is not None else None
        try:
            text = known_reply or (await model.complete(prompt, tag=f"rollout={rollout}")).text
        except RequestFailed as exc:
            return ExampleResult(example, rollout, sent, None, [], error=f"model: {exc}")
        except BudgetExhausted as exc:
            return ExampleResult(
                example, rollout, sent, None, [], error=f"not run: {exc}", not_run=True
            )
    conversation = render_conversation([*sent, {"role": "assistant", "content": text}])
    slots = asyncio.Semaphore(max_parallel_judges)

    async def grade(index: int, criterion: Criterion) -> CriterionGrade:
        known = recorded.grade(sent, text, index, criterion.text) if recorded else None
        if known is not None:
            return known
        async with slots:
            return await grade_criterion(
                judge,
                conversation,
                rubric_item_text(criterion),
                max_parse_retries,
                rollout,
                prefix_key=f"{example.prompt_id}:{rollout}",  # the criteria share the conversation
                watch=watch,
                order=prompt_order,
            )

    graded = await asyncio.gather(
        asyncio.gather(*(grade(i, c) for i, c in enumerate(example.rubrics))),
        *(
            juror_grades(
                juror,
                conversation,
                example.rubrics,
                rollout,
                max_parallel_judges,
                prompt_order,
                f"{example.prompt_id}:{rollout}",
                None if recorded is None else (recorded, sent, text),
            )
            for juror in jury
        ),
    )
    grades = list(graded[0])
    names = [judge_name, *(j.name for j in jury)] if jury else []
    by_judge = {name: list(judged) for name, judged in zip(names, graded, strict=False)}
    every = [g for judged in graded for g in judged]
    stopped = next((g for g in every if g.not_run), None)
    if stopped is not None:  # scored on some criteria only it would be wrong: leave it for resume
        return ExampleResult(
            example,
            rollout,
            sent,
            text,
            grades,
            error=stopped.error,
            not_run=True,
            sampled=not given,
            jury=by_judge,
        )
    metrics = example_metrics(
        example.example_tags, example.rubrics, [g.criteria_met for g in grades]
    )
    return ExampleResult(
        example, rollout, sent, text, grades, metrics=metrics, sampled=not given, jury=by_judge
    )
