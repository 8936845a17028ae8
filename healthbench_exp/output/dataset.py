"""The run's results as an HF dataset (`results/`, `datasets.save_to_disk`).

- an eval: one record per scored row, in the verifiers environment's schema (SPEC section 5):
  `results_record`; failed and unscorable rows stay in examples.jsonl;
- a meta-eval: its per-row verdicts, the rows of meta_eval.jsonl (with a jury, `judges`: every
  judge's verdict, explanation and error, the primary judge first).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from healthbench_exp.grading.scoring import consensus_criteria
from healthbench_exp.output.files import criterion_rows, example_row

if TYPE_CHECKING:
    import datasets

    from healthbench_exp.core.types import ExampleResult

SHARD = "data-00000-of-00001.arrow"  # what `save_to_disk(num_shards=1)` names its one shard
BATCH = 200  # records per Arrow record batch of the shard
STATE_KEYS = ("_fingerprint", "_format_columns", "_format_kwargs", "_format_type",
              "_output_all_columns")  # fmt: skip


def results_record(result: ExampleResult) -> dict[str, object]:
    """One row of the results dataset, in the verifiers environment's schema (SPEC section 5):
    `record_of_lines` of the row's own examples.jsonl and per_criterion.jsonl rows."""
    assert result.score is not None and result.completion is not None
    return record_of_lines(example_row(result), criterion_rows(result))


def record_of_lines(
    example: Mapping[str, object], criteria: Sequence[Mapping[str, object]]
) -> dict[str, object]:
    """The results dataset's record of a scored row, from its examples.jsonl row and its
    per_criterion.jsonl rows (`output.files`), as written or as read back."""
    table = consensus_criteria()
    return {
        "prompt": example["messages"],
        "completion": [{"role": "assistant", "content": example["completion"]}],
        "reward": example["reward"],
        "reward_healthbench": example["reward"],
        "score": example["score"],
        "rollout": example["rollout"],
        "answer": "",
        "task": "default",
        "info": {
            "prompt_id": example["prompt_id"],
            "theme": example["theme"],
            "criteria": [c["criterion"] for c in criteria],
            "criterion_ids": [c["criterion_id"] for c in criteria],
            "points_list": [c["points"] for c in criteria],
            "axes": [c["axis"] for c in criteria],
            "consensus_criteria": [
                table.get(cluster) if isinstance(cluster := c["cluster"], str) and cluster else None
                for c in criteria
            ],
        },
        "performance_by_rubric": [
            {"criteria_met": c["criteria_met"], "judge_explanation": c["explanation"] or None}
            for c in criteria
        ],
    }


def write_results_dataset(path: Path, results: list[ExampleResult]) -> None:
    """Save the scored rows as an HF dataset; failed and unscorable rows stay in examples.jsonl."""
    scored = [r for r in results if r.metrics is not None]
    integral = all(isinstance(c.points, int) for r in scored for c in r.example.rubrics)
    write_results_records(path, (results_record(r) for r in scored), integral)


def results_features(integral: bool) -> datasets.Features:
    """The results dataset's columns (SPEC section 5); `integral`: `points_list` holds ints."""
    from datasets import Features, Sequence, Value

    message = {"role": Value("string"), "content": Value("string")}
    return Features(
        {
            "prompt": [message],
            "completion": [message],
            "reward": Value("float64"),
            "reward_healthbench": Value("float64"),
            "score": Value("float64"),
            "rollout": Value("int32"),
            "answer": Value("string"),
            "task": Value("string"),
            "info": {
                "prompt_id": Value("string"),
                "theme": Value("string"),
                "criteria": Sequence(Value("string")),
                "criterion_ids": Sequence(Value("string")),
                "points_list": Sequence(Value("int64" if integral else "float64")),
                "axes": Sequence(Value("string")),
                "consensus_criteria": [
                    {
                        "theme": Value("string"),
                        "behavior_category": Value("string"),
                        "criterion": Value("string"),
                    }
                ],
            },
            "performance_by_rubric": [
                {"criteria_met": Value("bool"), "judge_explanation": Value("string")}
            ],
        }
    )


