"""The environment around the taskset: a one-reply harness, `load_environment` with the seed's
signature, `evaluate` from Python, and `make_dataset`, which gives the harness's results record.

- `HealthBenchHarness` (the taskset's bundled harness, so `vf-eval healthbench` needs no
  `--env.agent.harness.id`): one chat completion to the conversation, made in-process through
  the rollout's interception endpoint (no program to install). An empty or refused reply fails
  the rollout, as it fails a row of the harness.
- `make_dataset` turns scored rollouts into the rows of the harness's `results/` dataset
  (`output.files.results_record`, written by `output.files.write_results_dataset`), so one
  loader reads both. Rollouts that errored or have no score are left out, as the harness does.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

import verifiers.v1 as vf
from verifiers.v1.clients import EvalClientConfig
from verifiers.v1.runtimes import ProgramResult
from verifiers.v1.trace import WireTrace
from verifiers.v1.utils.trace_store import read_episodes

from healthbench_exp.core.types import ExampleResult
from healthbench_exp.grading.scoring import example_metrics
from healthbench_exp.integrations.verifiers.judge import HealthBenchTaskConfig
from healthbench_exp.integrations.verifiers.taskset import (
    HealthBenchTaskset,
    HealthBenchTasksetConfig,
    conversation,
    criterion_grades,
    example_of,
)
from healthbench_exp.output.dataset import results_record, write_results_dataset

if TYPE_CHECKING:
    import datasets
    from openai.types.chat import ChatCompletionMessageParam

TASKSET_ID = "healthbench"
Results = Iterable[vf.Episode] | Iterable[vf.Trace] | str | Path  # rollouts, or a vf-eval run dir


class HealthBenchHarnessConfig(vf.HarnessConfig):
    id: str = TASKSET_ID


class HealthBenchHarness(vf.Harness[HealthBenchHarnessConfig]):
    """One reply to the conversation (the seed's single-turn environment), made in-process."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> ProgramResult:
        import openai

        system, prompt = self.resolve_prompt(data)
        messages: list[ChatCompletionMessageParam] = (
            [{"role": "system", "content": system}] if system else []
        )
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:  # verifiers' messages dump to the chat API's message dicts
            messages += [
                cast("ChatCompletionMessageParam", m.model_dump(mode="json", exclude_none=True))
                for m in prompt or []
            ]
        async with openai.AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0) as client:
            reply = await client.chat.completions.create(model=ctx.model, messages=messages)
        choice = reply.choices[0] if reply.choices else None
        if choice is None or choice.finish_reason == "content_filter":
            reason = choice.finish_reason if choice else "no choices"
            return ProgramResult(1, "", f"refused reply (finish_reason={reason})")
        if not choice.message.content:
            return ProgramResult(1, "", f"empty reply (finish_reason={choice.finish_reason})")
        return ProgramResult(0, choice.message.content, "")


class HealthBenchEnvConfig(vf.EnvConfig):
    """One `agent` seat, by default our one-reply harness in the local runtime: it runs nothing
    but one HTTP request, so it needs no sandbox (the framework's default runtime is Prime's)."""

    agent: vf.AgentConfig = vf.AgentConfig(
        runtime=vf.SubprocessConfig(), max_turns=1, network_notice=False
    )


