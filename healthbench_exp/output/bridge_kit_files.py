"""The bridge kit's own files (not a run's): the sample as HealthBench JSONL, and the judge
preset that sends the new judge's calls through the Batch API."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from healthbench_exp.core.types import Example


def example_row(example: Example) -> dict[str, object]:
    """An example as a row of the 2025 HealthBench schema (what `dataset.path` reads)."""
    return {
        "prompt": [dict(m) for m in example.prompt],
        "prompt_id": example.prompt_id,
        "rubrics": [
            {"criterion": c.text, "points": c.points, "tags": list(c.tags)} for c in example.rubrics
        ],
        "example_tags": list(example.example_tags),
        "ideal_completions_data": (
            None if example.ideal_completions_data is None else dict(example.ideal_completions_data)
        ),
    }


def write_sample(path: Path, examples: Sequence[Example]) -> Path:
    """The examples as JSONL at `path` (a new file; its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8") as out:
        for example in examples:
            out.write(json.dumps(example_row(example), ensure_ascii=False) + "\n")
    return path


def write_batch_preset(conf_dir: Path, preset: str) -> str:
    """`<conf_dir>/judge/<preset>_batch.yaml`: the preset `preset` with `batch: true` (the same
    model name and verdict settings); its name."""
    name = f"{preset}_batch"
    folder = conf_dir / "judge"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(
        f"defaults:\n  - {preset}\nbatch: true\n", encoding="utf-8"
    )
    return name
