"""A jury run's report.html: the jury section (members, the jury's and each judge's metrics, the
agreement tables) and every judge's verdict in the per-criterion view, from a run directory
written through the package's own record types and row writers."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from healthbench_exp.core.strict_json import dumps
from healthbench_exp.core.summary import EVAL, EvalCounts, RunSummary
from healthbench_exp.core.types import Criterion, CriterionGrade, Example, ExampleResult
from healthbench_exp.grading.jury import JuryRow, jury_section
from healthbench_exp.grading.scoring import aggregate_metrics, example_metrics
from healthbench_exp.output.files import criterion_rows, example_row
from healthbench_exp.output.html.examples import COMPANION, VARIABLE
from healthbench_exp.output.html.pages import write_run_report
from tests.sweep.test_aggregate import assert_fits, render

MEMBERS = ["judge-a", "judge-b", "judge/c"]  # the primary first; a name with a slash
T, F, U = True, False, None
ACC, COMP = "axis:accuracy", "axis:completeness"
# (prompt_id, theme, [(points, axis, {judge: verdict})])
EXAMPLES = [
    ("p1", "hedging", [(10, ACC, (T, T, F)), (5, COMP, (F, U, T)), (-4, ACC, (T, F, F))]),
    ("p2", "context_seeking", [(6, ACC, (T, T, T)), (4, COMP, (F, F, U))]),
]


def results_and_verdicts() -> tuple[list[ExampleResult], list[list[dict[str, bool | None]]]]:
    results, verdicts = [], []
    for prompt_id, theme, criteria in EXAMPLES:
        rubrics = tuple(
            Criterion(f"criterion {i} of {prompt_id}", p, (a,))
            for i, (p, a, _) in enumerate(criteria)
        )
        example = Example(
            prompt_id, ({"role": "user", "content": "q"},), rubrics, (f"theme:{theme}",), None, "x"
        )
        by_judge = [dict(zip(MEMBERS, v, strict=True)) for _, _, v in criteria]
        grades = [
            CriterionGrade(
                v["judge-a"], f"judge-a on {i}", 1, None if v["judge-a"] is not None else "x"
            )
            for i, v in enumerate(by_judge)
        ]
        metrics = example_metrics(example.example_tags, rubrics, [g.criteria_met for g in grades])
        results.append(
            ExampleResult(
                example,
                0,
                list(example.prompt),
                "the reply",
                grades,
                metrics=metrics,
                sampled=False,
            )
        )
        verdicts.append(by_judge)
    return results, verdicts


def write_jury_run(directory: Path, jury: bool = True) -> RunSummary:
    """A finished run's files: per_criterion.jsonl (with `verdicts` and `explanations` for a
    jury), examples.jsonl, summary.json (with `jury`)."""
    directory.mkdir(parents=True, exist_ok=True)
    results, verdicts = results_and_verdicts()
    criteria_lines, example_lines = [], []
    for result, by_criterion in zip(results, verdicts, strict=True):
        for row, v in zip(criterion_rows(result), by_criterion, strict=True):
            if jury:
                row["verdicts"] = v
                row["explanations"] = {n: f"{n} explains {row['criterion']}" for n in MEMBERS}
            criteria_lines.append(dumps(row) + "\n")
        example_lines.append(dumps(example_row(result)) + "\n")
    (directory / "per_criterion.jsonl").write_text("".join(criteria_lines))
    (directory / "examples.jsonl").write_text("".join(example_lines))
    counts = EvalCounts(**{f.name: 0 for f in fields(EvalCounts)})  # type: ignore[arg-type]
    counts.rows = counts.rows_scored = counts.examples = 2
    rows = [
        JuryRow(r.example.example_tags, r.example.rubrics, v)
        for r, v in zip(results, verdicts, strict=True)
    ]
    summary = RunSummary(
        task=EVAL,
        metrics=aggregate_metrics([r.metrics for r in results if r.metrics], 100, 0),
        counts=counts,
        headline="overall_score",
        config={"model": {"name": "m"}, "judge": {"name": "judge-a"}},
        jury=jury_section(MEMBERS, rows, bootstrap_samples=100) if jury else None,
    )
    (directory / "summary.json").write_text(dumps(summary.to_dict()))
    return summary


def companion_records(run: Path) -> list[dict[str, Any]]:
    """The companion's records: one per line between `window.<VARIABLE> = [` and `];`."""
    first, *lines, last = (run / COMPANION).read_text().splitlines()
    assert (first, last) == (f"window.{VARIABLE} = [", "];")
    return [json.loads(line.removesuffix(",")) for line in lines]


