"""A resume pays nothing twice, with the response cache off: the run's own records (the replies
in `examples.jsonl`, the verdicts in `per_criterion.jsonl`) are what it continues from.

End to end: `python -m healthbench_exp` in a subprocess against a loopback endpoint whose
`/stats` counts every model and judge request it received.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from healthbench_exp.config.measured import measured_fingerprint
from healthbench_exp.core.types import CriterionGrade, ExampleResult
from healthbench_exp.data.healthbench import parse_example
from healthbench_exp.model.invocations import record_invocation
from healthbench_exp.output.files import ResultWriter
from healthbench_exp.output.run_dir import RunDirectory
from healthbench_exp.tasks.records import read_records, records_to_continue
from tests.conftest import make_row
from tests.e2e.test_e2e import run_cli


def endpoint_args(url: str) -> list[str]:
    """The demo's rows and prices, on an external loopback endpoint (its counters outlive a run)."""
    return [
        "experiment=demo",
        "wandb=disabled",
        "runner.progress=false",
        "model.builtin=false",
        f"model.base_url={url}",
        "judge.builtin=false",
        f"judge.base_url={url}",
    ]


def test_a_budget_stopped_run_resumed_without_the_cache_sends_each_request_once(
    loopback_server, tmp_path: Path
) -> None:
    server = loopback_server()
    uncapped = run_cli(
        *endpoint_args(server.base_url), "cache.enabled=false", f"hydra.run.dir={tmp_path / 'u'}"
    )
    assert uncapped.returncode == 0, uncapped.stderr
    once = server.stats()
    server.reset()

    run_dir = tmp_path / "run"
    stopped = run_cli(
        *endpoint_args(server.base_url),
        "cache.enabled=false",
        "budget.max_usd=0.05",
        f"hydra.run.dir={run_dir}",
    )
    assert stopped.returncode == 4, stopped.stderr
    first = server.stats()
    examples = [json.loads(line) for line in (run_dir / "examples.jsonl").open()]
    assert any(e["completion"] and e["error"] for e in examples)  # a reply paid, grading stopped
    assert 0 < first["judge_requests"] < once["judge_requests"]

    resumed = run_cli(f"resume={run_dir}", "budget.max_usd=null")
    assert resumed.returncode == 0, resumed.stderr
    total = server.stats()
    # each model request and each judge request was sent exactly once over both invocations
    assert total["model_requests"] == once["model_requests"]
    assert total["judge_requests"] == once["judge_requests"]
    summary = json.loads((run_dir / "summary.json").read_text())
    reference = json.loads((tmp_path / "u" / "summary.json").read_text())
    assert summary["metrics"] == reference["metrics"]
    assert summary["usage"]["total_cost_usd"] == pytest.approx(reference["usage"]["total_cost_usd"])
    assert "continues from" in resumed.stderr + (run_dir / "healthbench.log").read_text()


def test_the_records_read_back_are_those_the_run_wrote_and_only_its_own(tmp_path: Path) -> None:
    example = parse_example(make_row("p1"), "test line 1")
    sent = [{"role": "user", "content": "I have a headache, what should I do?"}]
    grades = [
        CriterionGrade(True, "yes", 1),
        CriterionGrade(None, "", 4, error="no valid verdict in 4 judge replies; last: 'x'"),
        CriterionGrade(None, "", 0, error="not run: budget.max_usd=0.05 reached", not_run=True),
    ]
    stopped = ExampleResult(example, 0, sent, "rest", grades, error="not run", not_run=True)
    failed = ExampleResult(parse_example(make_row("p2"), "l2"), 0, sent, None, [], error="model")
    with ResultWriter(tmp_path) as writer:
        writer.write(stopped)
        writer.write(failed)
    records = read_records(tmp_path)
    assert list(records) == [("p1", 0)]  # a row with no reply has nothing to continue from
    row = records[("p1", 0)]
    assert row.reply(sent) == "rest" and row.reply([*sent, *sent]) is None
    texts = [c.text for c in example.rubrics]
    assert row.grade(sent, "rest", 0, texts[0]) == grades[0]
    assert row.grade(sent, "rest", 1, texts[1]) == grades[1]  # paid for: not asked again
    assert row.grade(sent, "rest", 2, texts[2]) is None  # never sent
    assert row.grade(sent, "another reply", 0, texts[0]) is None
    assert row.grade(sent, "rest", 0, texts[1]) is None

    # records of another config in the same directory are not this run's
    config = {"model": {"name": "m"}, "sampling": {"temperature": 0.5}}
    usage = {"model": {}, "judge": {}, "total_cost_usd": None}
    record_invocation(
        RunDirectory(tmp_path), usage, None, datetime.now(UTC), measured_fingerprint(config)
    )
    assert records_to_continue(tmp_path, config) == records
    other = {"model": {"name": "m"}, "sampling": {"temperature": 0.9}}
    assert records_to_continue(tmp_path, other) == {}
