"""A jury run in W&B: a real offline run written by the package's W&B worker process, read back
from its `.wandb` log: the `jury/...` summary entries and a verdict column per judge in the
per-criterion table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from healthbench_exp.core.summary import RunSummary
from healthbench_exp.output.wandb import content as wandb_content
from healthbench_exp.output.wandb.jury import verdict_members
from tests.output.test_jury_html import MEMBERS, write_jury_run
from tests.wandb_log import OfflineRun, read_run


def offline_run(tmp_path: Path, run_dir: Path, summary: RunSummary) -> Path:
    """Log `summary` and `run_dir`'s files as the worker does at the end of a job; the folder of
    the offline run it wrote."""
    (run_dir / "results").mkdir(exist_ok=True)
    (run_dir / "results" / "state.json").write_text("{}")
    wandb_dir = tmp_path / "wandb_dir"
    init = {"mode": "offline", "dir": str(wandb_dir), "project": "p", "id": "juryrun1"}
    commands = [
        {"op": "open", "init": {**init, "job_type": "eval"}, "output_dir": str(run_dir)},
        {"op": "finish", "summary": summary.to_dict()},
    ]
    env = {
        **os.environ,
        "WANDB_DIR": str(wandb_dir),
        "WANDB_DATA_DIR": str(tmp_path / "wandb_data"),
        "WANDB_CACHE_DIR": str(tmp_path / "wandb_cache"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "healthbench_exp.output.wandb.worker"],
        input="".join(json.dumps(c) + "\n" for c in commands),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events] == ["opened", "done"], (events, result.stderr[-2000:])
    (folder,) = sorted((wandb_dir / "wandb").glob("offline-run-*"))
    return folder


def per_criterion_table(run: OfflineRun) -> dict[str, Any]:
    (artifact,) = [a for a in run.artifacts if a.type == wandb_content.ARTIFACT_TYPE]
    (entry,) = [c for c in artifact.manifest.contents if c.path == "per_criterion.table.json"]
    return json.loads(Path(entry.local_path).read_text())


def test_a_jury_run_logs_its_metrics_and_each_judges_verdict(tmp_path: Path) -> None:
    summary = write_jury_run(tmp_path / "run")
    jury = summary.jury
    assert jury is not None
    run = read_run(offline_run(tmp_path, tmp_path / "run", summary))
    logged = run.summary
    assert logged["jury/members"] == "judge-a, judge-b, judge/c"
    assert logged["jury/rule"] == "mean"
    for name, value in jury.metrics.items():
        assert logged[f"jury/{name}"] == pytest.approx(value), name
    assert (
        logged["jury/by_judge/judge_c/overall_score"] == jury.by_judge["judge/c"]["overall_score"]
    )
    assert (
        logged["jury/by_judge/judge-a/theme:hedging"] == jury.by_judge["judge-a"]["theme:hedging"]
    )
    first = jury.agreement[0]
    assert logged["jury/agreement/judge-a~judge-b/n"] == first.n
    assert logged["jury/agreement/judge-a~judge-b/kappa"] == pytest.approx(first.kappa)
    acc = first.by["axis:accuracy"]
    assert logged["jury/agreement/judge-a~judge-b/axis:accuracy/agreement"] == acc.agreement
    # an undefined kappa is left out, its n and agreement are there
    assert first.by["axis:completeness"].kappa is None
    assert "jury/agreement/judge-a~judge-b/axis:completeness/kappa" not in logged
    assert logged["jury/agreement/judge-a~judge-b/axis:completeness/n"] == 1
    # the primary judge's metrics stay under their reference names
    assert logged["overall_score"] == pytest.approx(summary.metrics["overall_score"])

    table = per_criterion_table(run)
    columns = table["columns"]
    assert columns == wandb_content.PER_CRITERION_COLUMNS + [f"verdict:{m}" for m in MEMBERS]
    rows = [
        json.loads(x) for x in (tmp_path / "run" / "per_criterion.jsonl").read_text().splitlines()
    ]
    assert len(table["data"]) == len(rows) == 5
    for cells, row in zip(table["data"], rows, strict=True):
        assert cells[-3:] == [row["verdicts"][m] for m in MEMBERS]
    criterion = columns.index("criterion")
    (second,) = [c for c in table["data"] if c[criterion] == "criterion 1 of p1"]
    assert second[-3:] == [False, None, True]  # judge-b did not grade it


def test_a_one_judge_run_has_no_jury_entries_or_columns(tmp_path: Path) -> None:
    summary = write_jury_run(tmp_path / "run", jury=False)
    run = read_run(offline_run(tmp_path, tmp_path / "run", summary))
    assert not [k for k in run.summary if k.startswith("jury/")]
    assert per_criterion_table(run)["columns"] == wandb_content.PER_CRITERION_COLUMNS


def test_the_verdict_columns_follow_the_rows_when_the_summary_has_no_jury(tmp_path: Path) -> None:
    write_jury_run(tmp_path / "run")
    path = tmp_path / "run" / "per_criterion.jsonl"
    members = verdict_members(path)
    assert members == MEMBERS
    (part,) = wandb_content.criterion_rows(path, members)
    assert [row[-3:] for row in part][:3] == [
        [True, True, False],
        [False, None, True],
        [True, False, False],
    ]
    write_jury_run(tmp_path / "one", jury=False)
    assert verdict_members(tmp_path / "one" / "per_criterion.jsonl") == []
    (tmp_path / "empty.jsonl").write_text("")
    assert verdict_members(tmp_path / "empty.jsonl") == []