def test_the_report_shows_the_jury_beside_each_judge(tmp_path: Path) -> None:
    summary = write_jury_run(tmp_path / "run")
    html = write_run_report(tmp_path / "run").read_text()
    jury = summary.jury
    assert jury is not None
    section = html[html.index("<h2 id='jury'>") :]
    assert "<b>judge-a</b> (primary), judge-b, judge/c" in section
    header = re.search(r"<table class='jury-metrics'><tr>(.*?)</tr>", section).group(1)
    assert header == (
        "<th>metric</th><th>jury (mean)</th><th>judge-a</th><th>judge-b</th><th>judge/c</th>"
        "<th>n (jury)</th>"
    )
    # the theme rows: the jury's value then each judge's, as the records hold them
    row = re.search(r"<tr><td>theme:hedging</td>(.*?)</tr>", section).group(1)
    values = [jury.metrics["theme:hedging"]] + [jury.by_judge[n]["theme:hedging"] for n in MEMBERS]
    assert re.findall(r"<td class='num'>([^<]*)</td>", row) == [f"{v:.4f}" for v in values] + ["1"]
    overall = re.search(r"<tr><td>overall_score</td><td class='num'>([^<]*)</td>", section)
    assert overall.group(1).startswith(f"{jury.metrics['overall_score']:.4f} [")
    # the agreement table, one row per pair in member order
    pairs = re.findall(r"<tr><td>([^<]*)</td><td class='num'>(\d+)</td>", section)
    assert pairs[:3] == [
        ("judge-a – judge-b", str(jury.agreement[0].n)),
        ("judge-a – judge/c", str(jury.agreement[1].n)),
        ("judge-b – judge/c", str(jury.agreement[2].n)),
    ]
    first = jury.agreement[0]
    assert (
        f"<td class='num'>{first.agreement:.4f}</td><td class='num'>{first.kappa:.4f}</td>"
        in section
    )
    by = section[section.index("Agreement by axis and theme") :]
    acc = first.by[ACC]
    assert f"<tr><td>axis:accuracy</td><td class='num'>{acc.agreement:.3f} / {acc.kappa:.3f}" in by
    assert "theme:context_seeking" in by


def test_the_per_criterion_view_shows_every_judges_verdict(tmp_path: Path) -> None:
    write_jury_run(tmp_path / "run")
    write_run_report(tmp_path / "run")
    records = {r["id"]: r for r in companion_records(tmp_path / "run")}
    criteria = {c[3]: c for c in records["p1"]["criteria"]}
    # 5 points, judge-a not met, judge-b ungraded, judge/c met: each with its label and class
    assert criteria["criterion 1 of p1"][5] == [
        ["judge-a", "not met", "bad", "judge-a explains criterion 1 of p1"],
        ["judge-b", "ungraded", "muted", "judge-b explains criterion 1 of p1"],
        ["judge/c", "met", "good", "judge/c explains criterion 1 of p1"],
    ]
    # -4 points met by judge-a costs points (bad); not met by the others is good
    assert [j[2] for j in criteria["criterion 2 of p1"][5]] == ["bad", "good", "good"]


def test_a_run_without_a_jury_has_no_jury_section(tmp_path: Path) -> None:
    write_jury_run(tmp_path / "run", jury=False)
    html = write_run_report(tmp_path / "run").read_text()
    assert "id='jury'" not in html and "Jury" not in html
    assert all(len(c) == 5 for r in companion_records(tmp_path / "run") for c in r["criteria"])


@pytest.mark.slow  # Chromium renders the page
def test_the_jury_report_renders_and_fits_the_page(tmp_path: Path) -> None:
    write_jury_run(tmp_path / "run")
    report = write_run_report(tmp_path / "run")
    dom = render(report, tmp_path)
    assert "<th>each judge</th>" in dom
    explained = 'title="judge-b explains criterion 1 of p1"'
    assert f'<div class="verdict muted" {explained}>judge-b: ungraded</div>' in dom
    assert dom.count("<th>each judge</th>") == 2  # every example's table has the column
    assert_fits(report, tmp_path)
