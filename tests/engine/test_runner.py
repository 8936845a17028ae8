"""The runner end to end in-process, against real loopback servers with injected faults."""

from __future__ import annotations

import gc
import json
import time
import weakref
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import datasets
import pytest

from healthbench_exp import run as run_eval
from healthbench_exp.config.schema import (
    Config,
    ConfigError,
    DatasetConfig,
    DataSource,
    EndpointConfig,
    HttpClient,
    JudgeConfig,
    RunnerConfig,
    SamplingConfig,
    WandbConfig,
    WandbMode,
)
from healthbench_exp.core.endpoint_errors import FatalEndpointError
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.engine.loop import steady_collector
from healthbench_exp.engine.stops import FailureShareExceeded
from healthbench_exp.output.console import format_report
from tests.grading.test_scoring import reference_aggregate


def make_config(base_url: str, **changes) -> Config:
    config = Config(
        model=EndpointConfig(name="policy", base_url=base_url, api_key_env=None),
        judge=JudgeConfig(name="judge", base_url=base_url, api_key_env=None, max_parse_retries=8),
        dataset=DatasetConfig(difficulty="sample", source=DataSource.bundled, sha256=None),
        sampling=SamplingConfig(num_examples=8),
        # every row is tried (as the tests of failed rows and ungraded criteria expect): at the
        # default 0.01 the failure-fraction stop would end such a run at its first failure if a
        # row had not started yet, which depends on the machine's load; its own tests set it
        runner=RunnerConfig(
            progress=False, max_retries=6, bootstrap_samples=100, max_failure_fraction=1.0
        ),
        wandb=WandbConfig(mode=WandbMode.disabled),
    )
    return replace(config, **changes)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def verdicts(output: Path) -> dict:
    return {
        (r["prompt_id"], r["rollout"], r["criterion_index"]): r["criteria_met"]
        for r in read_jsonl(output / "per_criterion.jsonl")
    }


def test_scores_equal_the_reference_computed_from_the_verdicts(loopback_server, tmp_path) -> None:
    server = loopback_server()
    summary = run_eval(make_config(server.base_url, sampling=SamplingConfig()), tmp_path, {})
    rows: dict = defaultdict(list)
    tags = {}
    for r in read_jsonl(tmp_path / "per_criterion.jsonl"):
        rows[(r["prompt_id"], r["rollout"])].append((r["points"], r["tags"], r["criteria_met"]))
    for e in read_jsonl(tmp_path / "examples.jsonl"):
        tags[(e["prompt_id"], e["rollout"])] = e["example_tags"]
    expected = reference_aggregate([(tags[key], graded) for key, graded in rows.items()])
    metrics = summary["metrics"]
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value, abs=1e-12), name
    assert summary["counts"]["rows"] == 24 and summary["counts"]["ungraded_criteria"] == 0
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["metrics"] == metrics


@pytest.mark.parametrize("http_client", list(HttpClient))
def test_faults_are_retried_to_the_same_result(loopback_server, tmp_path, http_client) -> None:
    clean = loopback_server()
    faulty = loopback_server(error_rate=0.1, malformed_rate=0.1, latency_ms=5, jitter_ms=5, seed=3)
    everything = SamplingConfig()  # 24 examples, 106 judge calls: faults of both kinds occur
    a = run_eval(make_config(clean.base_url, sampling=everything), tmp_path / "clean", {})
    config = make_config(faulty.base_url, sampling=everything)
    config = replace(config, runner=replace(config.runner, http_client=http_client))
    b = run_eval(config, tmp_path / "faulty", {})
    stats = faulty.stats()
    assert stats["errors_injected"] > 0 and stats["malformed_injected"] > 0
    # every injected error was seen and retried through this transport, 429s counted apart
    paid = b["counts"]["model_requests"] + b["counts"]["judge_requests"]
    assert paid + stats["errors_injected"] == stats["requests"]
    assert sum(b["counts"]["rate_limited"].values()) > 0
    assert b["counts"]["ungraded_criteria"] == 0 and b["counts"]["rows_failed"] == 0
    assert verdicts(tmp_path / "clean") == verdicts(tmp_path / "faulty")
    assert a["metrics"] == b["metrics"]
    assert b["counts"]["judge_replies"] > a["counts"]["judge_replies"]  # parse retries happened


