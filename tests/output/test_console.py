"""The end-of-run table reads a `RunSummary`: every line of a finished eval and meta-eval, the
budget's verdict, several invocations, and a summary written before some counts existed."""

from __future__ import annotations

import copy
from typing import Any

from healthbench_exp.core.calibrated_record import Calibrated, CalibratedCategory
from healthbench_exp.core.summary import USAGE_FIELDS, RunSummary
from healthbench_exp.output.console import calibrated_lines, format_report, format_usage
from healthbench_exp.output.run_context import run_context


def _role(requests: int, cost: float | None, cache_hits: int = 0) -> dict[str, Any]:
    counters = {name: 0 for name in USAGE_FIELDS} | {
        "requests": requests,
        "prompt_tokens": 10 * requests,
        "completion_tokens": requests,
        "cache_hits": cache_hits,
        "replayed_prompt_tokens": 10 * cache_hits,
    }
    return counters | {"cost_usd": cost}


EVAL_COUNTS: dict[str, Any] = {
    "examples": 3,
    "rollouts_per_example": 1,
    "rows": 3,
    "rows_scored": 2,
    "rows_failed": 1,
    "rows_unscorable": 0,
    "rows_not_run": 0,
    "criteria_graded": 5,
    "ungraded_criteria": 1,
    "criteria": 9,
    "judge_replies": 6,
    "model_requests": 3,
    "judge_requests": 6,
    "model_cache_hits": 0,
    "judge_cache_hits": 2,
    "model_prompt_tokens": 30,
    "model_completion_tokens": 3,
    "judge_prompt_tokens": 60,
    "judge_cached_prompt_tokens": 0,
    "judge_completion_tokens": 6,
    "peak_requests_in_flight": {"model": 1, "judge": 2},
    "request_errors": {"model": 1, "judge": 0},
    "rate_limited": {"model": 0, "judge": 0},
    "lowest_in_flight_limit": {"model": None, "judge": None},
    "evaluation_s": 1.0,
    "wall_time_s": 2.25,
}  # fmt: skip
EVAL: dict[str, Any] = {
    "task": "eval",
    "metrics": {
        "overall_score": 0.5,
        "overall_score:n_samples": 2,
        "overall_score:bootstrap_std": 0.1,
        "theme:hedging": 0.5,
        "theme:hedging:n_samples": 2,
        "theme:hedging:bootstrap_std": 0.1,
    },
    "counts": EVAL_COUNTS,
    "repeats": None,
    "consensus": [],
    "failures": [{"prompt_id": "p3", "rollout": 0, "error": "empty reply"}],
    "usage": {"model": _role(3, 0.25), "judge": _role(6, None, 2), "total_cost_usd": None},
    "budget": None,
    "protocol": {"reference": True, "grading": "one judge call per criterion"},
    "config": {"model": {"name": "m"}, "judge": {"name": "j"}},
    "completions": {"source": "model"},
    "partial": False,
    "demo": False,
    "wandb": None,
}


def test_an_eval_table_has_every_line() -> None:
    table = format_report(RunSummary.from_dict(EVAL))
    assert "overall_score          0.5000  [0.3040, 0.6960]  n=2" in table
    assert "    hedging                0.5000  [0.3040, 0.6960]  n=2" in table
    assert "rows scored 2/3, failed 1, not run 0; ungraded criteria 1/9" in table
    assert "requests: model 3, judge 6 (from the cache, not paid again: model 0, judge 2)" in table
    assert "wall time 2.2 s" in table
    assert "first failure: p3 rollout 0: empty reply" in table
    assert "ungraded criteria are left out of the scores" in table
    assert "cost $0.2500" in table and "cost unknown (no price configured)" in table
    assert "+ 2 calls replayed from the response cache" in table
    assert "total cost unknown (no price configured)" in table
    assert "DEMO" not in table and "PARTIAL" not in table and "budget" not in table


def test_a_budget_stop_over_two_invocations_says_so() -> None:
    data = copy.deepcopy(EVAL)
    data |= {"partial": True, "demo": True}
    data["counts"] |= {"rows_not_run": 1, "rows_failed": 0}
    data["budget"] = {"max_usd": 0.5, "spent_usd": 0.25, "stopped": True, "requests_not_sent": 3}
    invocation = {"started_at": "s", "finished_at": "f", "budget": None}
    data["usage"]["invocations"] = [
        {"invocation": 1, "model": _role(1, 0.1), "judge": _role(1, 0.1), "total_cost_usd": 0.2}
        | invocation,
        {"invocation": 2, "model": _role(1, 0.1), "judge": _role(1, None), "total_cost_usd": None}
        | invocation,
    ]
    summary = RunSummary.from_dict(data)
    table = format_report(summary)
    assert "DEMO: the built-in offline endpoint answered" in table
    assert "examples scored (1 not run, 0 failed" in table and "PARTIAL: " in table
    assert "requests this invocation: model 3" in table
    assert "over 2 invocations of this run: #1 $0.2000, #2 unknown" in table
    assert "PARTIAL RUN: budget.max_usd=0.5 reached after spending $0.2500" in table
    assert [b.label for b in run_context(summary).banners] == ["PARTIAL"]  # config: no builtin