class HealthBenchEnv(vf.Env[HealthBenchEnvConfig]):
    """The single-agent env (as `vf.SingleAgentEnv`) with the seed's conveniences: `evaluate`
    and `make_dataset`."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await agents.agent.run(task)

    async def evaluate(
        self,
        model: str,
        base_url: str,
        api_key_var: str = "OPENAI_API_KEY",
        num_examples: int | None = None,
        rollouts_per_example: int = 1,
        sampling: Mapping[str, object] | None = None,
        max_concurrent: int = 32,
    ) -> list[vf.Episode]:
        """Run `rollouts_per_example` episodes of the first `num_examples` tasks (None: all)
        against an OpenAI-compatible `base_url`, in this process; the episodes, in task order."""
        taskset = self.taskset if num_examples is None else self.taskset.take(num_examples)
        ctx = vf.ModelContext(
            model=model,
            client=EvalClientConfig(base_url=base_url, api_key_var=api_key_var),
            sampling=vf.SamplingConfig(**(sampling or {})),
        )
        limit = asyncio.Semaphore(max_concurrent)
        async with self.serving():
            slots = [s for task in taskset for s in self.slots(task, rollouts_per_example)]
            return list(await asyncio.gather(*(self.run_slot(s, ctx, limit) for s in slots)))

    def make_dataset(self, results: Results, path: str | Path | None = None) -> datasets.Dataset:
        """The results dataset of `results` (see `make_dataset`)."""
        return make_dataset(results, path)


def example_results(results: Results) -> list[ExampleResult]:
    """The harness's ExampleResult of every scored rollout, in order; a run directory of
    `vf-eval` (its traces.jsonl) reads too. Each example's rollouts are numbered 0, 1, ..."""
    runs = read_episodes(Path(results), WireTrace) if isinstance(results, str | Path) else results
    traces: list[vf.Trace] = [
        t for r in runs for t in (r.traces if isinstance(r, vf.Episode) else [r])
    ]
    rollouts: dict[str, int] = {}
    out = []
    for trace in traces:
        grades = criterion_grades(trace.info)
        if not trace.ok or not grades or trace.metrics.get("score") is None:
            continue  # errored or unscored: the harness leaves such rows out of results/ too
        example = example_of(trace.task.data.model_dump(mode="json"))
        sent, reply = conversation(trace)
        met = [g.criteria_met for g in grades]
        rollout = rollouts.get(example.prompt_id, 0)
        rollouts[example.prompt_id] = rollout + 1
        metrics = example_metrics(example.example_tags, example.rubrics, met)
        out.append(ExampleResult(example, rollout, sent, reply, grades, metrics=metrics))
    return out


def make_dataset(results: Results, path: str | Path | None = None) -> datasets.Dataset:
    """The scored rollouts as a `datasets.Dataset` in the seed's record (SPEC section 5), row for
    row what the harness writes to `results/`; saved to `path` when given (`load_from_disk`)."""
    import datasets

    rows = example_results(results)
    if path is not None:
        write_results_dataset(Path(path), rows)
        return datasets.load_from_disk(str(path))
    with tempfile.TemporaryDirectory() as folder:
        write_results_dataset(Path(folder) / "results", rows)
        return datasets.load_from_disk(str(Path(folder) / "results"), keep_in_memory=True)


def records(results: Results) -> list[dict[str, object]]:
    """The dataset's rows as plain dicts (`output.files.results_record`)."""
    return [results_record(r) for r in example_results(results)]


def load_environment(
    judge_model: str = HealthBenchTaskConfig.model_fields["judge_model"].default,
    difficulty: str = "all",
    judge_base_url: str | None = None,
    judge_api_key: str | None = None,
    make_dataset: bool = False,
    max_parallel_judges: int = HealthBenchTaskConfig.model_fields["max_parallel_judges"].default,
    **options: object,
) -> HealthBenchEnv:
    """The seed's `load_environment`, on the harness's data, grading and scoring.

    `options`: any other field of the taskset's config (`path`, `source`, `num_examples`,
    `system_message`, ...) or of its task config (`judge_reasoning_effort`, `max_parse_retries`,
    `length_penalty_per_500_chars`, ...). Nothing is sent until the env runs.
    """
    judge_fields = set(HealthBenchTaskConfig.model_fields) - set(vf.TaskConfig.model_fields)
    task_options = {k: v for k, v in options.items() if k in judge_fields}
    unknown = set(options) - judge_fields - set(HealthBenchTasksetConfig.model_fields)
    if unknown:
        raise TypeError(f"load_environment() got unknown arguments: {', '.join(sorted(unknown))}")
    task = HealthBenchTaskConfig(
        judge_model=judge_model,
        judge_base_url=judge_base_url,
        judge_api_key=judge_api_key,
        max_parallel_judges=max_parallel_judges,
        **task_options,
    )
    taskset = HealthBenchTasksetConfig(
        id=TASKSET_ID,
        task=task,
        difficulty=difficulty,
        make_dataset=make_dataset,
        **{k: v for k, v in options.items() if k not in judge_fields},
    )
    return HealthBenchEnv(HealthBenchEnvConfig(taskset=taskset))


__all__ = [
    "HealthBenchEnv",
    "HealthBenchHarness",
    "HealthBenchTaskset",
    "load_environment",
    "make_dataset",
]