def test_unparseable_judge_leaves_every_criterion_ungraded(loopback_server, tmp_path) -> None:
    server = loopback_server(malformed_rate=1.0)
    config = make_config(server.base_url, sampling=SamplingConfig(num_examples=3))
    # no early stop (see test_verdicts): every criterion is tried and left ungraded
    judge = replace(config.judge, max_parse_retries=1, early_stop_unparseable=0)
    config = replace(config, judge=judge)
    summary = run_eval(config, tmp_path, {})
    counts = summary["counts"]
    assert counts["ungraded_criteria"] == counts["criteria"] > 0
    assert counts["rows_unscorable"] == 3 and counts["rows_scored"] == 0
    assert summary["metrics"] == {}
    assert len(datasets.load_from_disk(str(tmp_path / "results"))) == 0
    rows = read_jsonl(tmp_path / "per_criterion.jsonl")
    assert all(r["criteria_met"] is None and "no valid verdict" in r["error"] for r in rows)
    assert server.stats()["judge_requests"] == 2 * counts["criteria"]


def test_empty_model_reply_fails_the_example_not_graded(loopback_server, tmp_path) -> None:
    server = loopback_server(empty_reply_rate=1.0)
    summary = run_eval(
        make_config(server.base_url, sampling=SamplingConfig(num_examples=4)), tmp_path, {}
    )
    assert summary["counts"]["rows_failed"] == 4
    assert all("empty reply" in f["error"] for f in summary["failures"])
    assert server.stats()["judge_requests"] == 0
    examples = read_jsonl(tmp_path / "examples.jsonl")
    assert all(e["score"] is None and e["error"] for e in examples)


def test_missing_api_key_fails_before_any_request(loopback_server, tmp_path, monkeypatch) -> None:
    server = loopback_server()
    monkeypatch.delenv("HB_TEST_MISSING_KEY", raising=False)
    config = make_config(server.base_url)
    config = replace(config, judge=replace(config.judge, api_key_env="HB_TEST_MISSING_KEY"))
    with pytest.raises(ConfigError, match="set the environment variable HB_TEST_MISSING_KEY"):
        run_eval(config, tmp_path, {})
    assert server.stats()["requests"] == 0


def test_unreachable_endpoint_fails_fast(tmp_path) -> None:
    started = time.monotonic()
    with pytest.raises(FatalEndpointError, match="unreachable"):
        run_eval(make_config("http://127.0.0.1:9/v1"), tmp_path, {})
    assert time.monotonic() - started < 10


def test_rollouts_flatten_into_rows_and_dataset(loopback_server, tmp_path) -> None:
    server = loopback_server()
    sampling = SamplingConfig(num_examples=5, rollouts_per_example=3)
    summary = run_eval(make_config(server.base_url, sampling=sampling), tmp_path, {})
    assert summary["metrics"]["overall_score:n_samples"] == 15
    assert summary["counts"]["examples"] == 5 and summary["counts"]["rows"] == 15
    assert server.stats()["model_requests"] == 15
    results = datasets.load_from_disk(str(tmp_path / "results"))
    assert len(results) == 15
    assert sorted(results["rollout"]) == [0] * 5 + [1] * 5 + [2] * 5
    row = results[0]
    assert set(row) >= {
        "prompt",
        "completion",
        "reward",
        "reward_healthbench",
        "answer",
        "task",
        "info",
        "performance_by_rubric",
    }
    assert row["prompt"][0] == {"role": "system", "content": "You are a helpful assistant."}
    assert row["completion"][0]["role"] == "assistant"
    assert row["reward"] == row["reward_healthbench"] == min(1.0, max(0.0, row["score"]))
    assert (row["answer"], row["task"]) == ("", "default")
    info = row["info"]
    assert (
        len(info["criteria"])
        == len(info["criterion_ids"])
        == len(info["points_list"])
        == len(info["axes"])
    )
    assert len(row["performance_by_rubric"]) == len(info["criteria"])
    assert all(isinstance(p, int) for p in info["points_list"])


