"""The run beside the published numbers in W&B: a real offline run's summary says why nothing
applies to the demo; the keys and table of a comparable run's summary."""

from __future__ import annotations

import json
from pathlib import Path

from healthbench_exp.core.summary import RunSummary
from healthbench_exp.output.wandb.published import COLUMNS, published_metrics, published_table_rows
from healthbench_exp.published.run_side import with_published
from tests.e2e.test_e2e import run_cli
from tests.output.test_tracking import offline_runs, wandb_env
from tests.published.test_run_side import as_paper_run
from tests.wandb_log import read_run


def test_the_demo_runs_wandb_summary_says_why_nothing_applies(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_cli("experiment=demo", f"hydra.run.dir={out}", env=wandb_env(tmp_path))
    assert result.returncode == 0, result.stderr
    (run_dir,) = offline_runs(tmp_path / "wandb_dir")
    summary = read_run(run_dir).summary
    assert summary["published/note"] == "sample is not an official set"
    assert not any(k.startswith("published/") and k != "published/note" for k in summary)
    # the same summary.json, compared as if GPT-4.1 had run on all with the paper's settings
    data = as_paper_run(out, 0.4700)
    compared = with_published(RunSummary.from_dict(json.loads(json.dumps(data))))
    keys = published_metrics(compared)
    assert keys["published/verdict"] == "differs" and keys["published/value"] == 0.4778
    assert abs(keys["published/difference"] + 0.0078) < 1e-9  # type: ignore[operator]
    assert "Table 7" in str(keys["published/source"])
    assert keys["published/sources"] == len(compared.published or [])
    rows = published_table_rows(compared.published)
    assert len(rows) == len(compared.published or []) and len(rows[0]) == len(COLUMNS)
    assert rows[0][COLUMNS.index("verdict")] == "differs"
