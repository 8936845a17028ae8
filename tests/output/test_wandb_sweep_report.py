"""The W&B report spec (built offline) and the command's errors when it cannot save."""

from __future__ import annotations

import os

import pytest
import wandb_workspaces.reports.v2 as wr
from wandb_workspaces import expr

from healthbench_exp.output.wandb.sweep_report import (
    SUMMARY_COLUMNS,
    ReportError,
    build_report,
    parse_args,
)
from tests import zygote


def test_report_selects_the_sweep_and_charts_its_scores() -> None:
    report = build_report("my-team", "healthbench-exp", "multirun/2026-11-22/10-00-00")
    assert (report.entity, report.project) == ("my-team", "healthbench-exp")
    assert report.title == "HealthBench sweep multirun/2026-11-22/10-00-00"
    (grid,) = [b for b in report.blocks if isinstance(b, wr.PanelGrid)]
    (runset,) = grid.runsets
    parsed = expr.expr_to_filters(runset.filters)  # the library's own parser accepts it
    assert (parsed.key.section, parsed.key.name) == ("run", "group")
    assert (parsed.op, parsed.value) == ("=", "multirun/2026-11-22/10-00-00")
    assert runset.pinned_columns == SUMMARY_COLUMNS
    assert "summary:overall_score:bootstrap_std" in runset.pinned_columns
    bars = {p.title: p.metrics for p in grid.panels if isinstance(p, wr.BarPlot)}
    assert bars["Overall score per run"] == ["overall_score"]
    assert next(iter(bars)) == "Headline score per run"  # the headline first
    assert bars["Headline score per run"] == ["headline/score"]
    assert runset.pinned_columns[1:3] == ["summary:headline", "summary:headline/score"]
    assert (
        len(bars["Score by theme"]) == 7 and "theme:emergency_referrals" in bars["Score by theme"]
    )
    assert bars["Score by axis"] == [
        "axis:accuracy", "axis:communication_quality", "axis:completeness",
        "axis:context_awareness", "axis:instruction_following",
    ]  # fmt: skip
    assert any(isinstance(p, wr.RunComparer) for p in grid.panels)


def test_quotes_in_a_group_name_survive_the_filter() -> None:
    report = build_report("e", "p", "it's a sweep")
    (grid,) = [b for b in report.blocks if isinstance(b, wr.PanelGrid)]
    assert expr.expr_to_filters(grid.runsets[0].filters).value == "it's a sweep"


def test_arguments() -> None:
    assert parse_args(["group=g", "entity=e"]) == {
        "group": "g",
        "entity": "e",
        "project": "healthbench-exp",
    }
    with pytest.raises(ReportError, match="group is required"):
        parse_args(["project=p"])
    with pytest.raises(ReportError, match="unknown argument 'sweep=x'"):
        parse_args(["sweep=x"])


def test_without_a_login_the_command_says_what_is_missing(tmp_path) -> None:
    # no W&B variable, and NETRC names a missing file (read instead of ~/.netrc)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env["NETRC"] = str(tmp_path / "no-netrc")
    result = zygote.run("group=multirun/x", module="healthbench_exp.report", env=env, timeout=120)
    assert result.returncode == 2
    assert "no W&B login: run `wandb login` or set WANDB_API_KEY" in result.stderr
    assert "wandb sync" in result.stderr


def test_help_prints_the_usage_and_exits_0() -> None:
    result = zygote.run("--help", module="healthbench_exp.report", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m healthbench_exp.report group=<sweep>")
