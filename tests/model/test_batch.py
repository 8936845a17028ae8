"""The non-reference grading paths: the Batch API judge and the shared-prefix-first prompt."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import replace
from pathlib import Path

import pytest

from healthbench_exp import run as run_eval
from healthbench_exp.builtin_endpoint.server import server_args
from healthbench_exp.config.checks import validate
from healthbench_exp.config.schema import BudgetConfig, ConfigError, PromptOrder
from healthbench_exp.grading.grader import (
    GRADER_TEMPLATE_SHA256,
    grader_prompt,
    grader_template,
    shared_prefix_first_template,
)
from tests import zygote
from tests.cli.test_run_lock import start_run
from tests.e2e.test_e2e import run_cli
from tests.engine.test_runner import verdicts
from tests.model.test_cache import endpoint_args
from tests.model.test_costs import priced_config
from tests.zygote import ForkedServer


def batch_config(base_url: str, **changes):
    config = priced_config(base_url, **changes)
    return replace(config, judge=replace(config.judge, batch=True, batch_poll_s=0.05))


def test_batch_judge_grades_like_synchronous_calls_at_half_price(
    loopback_server, tmp_path, monkeypatch
) -> None:
    sync_server, batch_server = loopback_server(), loopback_server()
    sync = run_eval(priced_config(sync_server.base_url), tmp_path / "sync", {})
    monkeypatch.setenv("HEALTHBENCH_CACHE_DIR", str(tmp_path / "batch-cache"))
    batched = run_eval(batch_config(batch_server.base_url), tmp_path / "batch", {})
    assert verdicts(tmp_path / "batch") == verdicts(tmp_path / "sync")
    assert batched["metrics"] == sync["metrics"]
    stats = batch_server.stats()
    assert stats["batches_created"] == 1 and stats["batch_requests"] == 106
    assert stats["requests"] == 24 + 106  # the model calls as usual, the judge calls in a batch
    usage, sync_usage = batched["usage"]["judge"], sync["usage"]["judge"]
    assert usage["requests"] == 106 and usage["prompt_tokens"] == sync_usage["prompt_tokens"]
    assert usage["cost_usd"] == sync_usage["cost_usd"] / 2
    assert batched["protocol"]["reference"] is False
    assert batched["protocol"]["judge_transport"] == "batch"
    assert "NOT the reference protocol" in batched["protocol"]["grading"]
    assert "judge.batch: false -> true" in batched["protocol"]["deviations"]
    sync_deviations = sync["protocol"]["deviations"]  # a test judge on the bundled sample
    assert not any(d.startswith("judge.batch") for d in sync_deviations)
    assert set(batched["protocol"]["deviations"]) - set(sync_deviations) == {
        "judge.batch: false -> true"
    }
    (record,) = json.loads((tmp_path / "batch" / "batches.json").read_text())
    assert record["requests"] == 106 and record["harvested"] and record["status"] == "completed"


def test_unparseable_batch_verdicts_are_resampled_in_another_batch(
    loopback_server, tmp_path
) -> None:
    server = loopback_server(malformed_rate=0.3, seed=2)
    summary = run_eval(batch_config(server.base_url), tmp_path, {})
    stats = server.stats()
    assert stats["malformed_injected"] > 0 and stats["batches_created"] >= 2
    assert summary["counts"]["ungraded_criteria"] == 0  # max_parse_retries=8 resampled them
    assert summary["counts"]["judge_replies"] == 106 + stats["malformed_injected"]


def test_a_killed_batch_run_resumes_by_batch_id_without_resubmitting(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {**os.environ, "HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")}
    with ForkedServer(server_args(batch_delay_s=4.0)) as server:
        args = [
            *endpoint_args(server.base_url), "judge.batch=true", "judge.batch_poll_s=0.1",
            f"hydra.run.dir={run_dir}",
        ]  # fmt: skip
        process = zygote.spawn(*args, env=env)
        deadline = time.monotonic() + 60
        while not (run_dir / "batches.json").exists():
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)  # killed while its batch is in progress
        process.wait(timeout=30)
        (pending,) = json.loads((run_dir / "batches.json").read_text())
        assert not pending.get("harvested")
        resumed = run_cli(
            f"resume={run_dir}", env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")}
        )
        assert resumed.returncode == 0, resumed.stderr
        with open_stats(server.base_url) as stats:
            assert stats["batches_created"] == 1  # the resumed run waited for the same batch
    (record,) = json.loads((run_dir / "batches.json").read_text())
    assert record["id"] == pending["id"] and record["harvested"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["rows_scored"] == 24 and summary["counts"]["ungraded_criteria"] == 0
    # the harvested batch's judge calls are paid by the resume, once: not also replayed
    judge = summary["usage"]["judge"]
    assert judge["requests"] == pending["requests"] and judge["cache_hits"] == 0, judge
    assert judge["replayed_prompt_tokens"] == 0


class open_stats:
    def __init__(self, base_url: str) -> None:
        import urllib.request

        self.response = urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats")

    def __enter__(self) -> dict:
        return json.loads(self.response.read())

    def __exit__(self, *exc: object) -> None:
        self.response.close()


def test_shared_prefix_first_moves_only_the_rubric_item() -> None:
    official, reordered = grader_template(), shared_prefix_first_template()
    assert reordered.endswith("# Rubric item\n<<rubric_item>>")
    assert sorted(official.splitlines()) == sorted(reordered.splitlines())  # the same words
    conversation = "user: hi\n\nassistant: hello"
    a = grader_prompt(conversation, "[5] Greets", "shared_prefix_first")
    b = grader_prompt(conversation, "[-3] Is rude", "shared_prefix_first")
    # everything but the rubric item is a prefix both calls share
    assert shared_prefix(a, b) >= len(a) - len("[5] Greets")
    reference = grader_prompt(conversation, "[5] Greets")
    other = grader_prompt(conversation, "[-3] Is rude")
    assert shared_prefix(reference, other) < len(reference) // 2


def shared_prefix(a: str, b: str) -> int:
    """Characters the two strings share from their start."""
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def test_shared_prefix_first_caches_more_and_is_labelled(loopback_server, tmp_path) -> None:
    cached = {}
    for order in PromptOrder:
        server = loopback_server()
        config = priced_config(server.base_url)
        judge = replace(config.judge, prompt_cache_key=True, prompt_order=order)
        summary = run_eval(replace(config, judge=judge), tmp_path / order.value, {})
        usage = summary["usage"]["judge"]
        cached[order] = usage["cached_prompt_tokens"] / usage["prompt_tokens"]
        assert summary["protocol"]["prompt_order"] == order.value
        moved = "judge.prompt_order: reference -> shared_prefix_first"
        assert (moved in summary["protocol"]["deviations"]) is (order is not PromptOrder.reference)
        if order is PromptOrder.reference:
            assert summary["protocol"]["grader_template_sha256"] == GRADER_TEMPLATE_SHA256
        else:
            assert summary["protocol"]["grader_template_sha256"] != GRADER_TEMPLATE_SHA256
    assert cached[PromptOrder.shared_prefix_first] > cached[PromptOrder.reference] + 0.2


def test_a_budget_cannot_cap_a_batch() -> None:
    config = batch_config("http://unused", budget=BudgetConfig(max_usd=1.0))
    with pytest.raises(ConfigError, match=r"budget\.max_usd cannot cap judge\.batch=true"):
        validate(config)


def test_two_runs_batching_the_same_calls_on_one_cache_pay_once(tmp_path: Path) -> None:
    """The Batch API path claims its cache misses as the direct path does (issue 50, item 2):
    two runs started together on one fresh cache, both `judge.batch=true`, pay each judge call
    once between them (before, both batched every call)."""
    with ForkedServer(server_args(latency_ms=100)) as server:
        args = [*endpoint_args(server.base_url), "judge.batch=true", "judge.batch_poll_s=0.1"]
        alone = run_cli(*args, f"cache.dir={tmp_path / 'own'}", f"hydra.run.dir={tmp_path / 'one'}")
        assert alone.returncode == 0, alone.stderr
        one_run = json.loads((tmp_path / "one" / "summary.json").read_text())["usage"]["judge"]

        shared = f"cache.dir={tmp_path / 'shared'}"
        runs = [tmp_path / "a", tmp_path / "b"]
        processes = [start_run(*args, shared, f"hydra.run.dir={run}") for run in runs]
        for process in processes:
            _out, err = process.communicate(timeout=300)
            assert process.returncode == 0, err
    both = [json.loads((run / "summary.json").read_text())["usage"]["judge"] for run in runs]
    assert sum(run["requests"] for run in both) == one_run["requests"]  # was twice as many
    assert [run["requests"] + run["cache_hits"] for run in both] == [one_run["requests"]] * 2


def test_a_quota_refused_batch_stops_the_run_with_its_summary_report_and_spend(
    tmp_path, isolated_cache
) -> None:
    """The Batch API answers the judge's batch 429 insufficient_quota: the run halts as at a
    refused call (no raw error, no `ungraded` end): it writes summary.json and report.html with
    what it spent, prints its partial table, ends `failed` (exit 2) with the resume; the resume,
    once the quota is back, finishes and counts both invocations' spend."""
    run_dir = tmp_path / "run"
    batched = ("judge.batch=true", "judge.batch_poll_s=0.05", "runner.max_retries=0")
    common = ("experiment=demo", "runner.progress=false", "wandb.mode=disabled", *batched)
    quota = ("offline_server.quota_exhausted=true", "offline_server.limited_role=judge")
    result = run_cli(*common, f"hydra.run.dir={run_dir}", "cache.enabled=false", *quota)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["partial"] is True and summary["counts"]["rows_not_run"] == 24
    assert summary["counts"]["ungraded_criteria"] == 0  # not run, not ungraded
    model_calls = summary["usage"]["model"]["requests"]
    assert model_calls == 24 and summary["usage"]["total_cost_usd"] > 0  # its spend
    assert "PARTIAL" in (run_dir / "report.html").read_text()
    assert result.stdout.strip().splitlines()[-1] == f"outputs: {run_dir}"
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: stopped early: judge endpoint ") and "insufficient_quota" in last
    assert f"spent ${summary['usage']['total_cost_usd']:.4f} in this invocation" in last, last
    assert last.endswith(f"then finish with: python -m healthbench_exp resume={run_dir}"), last
    recorded = json.loads((run_dir / "status.json").read_text())
    assert recorded["status"] == "failed" and recorded["error"] in last
    resumed = run_cli(f"resume={run_dir}", "offline_server.quota_exhausted=false")
    assert resumed.returncode == 0, resumed.stderr
    final = json.loads((run_dir / "summary.json").read_text())
    assert final["partial"] is False and final["counts"]["rows_not_run"] == 0
    assert len(final["usage"]["invocations"]) == 2
    assert final["usage"]["model"]["requests"] == 24  # the model replies were not paid again
    assert final["usage"]["judge"]["requests"] == 106
