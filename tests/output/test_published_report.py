"""report.html beside the published numbers: why nothing applies to the demo; a row per source
for a run compared with the paper."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from healthbench_exp.core.summary import RunSummary
from healthbench_exp.output.html.pages import refresh_report
from healthbench_exp.published.run_side import with_published
from tests.conftest import DemoRun
from tests.published.test_run_side import as_paper_run


def test_report_html_says_why_nothing_applies_or_shows_each_source(
    demo_run: DemoRun, tmp_path: Path
) -> None:
    html = (demo_run.directory / "report.html").read_text(encoding="utf-8")
    assert "Nothing published applies: sample is not an official set." in html
    folder = tmp_path / "run"
    shutil.copytree(demo_run.directory, folder)
    summary = with_published(RunSummary.from_dict(as_paper_run(folder, 0.4700)))
    (folder / "summary.json").write_text(json.dumps(summary.to_dict()), encoding="utf-8")
    html = refresh_report(folder).read_text(encoding="utf-8")
    assert "<h2 id='published'>Beside the published numbers</h2>" in html
    assert "<td class='published-verdict'>differs</td>" in html
    assert "-0.0078 ± 0.0044" in html
    assert html.count("<td class='published-verdict'>") == len(summary.published or [])