def test_refused_reply_fails_only_that_example(loopback_server, write_jsonl, tmp_path) -> None:
    from healthbench_exp.builtin_endpoint.replies import REFUSE_MARKER
    from tests.conftest import make_row

    refused = make_row("refused", prompt=[{"role": "user", "content": f"hi {REFUSE_MARKER}"}])
    path = write_jsonl([make_row("fine"), refused])
    server = loopback_server()
    config = make_config(server.base_url, dataset=DatasetConfig(path=str(path)))
    # the failure-fraction stop off (1 of 2 rows failed would halt the run): the other row goes on
    config = replace(config, runner=replace(config.runner, max_failure_fraction=1.0))
    summary = run_eval(config, tmp_path / "out", {})
    assert summary["failures"] == [
        {
            "prompt_id": "refused",
            "rollout": 0,
            "error": "model: refused reply (finish_reason=content_filter)",
        }
    ]
    assert summary["counts"]["rows_scored"] == 1
    assert summary["metrics"]["overall_score:n_samples"] == 1


def test_repeats_statistics_and_length_adjusted_score(loopback_server, tmp_path) -> None:
    from healthbench_exp.config.schema import ScoringConfig
    from healthbench_exp.grading.comparison import expected_min_of_k

    server = loopback_server()
    config = make_config(
        server.base_url,
        sampling=SamplingConfig(num_examples=6, rollouts_per_example=3),
        scoring=ScoringConfig(length_penalty_per_500_chars=0.05, length_center_chars=100),
    )
    summary = run_eval(config, tmp_path, {})
    rows = read_jsonl(tmp_path / "examples.jsonl")
    scores = [r["score"] for r in rows]
    adjusted = [r["score"] - 0.05 * (len(r["completion"]) - 100) / 500 for r in rows]
    metrics = summary["metrics"]
    assert metrics["length_adjusted_score"] == pytest.approx(min(1, max(0, sum(adjusted) / 18)))
    assert metrics["length_adjusted_score:n_samples"] == 18
    assert metrics["overall_score"] == pytest.approx(min(1, max(0, sum(scores) / 18)))
    repeats = summary["repeats"]
    assert repeats["rollouts"] == 3 and set(repeats["worst_at_k"]) == {"1", "2", "3"}
    assert repeats["worst_at_k"]["1"] == pytest.approx(metrics["overall_score"])
    by_example = defaultdict(list)
    for r in rows:
        by_example[r["prompt_id"]].append(r["score"])
    worst3 = sum(expected_min_of_k(s, 3) for s in by_example.values()) / 6
    assert repeats["worst_at_k"]["3"] == pytest.approx(min(1, max(0, worst3)))
    # identical replies per rollout on a deterministic endpoint: no run-to-run spread
    assert repeats["run_to_run_std"] == pytest.approx(0.0)
    plain = run_eval(make_config(server.base_url), tmp_path / "plain", {})
    assert plain["repeats"] is None and "length_adjusted_score" not in plain["metrics"]


def test_judge_calls_share_a_prompt_cache_key_per_example(loopback_server, tmp_path) -> None:
    server = loopback_server()
    plain = run_eval(make_config(server.base_url), tmp_path / "plain", {})
    assert plain["counts"]["judge_cached_prompt_tokens"] == 0
    config = make_config(server.base_url, sampling=SamplingConfig(num_examples=8, temperature=0.3))
    config = replace(config, judge=replace(config.judge, prompt_cache_key=True))
    keyed = run_eval(config, tmp_path / "keyed", {})
    counts = keyed["counts"]
    # every criterion after an example's first one finds the system message, the template's
    # head and the conversation already cached under that example's key
    assert 0 < counts["judge_cached_prompt_tokens"] < counts["judge_prompt_tokens"]
    assert keyed["metrics"] != {} and counts["ungraded_criteria"] == 0


