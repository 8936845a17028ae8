"""A comparison of runs where one was graded by a jury: `python -m healthbench_exp.aggregate`
gives its row the jury's overall score (sweep_summary.json and .csv) and the markdown a jury
column; a comparison without a jury run is unchanged."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.output.test_jury_html import write_jury_run
from tests.sweep.test_aggregate import assert_fits, render
from tests.sweep.test_aggregate_cli import aggregate


def test_the_comparison_shows_the_jury_score_of_a_jury_run(tmp_path: Path) -> None:
    jury_summary = write_jury_run(tmp_path / "sweep" / "0")
    write_jury_run(tmp_path / "sweep" / "1", jury=False)
    out = tmp_path / "out"
    result = aggregate(str(tmp_path / "sweep"), "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    jury = jury_summary.jury
    assert jury is not None
    score = jury.metrics["overall_score"]
    std = jury.metrics["overall_score:bootstrap_std"]

    data = json.loads((out / "sweep_summary.json").read_text())
    rows = {r["job"]: r for r in data["jobs"]}
    assert rows["0"]["jury_score"] == score and rows["0"]["jury_std"] == std
    assert rows["0"]["jury_members"] == "judge-a, judge-b, judge/c"
    assert "jury_score" not in rows["1"]
    # the primary judge's score stays the run's
    assert rows["0"]["overall_score"] == jury_summary.metrics["overall_score"]

    with open(out / "sweep_summary.csv", encoding="utf-8") as f:
        table = {r["job"]: r for r in csv.DictReader(f)}
    assert float(table["0"]["jury_score"]) == score and table["1"]["jury_score"] == ""

    lines = (out / "sweep_summary.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| job |"))
    assert header.endswith("| wall s | jury overall_score |")
    cells = {line.split(" | ")[0]: line for line in lines if line.startswith(("| 0 |", "| 1 |"))}
    assert cells["| 0"].endswith(f"| {score:.4f} ± {std:.4f} (3 judges) |")
    assert cells["| 1"].endswith("| – |")
    # the comparison's report.html: a juries section naming the jury run only
    html = (out / "report.html").read_text()
    section = html[html.index("<h2 id='juries'>") :]
    assert "<td>judge-a, judge-b, judge/c</td>" in section
    assert f"<td class='num job-jury'>{score:.4f}</td>" in section
    assert section.count("<td class='num job-jury'>") == 1


def test_a_comparison_without_a_jury_has_no_jury_column(tmp_path: Path) -> None:
    write_jury_run(tmp_path / "sweep" / "0", jury=False)
    write_jury_run(tmp_path / "sweep" / "1", jury=False)
    result = aggregate(str(tmp_path / "sweep"), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    markdown = (tmp_path / "out" / "sweep_summary.md").read_text()
    assert "jury" not in markdown
    assert "juries" not in (tmp_path / "out" / "report.html").read_text()
    assert "jury_score" not in (tmp_path / "out" / "sweep_summary.csv").read_text()


@pytest.mark.slow  # Chromium renders the page
def test_the_comparison_report_with_a_jury_fits_the_page(tmp_path: Path) -> None:
    write_jury_run(tmp_path / "sweep" / "0")
    write_jury_run(tmp_path / "sweep" / "1", jury=False)
    out = tmp_path / "out"
    result = aggregate(str(tmp_path / "sweep"), "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert 'id="juries"' in render(out / "report.html", tmp_path)
    assert_fits(out / "report.html", tmp_path)
