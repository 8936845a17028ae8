"""Tables a user reads whole (issue 27 item 7): the meta-eval's end-of-run table prints every
category name in full, its figures under their headers."""

from __future__ import annotations

import json
from pathlib import Path

from healthbench_exp.data.healthbench import bundled_sample_path
from healthbench_exp.data.meta_eval import META_SAMPLE_FILE
from tests.e2e.test_e2e import run_cli


def test_the_meta_eval_table_prints_whole_category_names_in_their_column(tmp_path: Path) -> None:
    result = run_cli(
        "experiment=demo", "task=meta_eval", "wandb=disabled", f"hydra.run.dir={tmp_path}"
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("by category:"))
    header = lines[start]
    rows = [line for line in lines[start + 1 :] if line.startswith("    ")]
    path = bundled_sample_path(META_SAMPLE_FILE)
    categories = {json.loads(line)["category"] for line in path.read_text().splitlines()}
    names = {c.removeprefix("cluster:") for c in categories}
    assert max(map(len, names)) > 60  # the sample has a name longer than the old 60-char cut
    assert {row.split()[0] for row in rows} == names  # each whole, apart from its figures
    for row in rows:
        judge, _, count = row.split()[1:]
        assert row.index(f" {judge} ") + len(judge) + 1 == header.index("judge") + len("judge")
        assert row.rstrip().endswith(count) and len(row.rstrip()) == len(header.rstrip())
