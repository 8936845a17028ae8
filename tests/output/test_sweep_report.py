"""A comparison's report.html as a user reads it (issue 27 item 7): the runs table keeps one
short line per cell (the protocol cell names how many settings deviate; the deviations are
listed under the table) and only the columns the runs differ in, and the chart plots each
run's headline (`length_adjusted_score` for a Professional run)."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

from tests.e2e.test_e2e import run_cli, run_module


def test_the_comparison_plots_headlines_and_keeps_its_runs_table_short(tmp_path: Path) -> None:
    for name, experiment in (("demo", "demo"), ("pro", "professional_demo")):
        result = run_cli(
            f"experiment={experiment}", "wandb.mode=disabled", f"hydra.run.dir={tmp_path / name}"
        )
        assert result.returncode == 0, result.stderr
    out = tmp_path / "cmp"
    compared = run_module(
        "healthbench_exp.aggregate", str(tmp_path / "demo"), str(tmp_path / "pro"),
        "--out", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    page = (out / "report.html").read_text()
    jobs = json.loads((out / "sweep_summary.json").read_text())["jobs"]
    pro = next(j for j in jobs if j["headline"] == "length_adjusted_score")
    assert pro["headline_score"] != pro["overall_score"]

    chart = page.split("<h2>Headline score per run</h2>", 1)[1].split("</svg>", 1)[0]
    plotted = [float(v) for v in re.findall(r"<text x='\d+' y='\d+'>([\d.]+)</text>", chart)]
    assert plotted == [round(j["headline_score"], 4) for j in jobs]  # each run's headline
    assert "(length_adjusted_score)" in chart and "(overall_score)" in chart

    runs, under = page.split("<h2>Runs</h2>", 1)[1].split("</table>", 1)
    header = re.findall(r"<th>([^<]*)</th>", runs)
    assert "data" in header and "model" not in header and "T" not in header  # same in both
    for job in jobs:
        assert f"{job['protocol']}: NOT reference (" in runs
        deviations = escape(job["deviations"])
        assert f"title='{deviations}'" in runs  # a tooltip, not a tall cell
        assert deviations not in re.sub(r"title='[^']*'", "", runs)
        assert deviations in under.split("<h2>", 1)[0]  # listed under the table
    assert max(len(cell) for cell in re.findall(r"<td[^>]*>([^<]*)</td>", runs)) < 60
