"""Files people actually have: a data, meta-eval or completions file that starts with a UTF-8
byte order mark (as Windows editors save it) reads as the same rows as one without."""

from __future__ import annotations

import json
from pathlib import Path

from healthbench_exp.config.schema import DatasetConfig, TaskConfig
from healthbench_exp.data.completions import file_items
from healthbench_exp.data.healthbench import bundled_sample_path, load_examples
from healthbench_exp.data.meta_eval import META_SAMPLE_FILE, load_meta_rows
from tests.e2e.test_e2e import run_cli

BOM = b"\xef\xbb\xbf"


def with_bom(source: Path, target: Path) -> Path:
    target.write_bytes(BOM + source.read_bytes())
    return target


def test_a_data_file_with_a_bom_runs_the_demo_to_the_same_score(tmp_path) -> None:
    data = with_bom(bundled_sample_path(), tmp_path / "bom.jsonl")
    result = run_cli(  # W&B aside: the score is the point
        "experiment=demo",
        "wandb.mode=disabled",
        f"dataset.path={data}",
        f"hydra.run.dir={tmp_path}/r",
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert round(summary["metrics"]["overall_score"], 4) == 0.2879


def test_every_reader_of_user_files_takes_a_bom(tmp_path) -> None:
    plain = load_examples(DatasetConfig(path=str(bundled_sample_path())))
    data = with_bom(bundled_sample_path(), tmp_path / "bom.jsonl")
    assert load_examples(DatasetConfig(path=str(data))) == [
        e.__class__(**{**e.__dict__, "where": e.where.replace("sample.jsonl", "bom.jsonl")})
        for e in plain
    ]

    meta = with_bom(bundled_sample_path(META_SAMPLE_FILE), tmp_path / "meta.jsonl")
    rows = load_meta_rows(DatasetConfig(path=str(meta)), TaskConfig())
    assert rows[0].where == "meta.jsonl line 1" and rows[0].prompt_id

    completions = tmp_path / "replies.jsonl"
    lines = [json.dumps({"prompt_id": e.prompt_id, "completion": "ok"}) for e in plain[:3]]
    completions.write_bytes(BOM + "\n".join(lines).encode())
    items, skipped = file_items(completions, plain, None, 0, None)
    assert [plain[i.position].prompt_id for i in items] == [e.prompt_id for e in plain[:3]]
    assert skipped == len(plain) - 3
