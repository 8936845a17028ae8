"""Which replies an eval grades: sampled from the model, written by physicians, or from a file.

`work_items` turns the loaded examples and `completions.*` into the (example, rollout) items the
runner grades, choosing rows exactly as simple-evals does:

- `model`: a seeded sample of `sampling.num_examples` examples, each `rollouts_per_example` times;
- `physician` (SPEC 4): only rows whose ideal completion is of `completions.group`, then the
  seeded sample, then the repeats; the reply is `ideal_completion`;
- `physician_references`: the same rows, one item per reference completion (4 per row); the
  seeded sample is drawn from those items; rollout `k` is reference `k % 4`, repeat `k // 4`;
- `file`: the user's JSONL, one line per reply: `prompt_id`, `completion` (a string, or the
  verifiers form `[{"role": "assistant", "content": ...}]`), optionally `rollout` (default: the
  line's count for that prompt_id) and `messages` (what the model was sent, system message
  included; default: the dataset prompt). A run's own `examples.jsonl` is such a file.

Given replies are graded on the conversation they answered: the recorded `messages` if the file
has them, otherwise the dataset prompt without a system message (as the reference's physician
modes).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import CompletionsConfig, CompletionSource, ConfigError, SamplingConfig
from .data import DataError, Example, jsonl_rows, parse_messages, row_label, sample_examples

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkItem:
    example: Example
    rollout: int
    completion: str | None = None  # the reply to grade; None: sample it from the model
    messages: tuple[dict[str, str], ...] | None = None  # what that reply answered, if recorded
    error: str | None = None  # the item cannot be graded (the file has no reply for it)


def work_items(
    examples: list[Example], completions: CompletionsConfig, sampling: SamplingConfig
) -> tuple[list[WorkItem], dict[str, Any]]:
    """The items to grade, in grading order, and a description of the choice for summary.json."""
    source = completions.source
    n, seed, repeats = sampling.num_examples, sampling.seed, sampling.rollouts_per_example
    info: dict[str, Any] = {"source": source.value}
    if source is CompletionSource.model:
        chosen = sample_examples(examples, n, seed)
        items = [WorkItem(e, r) for r in range(repeats) for e in chosen]
    elif source in (CompletionSource.physician, CompletionSource.physician_references):
        group = f"Group {completions.group}"
        rows = [
            e for e in examples if _ideal(e) and _ideal(e).get("ideal_completions_group") == group
        ]
        info.update(group=completions.group, rows_in_group=len(rows))
        if not rows:
            raise DataError(
                f"no example has physician completions of {group} "
                f"(of {len(examples)} examples; groups present: {_groups(examples)})"
            )
        if source is CompletionSource.physician:
            chosen = sample_examples(rows, n, seed)
            items = [
                WorkItem(e, r, completion=_ideal_text(e)) for r in range(repeats) for e in chosen
            ]
        else:
            pairs = [(e, k, text) for e in rows for k, text in enumerate(_references(e))]
            if n is not None and n < len(pairs):
                pairs = random.Random(seed).sample(pairs, n)
            items = [
                WorkItem(e, r * 4 + k, completion=text)
                for r in range(repeats)
                for e, k, text in pairs
            ]
    else:
        if repeats != 1:
            raise ConfigError(
                "completions=file grades each reply in the file once; "
                "set sampling.rollouts_per_example=1 (put repeats in the file as rollouts)"
            )
        assert completions.path is not None  # validated
        items, skipped = file_items(Path(completions.path).expanduser(), examples, n, seed)
        info.update(path=completions.path, examples_without_completion=skipped)
    return items, info


def _ideal(example: Example) -> dict[str, Any]:
    return example.ideal_completions_data or {}


def _groups(examples: list[Example]) -> list[str]:
    return sorted({str(_ideal(e).get("ideal_completions_group")) for e in examples if _ideal(e)})


def _ideal_text(example: Example) -> str:
    text = _ideal(example).get("ideal_completion")
    if not isinstance(text, str):
        raise DataError(
            f"{example.where} (prompt_id {example.prompt_id}): "
            "ideal_completions_data.ideal_completion must be a string"
        )
    return text


def _references(example: Example) -> list[str]:
    refs = _ideal(example).get("ideal_completions_ref_completions")
    if not isinstance(refs, list) or len(refs) != 4 or not all(isinstance(r, str) for r in refs):
        raise DataError(
            f"{example.where} (prompt_id {example.prompt_id}): "
            "ideal_completions_ref_completions must be a list of 4 strings"
        )
    return refs


def _reply_text(value: Any, where: str) -> str | None:
    """The reply of a file line: a string, null, or the verifiers list of assistant messages."""
    if value is None or isinstance(value, str):
        return value
    if (
        isinstance(value, list)
        and value
        and isinstance(value[-1], dict)
        and value[-1].get("role") == "assistant"
        and isinstance(value[-1].get("content"), str)
    ):
        return value[-1]["content"]
    raise DataError(
        f"{where}: 'completion' must be a string, null, or a list of messages ending with an "
        "assistant message"
    )


def _messages(value: Any, example: Example, where: str) -> tuple[dict[str, str], ...] | None:
    if value is None:
        return None
    messages = parse_messages(value, where, "messages")
    if [m for m in messages if m["role"] != "system"] != list(example.prompt):
        raise DataError(
            f"{where}: 'messages' (system messages aside) differ from the dataset's prompt for "
            f"{example.prompt_id}; the reply would be graded on the wrong conversation"
        )
    return messages


def file_items(
    path: Path, examples: list[Example], num_examples: int | None, seed: int
) -> tuple[list[WorkItem], int]:
    """Items from a completions file, and how many dataset examples it has no reply for."""
    if not path.is_file():
        raise ConfigError(f"completions.path={path}: no such file")
    by_id = {e.prompt_id: e for e in examples}
    found: dict[str, list[WorkItem]] = {}
    seen: dict[tuple[str, int], str] = {}
    for where, row in jsonl_rows(path):
        prompt_id, where = row_label(row, where)
        example = by_id.get(prompt_id)
        if example is None:
            raise DataError(f"{where}: no example with this prompt_id in the dataset")
        if "completion" not in row:
            raise DataError(f"{where}: no 'completion'")
        items = found.setdefault(prompt_id, [])
        rollout = row.get("rollout", len(items))
        if isinstance(rollout, bool) or not isinstance(rollout, int) or rollout < 0:
            raise DataError(f"{where}: 'rollout' must be an integer >= 0")
        if (prompt_id, rollout) in seen:
            raise DataError(f"{where}: rollout {rollout} repeats {seen[prompt_id, rollout]}")
        seen[prompt_id, rollout] = where
        text = _reply_text(row["completion"], where)
        items.append(
            WorkItem(
                example,
                rollout,
                completion=text,
                messages=_messages(row.get("messages"), example, where),
                error=None if text is not None else f"{where}: the file has no reply",
            )
        )
    if not found:
        raise DataError(f"{path}: no completions in the file")
    covered = [e for e in examples if e.prompt_id in found]
    skipped = len(examples) - len(covered)
    if skipped:
        log.warning(
            "%s has replies for %d of the %d examples; the other %d are not graded",
            path.name,
            len(covered),
            len(examples),
            skipped,
        )
    chosen = sample_examples(covered, num_examples, seed)
    items = [item for e in chosen for item in found[e.prompt_id]]
    return sorted(items, key=lambda item: item.rollout), skipped
