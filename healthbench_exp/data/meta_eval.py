"""Meta-eval rows (`task=meta_eval`): a conversation, a completion, one rubric criterion and
several physicians' verdicts on it (SPEC 4); where the file is, and each row validated."""

from __future__ import annotations

from pathlib import Path

from healthbench_exp.config.schema import ConfigError, DatasetConfig, DataSource, TaskConfig
from healthbench_exp.core.types import MetaEvalRow
from healthbench_exp.data.healthbench import (
    DataError,
    bundled_sample_path,
    jsonl_rows,
    official_file,
    parse_messages,
    row_label,
)
from healthbench_exp.data.rows import data_file_problem, json_object

META_SAMPLE_FILE = "meta_eval_sample.jsonl"


def parse_meta_row(decoded: object, where: str) -> MetaEvalRow:
    """Validate one meta-eval row; raise DataError naming `where` and the prompt_id."""
    prompt_id, label = row_label(decoded, where)
    row = json_object(decoded, where)
    prompt = parse_messages(row.get("prompt"), label)
    text: dict[str, str] = {}
    for key in ("completion", "completion_id", "rubric", "category"):
        value = row.get(key)
        if not isinstance(value, str):
            raise DataError(f"{label}: '{key}' must be a string")
        text[key] = value
    if not text["rubric"].strip():
        raise DataError(f"{label}: 'rubric' is empty")
    labels, ids = row.get("binary_labels"), row.get("anonymized_physician_ids")
    if not isinstance(labels, list) or not labels or not all(isinstance(x, bool) for x in labels):
        raise DataError(f"{label}: 'binary_labels' must be a non-empty list of true/false")
    if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
        raise DataError(f"{label}: 'anonymized_physician_ids' must be a list of strings")
    if len(ids) != len(labels):
        raise DataError(
            f"{label}: {len(labels)} binary_labels but {len(ids)} anonymized_physician_ids"
        )
    return MetaEvalRow(
        prompt_id=prompt_id,
        completion_id=text["completion_id"],
        prompt=prompt,
        completion=text["completion"],
        rubric=text["rubric"],
        category=text["category"],
        binary_labels=tuple(labels),
        physician_ids=tuple(ids),
        where=where,
    )


def meta_eval_path(dataset: DatasetConfig, task: TaskConfig) -> Path:
    """`dataset.path`, the bundled sample (`dataset.source=bundled`) or the official file
    (`task.meta_eval_file`, checked against `task.meta_eval_sha256`)."""
    if dataset.path:
        problem = data_file_problem("dataset.path", dataset.path)
        if problem is not None:
            raise ConfigError(problem)
        return Path(dataset.path).expanduser()
    if dataset.source is DataSource.bundled:
        return bundled_sample_path(META_SAMPLE_FILE)
    return official_file(dataset, task.meta_eval_file, task.meta_eval_sha256)


def load_meta_rows(dataset: DatasetConfig, task: TaskConfig) -> list[MetaEvalRow]:
    """Every row of the meta-eval file `meta_eval_path` names, validated (DataError if none)."""
    rows = [parse_meta_row(row, where) for where, row in jsonl_rows(meta_eval_path(dataset, task))]
    if not rows:
        raise DataError("the meta-eval file has no rows")
    return rows
