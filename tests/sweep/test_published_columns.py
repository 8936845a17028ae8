"""The sweep summary beside the published numbers: a column per job (the best-matching source's
verdict, difference and interval, or why nothing applies), in the CSV and the markdown table."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from healthbench_exp.core.summary import RunSummary
from healthbench_exp.published.run_side import with_published
from tests.conftest import DemoRun
from tests.published.test_run_side import as_paper_run

REPO = Path(__file__).resolve().parents[2]


def test_each_job_has_its_published_column(demo_run: DemoRun, tmp_path: Path) -> None:
    demo, paper = tmp_path / "demo", tmp_path / "paper"
    shutil.copytree(demo_run.directory, demo)
    shutil.copytree(demo_run.directory, paper)
    summary = with_published(RunSummary.from_dict(as_paper_run(paper, 0.4700)))
    (paper / "summary.json").write_text(json.dumps(summary.to_dict()), encoding="utf-8")
    out = tmp_path / "out"
    shown = subprocess.run(
        [sys.executable, "-m", "healthbench_exp.aggregate", str(demo), str(paper),
         "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    with (out / "sweep_summary.csv").open(encoding="utf-8") as f:
        rows = {Path(r["path"]).name if "path" in r else r["job"]: r for r in csv.DictReader(f)}
    by_note = [r for r in rows.values() if r.get("published_note")]
    by_verdict = [r for r in rows.values() if r.get("published_verdict")]
    assert [r["published_note"] for r in by_note] == ["sample is not an official set"]
    assert [r["published_verdict"] for r in by_verdict] == ["differs"]
    assert abs(float(by_verdict[0]["published_difference"]) + 0.0078) < 1e-9
    table = (out / "sweep_summary.md").read_text(encoding="utf-8")
    assert "published (best match)" in table
    assert "differs: -0.0078 ± 0.0044 vs 0.4778" in table
    assert "nothing applies: sample is not an official set" in table
