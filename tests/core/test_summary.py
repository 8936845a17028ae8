"""`RunSummary` is summary.json: every kind of run the CLI writes reads back into the typed record
and writes out byte for byte the same; an older summary (parts missing) still reads.

The summaries are real: `python -m healthbench_exp` in a subprocess on the bundled sample and
the built-in endpoint (an eval with W&B, one with two rollouts, physician replies and failures,
a meta-eval, and both stopped by their budget).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from healthbench_exp.core.run_config import RunConfig
from healthbench_exp.core.strict_json import dumps
from healthbench_exp.core.summary import (
    USAGE_FIELDS,
    BudgetState,
    EvalCounts,
    MetaEvalCounts,
    RoleUsage,
    RunSummary,
    Usage,
)
from tests.conftest import DemoRun
from tests.e2e.test_e2e import run_cli
from tests.output.test_tracking import wandb_env

RUNS = {
    "eval": ("experiment=demo",),
    "eval_repeats_failures": (
        "experiment=demo",
        "wandb=disabled",
        "sampling.num_examples=8",  # the parts, not the row count, are the point
        "sampling.rollouts_per_example=2",
        "offline_server.empty_reply_rate=0.3",
        "runner.max_failure_fraction=1.0",  # every row tried, however soon the first fails
        "scoring.length_penalty_per_500_chars=0.0147",
    ),
    "eval_physician": (
        "experiment=demo",
        "wandb=disabled",
        "sampling.num_examples=8",
        "completions=physician",
        "completions.group=1",
    ),
    "eval_partial": ("experiment=demo", "wandb=disabled", "budget.max_usd=0.05"),
    "meta_eval": ("experiment=demo", "task=meta_eval", "sampling.num_examples=10"),
    "meta_eval_partial": (
        "experiment=demo",
        "wandb=disabled",
        "task=meta_eval",
        "budget.max_usd=0.01",
    ),
}


@pytest.fixture(scope="module", params=list(RUNS))
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The summary.json of one real run (see RUNS)."""
    if request.param == "eval":  # the README's demo, which other tests read too
        demo: DemoRun = request.getfixturevalue("demo_run")
        assert demo.returncode == 0, demo.stderr
        return demo.directory / "summary.json"
    root = tmp_path_factory.mktemp(request.param)
    env = {**wandb_env(root), "HEALTHBENCH_CACHE_DIR": str(root / "cache")}
    result = run_cli(*RUNS[request.param], f"hydra.run.dir={root / 'run'}", env=env)
    assert result.returncode in (0, 3, 4), result.stderr  # completed, failed rows, partial
    return root / "run" / "summary.json"


def test_a_real_summary_round_trips_byte_for_byte(written: Path) -> None:
    text = written.read_text(encoding="utf-8")
    summary = RunSummary.from_dict(json.loads(text))
    assert dumps(summary.to_dict(), indent=2, ensure_ascii=False) == text
    assert RunSummary.from_dict(summary.to_dict()) == summary


def test_a_real_summary_reads_as_typed_parts(written: Path) -> None:
    data = json.loads(written.read_text(encoding="utf-8"))
    summary = RunSummary.from_dict(data)
    assert summary.task == data["task"]
    assert summary.usage is not None and summary.protocol is not None
    assert isinstance(summary.usage.model, RoleUsage) and summary.usage.invocations
    assert summary.protocol.harness_version == data["protocol"]["harness_version"]
    assert summary.demo is True and summary.partial == bool(data["partial"])
    assert summary.budget_stopped == bool(data["budget"] and data["budget"]["stopped"])
    if summary.is_meta_eval:
        counts = summary.meta_counts
        assert isinstance(counts, MetaEvalCounts) and counts.rows == data["counts"]["rows"]
        assert summary.agreement is not None and summary.by_category is not None
        assert summary.repeats is None and summary.consensus is None
    else:
        counts_e = summary.eval_counts
        assert isinstance(counts_e, EvalCounts)
        assert counts_e.rows_scored == data["counts"]["rows_scored"]
        assert summary.completions is not None
        assert summary.completions.source == data["completions"]["source"]
        assert [f.prompt_id for f in summary.failures] == [f["prompt_id"] for f in data["failures"]]
    if data["wandb"] is not None:
        assert summary.wandb is not None and summary.wandb.run_id == data["wandb"]["run_id"]
    # the config's typed record: what sweeps, comparisons and the run-directory check read
    settings, config = summary.settings, data["config"]
    assert settings.task is not None and settings.task.kind == config["task"]["kind"]
    assert settings.judge is not None and settings.judge.name == config["judge"]["name"]
    assert settings.judge.builtin is True and settings.judge.price is not None
    assert settings.judge.price.as_of == config["judge"]["price"]["as_of"]
    assert settings.dataset is not None
    assert settings.dataset.difficulty == config["dataset"]["difficulty"]
    assert settings.sampling is not None and settings.sampling.seed == config["sampling"]["seed"]


def test_the_config_record_reads_missing_parts_as_none_and_ignores_unknown_keys() -> None:
    settings = RunConfig.of({"judge": {"name": "j", "new_option": 1}, "unknown": {"a": 1}})
    assert settings.judge is not None and settings.judge.name == "j"
    assert settings.judge.temperature is None and settings.judge.price is None
    assert settings.model is None and settings.sampling is None and settings.completions is None
    assert RunConfig.of(None) == RunConfig.of({}) == RunConfig(None, None, None, None, None, None)