def test_a_summary_from_before_unscorable_and_not_run_counts_still_prints() -> None:
    data = copy.deepcopy(EVAL)
    for key in ("rows_unscorable", "completions", "partial", "demo"):
        data["counts"].pop(key, None)
        data.pop(key, None)
    summary = RunSummary.from_dict(data)
    assert "rows scored 2/3, failed 1, not run 0" in format_report(summary)
    context = run_context(summary)
    assert context.replies == "m" and context.count == "3 examples x 1 rollout (2 of 3 rows scored)"


def test_a_meta_eval_table_reads_its_categories() -> None:
    metrics = {
        "pairwise_model_f1_balanced": 0.7,
        "pairwise_model_f1_pos": 0.8,
        "pairwise_model_f1_neg": 0.6,
        "physicians_weighted_mean:pairwise_physician_f1_balanced": None,
        "category_mean:pairwise_model_f1_balanced": 0.7,
        "category_mean:physicians_weighted_mean:pairwise_physician_f1_balanced": None,
    }
    category = {
        "category": "cluster:hedging_x", "rows": 4, "rows_graded": 4, "model_f1_balanced": 0.7,
        "model_n": 4, "physicians_mean_f1_balanced": None,
        "physicians_weighted_mean_f1_balanced": None, "physicians": 0,
    }  # fmt: skip
    counts = {"rows": 4, "rows_graded": 4, "rows_failed": 0, "rows_not_run": 0, "physicians": 0,
              "judge_requests": 4, "judge_cache_hits": 0, "wall_time_s": 1.0}  # fmt: skip
    summary = RunSummary.from_dict(
        {"task": "meta_eval", "metrics": metrics, "counts": counts, "by_category": [category],
         "usage": {"model": _role(0, 0.0), "judge": _role(4, 0.5), "total_cost_usd": 0.5}}
    )  # fmt: skip
    table = format_report(summary)
    assert (
        "  judge       0.7000  (pooled, the score (pairwise_model_f1_balanced): one F1 over every "
        "(judge, physician) pair; pos F1 0.8000, neg F1 0.6000)" in table
    )
    assert (
        "  physicians  undefined  (pooled: each physician's F1 over all rows, then the mean "
        "weighted by their pairs)" in table
    )
    # the four physician figures: each described once (two were described alike)
    physicians = [line for line in table.splitlines() if line.startswith("  physicians  ")]
    descriptions = [line.split("(", 1)[1] for line in physicians]
    assert len(physicians) == 4 and len(set(descriptions)) == 4, physicians
    assert (
        "  by category:      judge  physicians   rows\n    hedging_x      0.7000   undefined      4"
        in table
    )
    # a long category is printed whole, its figures under their headers
    long = {**category, "category": "cluster:health_data_tasks_" + "x" * 60}
    summary.by_category = [*summary.by_category, type(summary.by_category[0]).from_dict(long)]
    lines = format_report(summary).splitlines()
    header = next(line for line in lines if "by category:" in line)
    row = next(line for line in lines if "health_data_tasks_" + "x" * 60 + "  " in line)
    assert row.index("0.7000") + len("0.7000") == header.index("judge") + len("judge")
    assert row.rstrip().endswith("4") and len(row.rstrip()) == len(header)
    assert "rows graded 4/4, ungraded 0; judge requests 4 (from the cache: 0)" in table
    assert "model tokens" not in table and "judge tokens: 40 prompt" in table
    assert run_context(summary).count == "4 rows, 4 graded"


def test_usage_lines_skip_an_unused_role() -> None:
    summary = RunSummary.from_dict(EVAL)
    assert summary.usage is not None
    lines = format_usage(summary.usage).splitlines()
    assert lines[0].startswith("  model tokens: 30 prompt (0 cached by the provider), 3 completion")


def test_a_calibrated_run_prints_its_corrected_rates_and_where_the_rest_are() -> None:
    """A run with `calibration.meta_eval_run` printed nothing about calibration (issue 45)."""
    corrected = CalibratedCategory(
        "cluster:hedging_x", 40, 0.6, 0.9, 0.8, 25, 30, 0.5714, 0.5, 0.65, None
    )
    not_corrected = CalibratedCategory(
        "cluster:emergency_y", 12, 0.5, 0.7, 0.6, 3, 2, None, None, None, "n_pos 3 < 20"
    )
    lines = calibrated_lines(Calibrated("outputs/meta", "gpt-4.1", [corrected, not_corrected]))
    assert "judge gpt-4.1 against the physicians of outputs/meta" in lines[0]
    assert "1 of 2 categories corrected, 1 not" in lines[0]
    assert "report.html and summary.json (calibrated)" in lines[0]
    assert lines[1:] == ["    hedging_x  observed 0.6000 -> corrected 0.5714 [0.5000, 0.6500]"]
    assert calibrated_lines(None) == []
