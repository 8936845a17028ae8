"""A meta-eval jury in W&B, end to end: `python -m healthbench_exp task=meta_eval jury=[...]
wandb=offline` in a subprocess against the built-in endpoint, its judges disagreeing by known
rates (`offline_server.judge_flip_rates`: the member flips every verdict of the primary), then
the offline run read back from its `.wandb` log and files: the per_row table, logged and in the
results artifact, has a `verdict:<judge>` column per judge, as an eval's per_criterion table."""

from __future__ import annotations

import json
from pathlib import Path

from healthbench_exp.output.wandb import content as wandb_content
from tests.e2e.test_e2e import run_cli
from tests.wandb_log import read_run

MEMBERS = ["offline-judge", "offline-judge-b"]  # primary first


def test_a_meta_eval_jury_run_logs_each_judges_verdict_per_row(tmp_path: Path) -> None:
    preset = tmp_path / "conf" / "judge" / "offline_b.yaml"
    preset.parent.mkdir(parents=True)
    preset.write_text(f"defaults:\n  - offline\nname: {MEMBERS[1]}\n", encoding="utf-8")
    out = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "task=meta_eval", "wandb=offline", "runner.progress=false",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "jury=[offline_b]",
        f"offline_server.judge_flip_rates='{MEMBERS[0]}=0,{MEMBERS[1]}=1'",
        "cache.enabled=false", f"hydra.run.dir={out}",
        env={
            "WANDB_DIR": str(tmp_path / "wandb_dir"),
            "WANDB_DATA_DIR": str(tmp_path / "wandb_data"),
            "WANDB_CACHE_DIR": str(tmp_path / "wandb_cache"),
        },
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (folder,) = sorted((tmp_path / "wandb_dir" / "wandb").glob("offline-run-*"))
    run = read_run(folder)
    assert run.exit_code == 0 and run.job_type == "meta_eval"
    rows = [json.loads(x) for x in (out / "meta_eval.jsonl").read_text().splitlines()]
    assert len(rows) == 40
    columns = wandb_content.META_ROW_COLUMNS + [f"verdict:{m}" for m in MEMBERS]

    (artifact,) = [a for a in run.artifacts if a.type == wandb_content.ARTIFACT_TYPE]
    (entry,) = [c for c in artifact.manifest.contents if c.path == "per_row.table.json"]
    stored = json.loads(Path(entry.local_path).read_text())
    logged = json.loads((folder / "files" / run.summary["per_row/path"]).read_text())
    for table in (stored, logged):
        assert table["columns"] == columns
        assert len(table["data"]) == 40
        for cells, row in zip(table["data"], rows, strict=True):
            assert cells[:3] == [
                row["prompt_id"], row["completion_id"], row["repeat"]
            ]  # fmt: skip
            verdicts = cells[-2:]
            assert verdicts == [row["verdicts"][m] for m in MEMBERS]
            assert verdicts[0] == row["criteria_met"]  # the primary judge's is the run's own
            assert verdicts[1] is (not verdicts[0])  # the member flips every verdict
    assert run.summary["jury/members"] == ", ".join(MEMBERS)


def test_a_one_judge_meta_eval_row_table_has_no_verdict_columns(tmp_path: Path) -> None:
    rows = tmp_path / "meta_eval.jsonl"
    rows.write_text(
        json.dumps({c: None for c in wandb_content.META_ROW_COLUMNS} | {"binary_labels": [True]})
        + "\n",
        encoding="utf-8",
    )
    table = wandb_content.meta_row_table(rows)
    assert table.columns == wandb_content.META_ROW_COLUMNS
    assert table.data[0][wandb_content.META_ROW_COLUMNS.index("binary_labels")] == "1"
