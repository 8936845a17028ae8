"""The stop lines say what failed and what the invocation spent, whatever the task.

End to end: `python -m healthbench_exp` in a subprocess, the judge a loopback server where one
is needed. A run grading the replies of a completions file calls no model endpoint: a stop on
its failed rows (replies missing from the file) must not blame one. A meta-eval stopped by its
dead judge or by the failure fraction says, as an eval does, what this invocation spent and how
many rows were not run, with the resume command last.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from healthbench_exp.config.schema import DatasetConfig, DataSource
from healthbench_exp.core.run_end import Exit
from healthbench_exp.data.healthbench import load_examples
from tests.e2e.test_e2e import run_cli

QUIET = ("experiment=demo", "wandb=disabled", "runner.progress=false")
META_EVAL_ROWS = 40  # the bundled meta-eval sample's rows


def error_line(stderr: str) -> str:
    """The one `error:` line of a run's stderr."""
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def test_failed_rows_of_a_completions_file_do_not_blame_a_model_endpoint(
    tmp_path: Path, write_jsonl: Any
) -> None:
    """2 of 6 rows of the file have no reply (null): more than 0.01 of the rows fail, the run
    stops, and its line says the replies are missing, not that a model endpoint failed, with
    the run's final count of failed rows (the stop came at the first; the second was in
    flight)."""
    examples = load_examples(DatasetConfig(source=DataSource.bundled))[:6]
    replies = write_jsonl(
        [
            {"prompt_id": e.prompt_id, "completion": None if i < 2 else "Rest."}
            for i, e in enumerate(examples)
        ],
        "replies.jsonl",
    )
    run_dir = tmp_path / "run"
    result = run_cli(
        *QUIET, "completions=file", f"completions.path={replies}", "runner.max_concurrent=1",
        "runner.max_failure_fraction=0.01", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == Exit.FAILED, result.stderr
    line = error_line(result.stderr)
    assert "more than runner.max_failure_fraction=0.01" in line, line
    assert "model endpoint's answers failed" not in line, line
    missing = "no model endpoint was called: the failed rows have no reply in the completions"
    assert missing in line, line
    assert "(model 0 calls, judge " in line, line
    assert result.stderr.strip().splitlines()[-1].endswith(f"resume={run_dir}")
    stopped = json.loads((run_dir / "summary.json").read_text())["counts"]
    failed = re.search(r"stopped early: (\d+) of all 6 rows failed", line)
    assert failed is not None, line
    assert int(failed[1]) == stopped["rows_failed"], (line, stopped)  # the end's, not the stop's
    # the file fixed, the resume the line ends with grades every row
    write_jsonl([{"prompt_id": e.prompt_id, "completion": "Rest."} for e in examples], replies.name)
    resumed = run_cli(f"resume={run_dir}")
    assert resumed.returncode == 0, resumed.stderr
    counts = json.loads((run_dir / "summary.json").read_text())["counts"]
    assert counts["rows_failed"] == counts["rows_not_run"] == 0 and counts["rows_scored"] == 6


def meta_eval_spent(line: str) -> re.Match[str] | None:
    """The spend part of a meta-eval's stop line: its dollars, judge calls, rows not run."""
    return re.search(
        r"spent \$(\d+\.\d{4}) in this invocation \(judge (\d+) calls\); (\d+) of "
        rf"{META_EVAL_ROWS} rows not run; ",
        line,
    )


def test_a_meta_eval_stopped_by_the_failure_fraction_says_what_it_spent(
    loopback_server: Any, tmp_path: Path
) -> None:
    """The judge answers 500 after 10 answers: the 5th failure (of 40 rows, 0.1) makes the end
    certain and the run stops, the rest `not run`. A meta-eval row is one judge call, and the
    rows in flight at once are `judge.max_concurrency` (256 by default, not
    `runner.max_concurrent`): at 2, one other call at most is in flight at the stop, whatever
    the load. (With 256, every row's call went out at once: how many were sent before the 5th
    failure came back was a race with the server's instant 500s, and under load all 40 were,
    leaving nothing `not run`, so the run ended with `run_outcome`'s line, not the stop's.)"""
    judge = loopback_server(fail_status=500, fail_after=10)
    run_dir = tmp_path / "run"
    result = run_cli(
        *QUIET, "task=meta_eval", "judge.builtin=false", f"judge.base_url={judge.base_url}",
        "runner.max_retries=0", "runner.max_concurrent=2", "judge.max_concurrency=2",
        "runner.dead_endpoint_calls=0", "runner.dead_endpoint_s=0",
        "runner.max_failure_fraction=0.1", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    # nothing sent after the stop: 10 answers, the 5 failures that made it certain, and the one
    # other call then in flight at most
    sent = judge.stats()["chat_requests"]
    assert sent <= 10 + 5 + 1, (sent, result.stderr)
    assert result.returncode == Exit.UNGRADED, result.stderr
    line = error_line(result.stderr)
    assert "more than runner.max_failure_fraction=0.1" in line, line
    spent = meta_eval_spent(line)
    assert spent is not None, line
    counts = json.loads((run_dir / "summary.json").read_text())["counts"]
    # each row is one verdict: rows, not criteria; the count at the end, the in-flight rows in
    ungraded = re.search(rf"stopped early: (\d+) of all {META_EVAL_ROWS} rows got no valid", line)
    assert ungraded is not None and "criteria" not in line, line
    assert int(ungraded[1]) == counts["rows_failed"], (line, counts)
    # the judge's calls as the counts say (answered ones: the failed attempts are counted apart)
    assert 0 < int(spent[2]) == counts["judge_requests"] <= judge.stats()["chat_requests"]
    assert int(spent[3]) == counts["rows_not_run"] > 0, counts
    assert line.index("spent") < line.index("resume=")  # the resume command last
    assert result.stderr.strip().splitlines()[-1].endswith(f"resume={run_dir}")


def test_a_meta_eval_stopped_by_its_dead_judge_says_what_it_spent(
    loopback_server: Any, tmp_path: Path
) -> None:
    judge = loopback_server(fail_status=500)  # every call answered 500: given up on
    run_dir = tmp_path / "run"
    result = run_cli(
        *QUIET, "task=meta_eval", "judge.builtin=false", f"judge.base_url={judge.base_url}",
        "runner.max_concurrent=2", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == Exit.UNGRADED, result.stderr
    line = error_line(result.stderr)
    assert "stopped early:" in line and judge.base_url in line, line
    spent = meta_eval_spent(line)
    assert spent is not None, line
    assert spent[1] == "0.0000"  # nothing answered, nothing paid
    counts = json.loads((run_dir / "summary.json").read_text())["counts"]
    assert int(spent[3]) == counts["rows_not_run"] > 0
    # its report says it is partial, as an eval's does
    report = (run_dir / "report.html").read_text()
    assert "PARTIAL" in report, report[:2000]
    graded = f"{counts['rows_graded']} of {META_EVAL_ROWS} rows graded ({counts['rows_not_run']} "
    assert graded in report, report[:2000]
    assert result.stderr.strip().splitlines()[-1].endswith(f"resume={run_dir}")