@pytest.mark.parametrize("http_client", list(HttpClient))
def test_a_request_past_its_timeout_fails_the_example_promptly(
    loopback_server, tmp_path, http_client
) -> None:
    server = loopback_server(latency_ms=3000)
    config = make_config(server.base_url, sampling=SamplingConfig(num_examples=2))
    runner = replace(config.runner, http_client=http_client, max_retries=0, request_timeout_s=0.3)
    summary = run_eval(replace(config, runner=runner), tmp_path, {})
    ended = time.time()
    # the mechanism, not the run's wall time (start-up is slow on a loaded machine): a request
    # that waited for its 3 s reply would have got it and succeeded; each was given up at its
    # 0.3 s timeout, and the rows ended well before the server's first reply was due
    first_request_at = server.stats()["first_request_at"]
    assert ended - first_request_at < 2.9  # neither transport waited for the 3 s reply
    assert summary["counts"]["rows_failed"] == 2
    assert summary["counts"]["request_errors"]["model"] == {"APITimeoutError": 2}
    assert all("APITimeoutError" in f["error"] for f in summary["failures"])


def test_a_run_with_criteria_ungraded_beyond_the_fraction_is_marked_partial(
    loopback_server, tmp_path
) -> None:
    """The judge fails a fifth of its calls (never all: it is not dead) and nothing retries
    them: more criteria go ungraded than runner.max_failure_fraction, the run halts once that
    is certain (one row at a time: the rows after it are not run); the scores cover part of
    the run, and summary.json, the console's table and report.html say so."""
    server = loopback_server(judge_error_rate=0.2, seed=3)
    config = make_config(server.base_url, sampling=SamplingConfig(num_examples=4))
    runner = replace(config.runner, max_retries=0, max_failure_fraction=0.01, max_concurrent=1)
    with pytest.raises(FailureShareExceeded) as stopped:
        run_eval(replace(config, runner=runner), tmp_path, {})
    summary = json.loads((tmp_path / "summary.json").read_text())
    counts = summary["counts"]
    assert counts["ungraded_criteria"] > 0.01 * counts["criteria"] and counts["rows_not_run"]
    assert summary["partial"] is True
    table = format_report(RunSummary.from_dict(summary))
    assert f"PARTIAL: {counts['rows_scored']} of 4 examples scored (" in table
    report = (tmp_path / "report.html").read_text()
    assert "PARTIAL" in report and "of 4 examples scored" in report
    # the line it ends with names the endpoint, what it answered, and ends with the resume
    message = str(stopped.value)
    assert stopped.value.status == "ungraded" and "more than runner.max_failure_fraction" in message
    assert "the judge endpoint " in message and "HTTP 5xx " in message, message
    assert message.endswith(f"finish with: python -m healthbench_exp resume={tmp_path}")


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_steady_collector_freezes_start_up_still_collects_cycles_and_restores() -> None:
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    start_up = Cycle()  # alive when the evaluation starts: frozen out of the scans
    with pytest.raises(RuntimeError), steady_collector(young_threshold=12_345):
        assert gc.get_threshold() == (12_345, *thresholds[1:])
        assert gc.get_freeze_count() > frozen
        assert not any(o is start_up for o in gc.get_objects())  # no collection scans it
        garbage = Cycle()
        collected = weakref.ref(garbage)
        del garbage
        gc.collect()
        assert collected() is None  # cycles made during the run are still collected
        raise RuntimeError("the run failed")
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == frozen
    assert any(o is start_up for o in gc.get_objects())


def test_steady_collector_leaves_a_callers_own_freeze_alone() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with steady_collector():
            pass
        assert gc.get_freeze_count() >= frozen > 0
    finally:
        gc.unfreeze()


def test_a_run_leaves_the_collector_as_it_found_it(loopback_server, tmp_path) -> None:
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    run_eval(make_config(loopback_server().base_url), tmp_path, {})
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == frozen
