"""The HTML reports name what they show, end to end: a context header with DEMO / PARTIAL /
status banners, a small report.html whose examples are paged from report_examples.js, tables that
fit the page, and the banners in the comparison's rows. Rendered in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import DemoRun
from tests.e2e.test_e2e import run_cli
from tests.sweep.test_aggregate import assert_fits, render
from tests.sweep.test_aggregate_cli import aggregate


@pytest.mark.slow  # Chromium renders the page
def test_run_report_opens_with_its_context_and_pages_its_examples(
    demo_run: DemoRun, tmp_path: Path
) -> None:
    assert demo_run.returncode == 0, demo_run.stderr
    run = tmp_path / "run"  # a copy of the shared run's report (overflow() writes beside it)
    run.mkdir()
    for name in ("summary.json", "examples.jsonl", "report.html", "report_examples.js"):
        shutil.copy(demo_run.directory / name, run / name)
    summary = json.loads((run / "summary.json").read_text())
    examples = [json.loads(x) for x in (run / "examples.jsonl").read_text().splitlines()]
    html = (run / "report.html").read_text()
    companion = (run / "report_examples.js").read_text()
    cost = summary["usage"]["total_cost_usd"]
    title = re.search(r"<title>([^<]*)</title>", html).group(1)
    assert title.startswith("HealthBench run · [DEMO] offline-model judged by offline-judge")
    assert "sample (bundled)" in title and "T=0.5" in title and f"${cost:.2f}" in title
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", title)
    # the per-example detail lives in the companion, so the page stays small at any size
    assert all(e["completion"] not in html for e in examples)
    assert all(json.dumps(e["completion"], ensure_ascii=False) in companion for e in examples)
    assert len(html) < 40_000
    dom = render(run / "report.html", tmp_path)
    assert dom.count("<details") == 24 and "page 1 of 1 (24 examples)" in dom
    assert 'id="banner-DEMO"' in dom and "<th>judge</th><td>offline-judge</td>" in dom
    # the demo's placeholder prices are labelled as such (issue 27 item 7)
    assert f"<th>cost</th><td>${cost:.4f} (illustrative model and judge prices" in dom
    assert "24 examples x 1 rollout (24 of 24 rows scored)" in dom
    assert_fits(run / "report.html", tmp_path)
    # a page copied without its companion says where the detail is
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(run / "report.html", alone / "report.html")
    dom = render(alone / "report.html", tmp_path)
    assert "<details" not in dom and "keep the two files together" in dom


@pytest.mark.slow  # Chromium renders the page
def test_a_partial_run_says_so_in_its_report_and_in_the_comparison(tmp_path: Path) -> None:
    run = tmp_path / "partial"
    result = run_cli(
        "experiment=demo", "wandb=disabled", "budget.max_usd=0.05", f"hydra.run.dir={run}"
    )
    assert result.returncode == 4, result.stderr
    dom = render(run / "report.html", tmp_path)
    assert 'id="banner-PARTIAL"' in dom and 'id="banner-DEMO"' in dom
    assert "PARTIAL: budget.max_usd=0.05 reached" in dom
    compared = aggregate(str(run), "--out", str(tmp_path / "cmp"), cwd=tmp_path)
    # the comparison is written, and the exit says a run in it is not finished
    assert compared.returncode == 1, compared.stderr
    last = compared.stderr.strip().splitlines()[-1]  # with the budget its resume needs
    assert f"finish with: python -m healthbench_exp resume={run} budget.max_usd=" in last, last
    (row,) = json.loads((tmp_path / "cmp" / "sweep_summary.json").read_text())["jobs"]
    assert row["status"] == "partial" and row["banners"] == "DEMO PARTIAL"
    markdown = (tmp_path / "cmp" / "sweep_summary.md").read_text()
    assert "**PARTIAL**: see each run: 1 of 1 runs (partial)" in markdown


def test_the_final_status_reaches_the_report(tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "wandb=disabled", "offline_server.empty_reply_rate=0.3",
        "runner.max_failure_fraction=0", f"hydra.run.dir={run}",
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed"
    html = (run / "report.html").read_text()
    assert "id='banner-FAILED'" in html and status["error"] in html


@pytest.mark.slow  # Chromium renders the page
def test_meta_eval_report_has_its_context_and_fits_the_page(tmp_path: Path) -> None:
    run = tmp_path / "meta"
    result = run_cli("experiment=demo", "task=meta_eval", "wandb=disabled", f"hydra.run.dir={run}")
    assert result.returncode == 0, result.stderr
    dom = render(run / "report.html", tmp_path)
    assert 'id="banner-DEMO"' in dom and "<th>judge</th><td>offline-judge</td>" in dom
    assert "judge T=0.5, seed 0" in dom and "40 rows, 40 graded" in dom
    assert_fits(run / "report.html", tmp_path)