def write_results_records(path: Path, records: Iterable[dict[str, object]], integral: bool) -> None:
    """Save `records` (`results_record`s, in order) as the results dataset, each made as it is
    written; `integral`: every criterion's points are whole numbers (an int column)."""
    import datasets
    from datasets.arrow_writer import ArrowWriter

    datasets.disable_progress_bars()
    features = results_features(integral)
    # streamed: each row's record is made as it is written, in batches, straight into the
    # dataset's one shard (one even when empty: `load_from_disk` cannot read back a zero-shard
    # dataset), then state.json and dataset_info.json as `save_to_disk` writes them. Nothing
    # of the rows is read back: `save_to_disk`'s copy of a staged file read it memory-mapped,
    # and those pages counted in the process's peak memory (bench, 5,000 rows: 352 MB, now 336)
    path.mkdir(parents=True, exist_ok=True)
    shard = path / SHARD
    rows = iter(records)
    with ArrowWriter(features=features, path=str(shard), writer_batch_size=BATCH) as writer:
        # a batch of records as columns, encoded column by column: the same values and batches
        # as `write(features.encode_example(record))` per record (ArrowWriter turns the records
        # it holds into these columns itself), without `encode_example` walking every record
        # for objects to convert (numpy, pandas), which JSON values never are
        while batch := list(islice(rows, BATCH)):
            columns = {name: [record[name] for record in batch] for name in features}
            writer.write_batch(features.encode_batch(columns))
        writer.finalize()
    dataset = datasets.Dataset.from_file(str(shard))  # its schema and info; no row is read
    _write_state(path, dataset)
    del dataset


def _write_state(path: Path, dataset: datasets.Dataset) -> None:
    """The state.json and dataset_info.json `Dataset.save_to_disk` writes beside one shard."""
    from datasets.utils.py_utils import asdict  # datasets' own: leaves out fields at defaults

    own = vars(dataset)
    state = {key: own[key] for key in STATE_KEYS}
    state["_split"] = None if dataset.split is None else str(dataset.split)
    state["_data_files"] = [{"filename": SHARD}]
    (path / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True), "utf-8")
    info = asdict(dataset.info)
    sorted_info = {key: info[key] for key in sorted(info)}  # first level only, as datasets does
    (path / "dataset_info.json").write_text(json.dumps(sorted_info, indent=2), "utf-8")


def write_meta_eval_dataset(path: Path, records: Sequence[Mapping[str, object]]) -> None:
    """Save the meta-eval's per-row verdicts (the rows of meta_eval.jsonl) as an HF dataset."""
    import datasets
    from datasets import Features, Sequence, Value

    datasets.disable_progress_bars()
    features = Features(
        {
            "prompt_id": Value("string"),
            "completion_id": Value("string"),
            "repeat": Value("int32"),
            "category": Value("string"),
            "rubric": Value("string"),
            "criteria_met": Value("bool"),
            "explanation": Value("string"),
            "judge_attempts": Value("int32"),
            "error": Value("string"),
            "binary_labels": Sequence(Value("bool")),
            "anonymized_physician_ids": Sequence(Value("string")),
        }
    )
    judged = {"judge": Value("string"), "criteria_met": Value("bool")}
    judged |= {"explanation": Value("string"), "error": Value("string")}
    if any("verdicts" in record for record in records):  # a jury: every judge's, primary first
        features["judges"] = [judged]
    columns = {name: [record.get(name) for record in records] for name in features}
    if "judges" in features:
        columns["judges"] = [_judges(record) for record in records]
    datasets.Dataset.from_dict(columns, features=features).save_to_disk(str(path), num_shards=1)


def _judges(record: Mapping[str, object]) -> list[dict[str, object]]:
    """A meta_eval.jsonl row's `verdicts`, `explanations` and `errors` (by judge name) as one
    entry per judge, in their order."""
    verdicts, explanations, errors = (record.get(k) for k in ("verdicts", "explanations", "errors"))
    if not isinstance(verdicts, dict):
        return []
    said = explanations if isinstance(explanations, dict) else {}
    why = errors if isinstance(errors, dict) else {}
    return [
        {"judge": name, "criteria_met": met, "explanation": said.get(name), "error": why.get(name)}
        for name, met in verdicts.items()
    ]