def test_the_runs_cover_every_part() -> None:
    """The parametrized runs above reach every optional part (guarding the round trip)."""
    assert any("rollouts_per_example=2" in a for a in RUNS["eval_repeats_failures"])
    assert any("budget.max_usd" in a for a in RUNS["eval_partial"])
    assert any("task=meta_eval" in a for a in RUNS["meta_eval_partial"])


def test_a_dry_run_writes_an_estimate_and_no_summary(tmp_path: Path) -> None:
    result = run_cli("experiment=demo", "dry_run=true", f"hydra.run.dir={tmp_path}")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "estimate.json").is_file()
    assert not (tmp_path / "summary.json").exists()


def _role(requests: int) -> dict[str, object]:
    return {name: requests if name == "requests" else 0 for name in USAGE_FIELDS} | {
        "cost_usd": 0.5
    }


def test_an_older_summary_reads_with_missing_parts_as_none() -> None:
    """A summary from before `task`, `partial`, `completions`, `wandb`, budgets and
    per-invocation usage: what it lacks reads as None, what it has as written."""
    old = {
        "metrics": {"overall_score": 0.5},
        "counts": {"rows": 3, "rows_scored": 2, "rows_failed": 1, "ungraded_criteria": 0},
        "consensus": [],
        "failures": [{"prompt_id": "p1", "rollout": 0, "error": "empty reply"}],
        "usage": {"model": _role(3), "judge": _role(9), "total_cost_usd": 1.0},
        "protocol": {"reference": True, "grading": "x"},
        "config": {"model": {"name": "m"}},
        "unknown_future_part": 1,
    }
    summary = RunSummary.from_dict(old)
    assert summary.task == "eval" and not summary.is_meta_eval
    counts = summary.eval_counts
    assert (counts.rows, counts.rows_scored, counts.rows_not_run) == (3, 2, None)
    assert summary.partial is None and summary.demo is None and summary.completions is None
    assert summary.wandb is None and summary.budget is None and summary.repeats is None
    assert summary.usage is not None and summary.usage.invocations is None
    assert summary.usage.judge.requests == 9 and summary.usage.model.price is None
    assert summary.protocol is not None and summary.protocol.harness_version is None
    assert summary.failures[0].completion_id is None
    written = summary.to_dict()
    assert "partial" not in written and "completions" not in written
    assert "unknown_future_part" not in written
    assert written["failures"] == old["failures"]


def test_a_summary_without_counts_reads_with_counts_none() -> None:
    assert RunSummary.from_dict({"task": "eval", "metrics": {}, "counts": {}}).counts is None


def test_to_dict_writes_a_task_s_own_parts_and_only_those() -> None:
    role = RoleUsage.from_dict(_role(1))
    eval_summary = RunSummary(
        task="eval",
        metrics={"score": 0.1},
        counts=None,
        usage=Usage(model=role, judge=role, total_cost_usd=1.0),
        budget=BudgetState(max_usd=1.0, spent_usd=0.5, stopped=False, requests_not_sent=0),
    )
    keys = list(eval_summary.to_dict())
    assert keys == [
        "task", "metrics", "counts", "repeats", "consensus", "failures", "usage", "budget",
        "protocol", "config", "wandb",
    ]  # fmt: skip
    assert "invocations" not in eval_summary.to_dict()["usage"]
    assert "price" not in eval_summary.to_dict()["usage"]["model"]
    meta = RunSummary(task="meta_eval", metrics={}, counts=None, partial=False, demo=True)
    assert list(meta.to_dict()) == [
        "task", "metrics", "counts", "by_category", "agreement", "failures", "usage", "budget",
        "protocol", "config", "partial", "demo", "wandb",
    ]  # fmt: skip
    assert not meta.budget_stopped


def test_the_typed_counts_name_the_wrong_task() -> None:
    summary = RunSummary(task="meta_eval", metrics={}, counts=None)
    with pytest.raises(AssertionError, match="not an eval's counts"):
        _ = summary.eval_counts


def test_headline_and_the_protocol_s_name_and_deviations_round_trip() -> None:
    protocol = {
        "reference": False, "grading": "g", "grader_template_sha256": "s",
        "prompt_order": "reference", "judge_transport": "chat.completions",
        "harness_version": "v", "name": "healthbench-professional",
        "deviations": ["judge.name: gpt-5.4-2026-03-05 -> offline-judge"],
    }  # fmt: skip
    data = {"task": "eval", "metrics": {}, "counts": {}, "headline": "length_adjusted_score"}
    summary = RunSummary.from_dict({**data, "protocol": protocol})
    assert summary.headline == "length_adjusted_score"
    assert summary.protocol is not None and summary.protocol.deviations == protocol["deviations"]
    written = summary.to_dict()
    assert list(written)[:4] == ["task", "metrics", "counts", "headline"]
    assert written["protocol"] == protocol
    older = {k: v for k, v in protocol.items() if k not in ("name", "deviations")}
    old = RunSummary.from_dict({"task": "eval", "metrics": {}, "counts": {}, "protocol": older})
    assert old.headline is None and old.protocol is not None and old.protocol.name is None
    assert "headline" not in old.to_dict() and old.to_dict()["protocol"] == older
