"""Which replies an eval grades: sampled from the model, written by physicians, or from a file.

`work_items` turns the loaded examples and `completions.*` into the (example, rollout) items the
runner grades, choosing rows exactly as simple-evals does:

- `model`: a seeded sample of `sampling.num_examples` examples, each `rollouts_per_example` times;
- `physician` (SPEC 4): only rows whose ideal completion is of `completions.group`, then the
  seeded sample, then the repeats; the reply is `ideal_completion`. On HealthBench Professional
  data (SPEC 6) there are no groups: the rows with a `physician_response`, graded as the reply;
- `physician_references`: the same rows, one item per reference completion (4 per row); the
  seeded sample is drawn from those items; rollout `k` is reference `k % 4`, repeat `k // 4`;
- `file`: the user's JSONL, one line per reply: `prompt_id`, `completion` (a string, or the
  verifiers form `[{"role": "assistant", "content": ...}]`), optionally `rollout` (default: the
  line's count for that prompt_id) and `messages` (what the model was sent, system message
  included). A run's own `examples.jsonl` is such a file; so is a run's `results/` dataset
  (`completions.path=<run>/results`: `prompt`, `completion`, `rollout`, `info.prompt_id`).

The graded conversation (SPEC 2) is every message the model was sent, its system message
included, then the reply. Given replies are graded on the conversation they answered: a file's
recorded `messages` (the dataset prompt, optionally preceded by one system message), else the
dataset prompt preceded by `model.system_message` (null: none), the reference's sampler's;
physician replies on the dataset prompt alone, as the reference's physician modes. So a run's
own replies regrade to exactly its verdicts (the same grader prompts: the cache answers them),
and, regraded with the run's `sampling.*`, in its order, to exactly its metrics.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from healthbench_exp.config.checks import check_professional_physician
from healthbench_exp.config.schema import (
    CompletionsConfig,
    CompletionSource,
    ConfigError,
    SamplingConfig,
)
from healthbench_exp.core.types import Example, RowItem, WorkItem
from healthbench_exp.data.healthbench import (
    DataError,
    jsonl_rows,
    parse_messages,
    row_label,
    sample_examples,
)
from healthbench_exp.data.rows import json_object

log = logging.getLogger(__name__)


def work_items(
    examples: Sequence[Example],
    completions: CompletionsConfig,
    sampling: SamplingConfig,
    *,
    system_message: str | None,
) -> tuple[list[WorkItem], dict[str, object]]:
    """The items to grade, in grading order, each with its example, and a description of the
    choice for summary.json (`row_items`, whose arguments it takes)."""
    items, info = row_items(examples, completions, sampling, system_message=system_message)
    return [item.work_item(examples) for item in items], info


def row_items(
    examples: Sequence[Example],
    completions: CompletionsConfig,
    sampling: SamplingConfig,
    *,
    system_message: str | None,
) -> tuple[list[RowItem], dict[str, object]]:
    """The items to grade, in grading order, each naming its example by its position in
    `examples`, and a description of the choice for summary.json.

    `examples` may build each example when asked (`data.example_rows.ExampleRows`): with
    sampled replies none is asked for; the other sources read each example as few times as
    they need it. `system_message` is `model.system_message`: file replies without recorded
    `messages` were answers to it and the dataset prompt.
    """
    source = completions.source
    n, seed, repeats = sampling.num_examples, sampling.seed, sampling.rollouts_per_example
    physician_modes = (CompletionSource.physician, CompletionSource.physician_references)
    info: dict[str, object] = {"source": source.value}
    if source is CompletionSource.model:
        chosen = sample_examples(range(len(examples)), n, seed)  # the same picks as of examples
        return [RowItem(i, r) for r in range(repeats) for i in chosen], info
    if source is CompletionSource.file:
        if repeats != 1 and completions.regrade_of is None:  # a regrade keeps its source's
            raise ConfigError(
                "completions=file grades each reply in the file once; "
                "set sampling.rollouts_per_example=1 (put repeats in the file as rollouts)"
            )
        assert completions.path is not None  # validated
        items, skipped = file_items(
            Path(completions.path).expanduser(), examples, n, seed, system_message
        )
        info.update(path=completions.path, examples_without_completion=skipped)
        if completions.regrade_of is not None:
            info.update(regrade_of=regrade_source(Path(completions.regrade_of)))
        return items, info
    assert source in physician_modes
    return physician_items(examples, completions, n, seed, repeats, info), info


def physician_items(
    examples: Sequence[Example],
    completions: CompletionsConfig,
    n: int | None,
    seed: int,
    repeats: int,
    info: dict[str, object],
) -> list[RowItem]:
    """`row_items` for the physician sources (the module docstring); adds the rows in the
    group to `info`."""
    group = f"Group {completions.group}"
    in_group = []  # the positions of the rows of `group`, until a Professional row is seen
    for i, example in enumerate(examples):
        if example.professional:
            rows = professional_physician_rows(examples, completions)
            info.update(rows_in_group=len(rows))
            picked = sample_examples(rows, n, seed)
            return [RowItem(p, r, completion=text) for r in range(repeats) for p, text in picked]
        if _ideal(example).get("ideal_completions_group") == group:
            in_group.append(i)
    info.update(group=completions.group, rows_in_group=len(in_group))
    if not in_group:
        raise DataError(
            f"no example has physician completions of {group} "
            f"(of {len(examples)} examples; groups present: {_groups(examples)})"
        )
    if completions.source is CompletionSource.physician:
        chosen = [(i, _ideal_text(examples[i])) for i in sample_examples(in_group, n, seed)]
        return [RowItem(i, r, completion=text) for r in range(repeats) for i, text in chosen]
    pairs = [(i, k, text) for i in in_group for k, text in enumerate(_references(examples[i]))]
    if n is not None and n < len(pairs):
        pairs = random.Random(seed).sample(pairs, n)
    return [RowItem(i, r * 4 + k, completion=text) for r in range(repeats) for i, k, text in pairs]


def regrade_source(run_dir: Path) -> dict[str, object]:
    """What a regrade's summary records of its source run: its directory, model, judge (and
    jury, where it had one) and overall score, from its summary.json."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"regrade source {run_dir}: no readable summary.json ({exc})") from None
    config = summary.get("config") or {}
    source: dict[str, object] = {
        "run": str(run_dir),
        "model": (config.get("model") or {}).get("name"),
        "judge": (config.get("judge") or {}).get("name"),
        "overall_score": (summary.get("metrics") or {}).get("overall_score"),
    }
    if config.get("jury"):
        source["jury"] = config["jury"]
    return source


def professional_physician_rows(
    examples: Sequence[Example], completions: CompletionsConfig
) -> list[tuple[int, str]]:
    """The HealthBench Professional rows whose `physician_response` `completions=physician`
    grades (rows without one are skipped), each as (its position in `examples`, that reply);
    ConfigError for a group or reference completions, which Professional data does not have."""
    try:
        check_professional_physician(completions)
    except ConfigError as exc:
        raise ConfigError(
            f"the data is HealthBench Professional: {exc}; with difficulty=professional no "
            "group is asked for"
        ) from None
    professional, rows = 0, []
    for i, example in enumerate(examples):
        if example.professional:
            professional += 1
            if example.physician_response is not None:
                rows.append((i, example.physician_response))
    if not rows:
        raise DataError(
            f"no HealthBench Professional row has a physician_response (of {professional})"
        )
    if len(rows) < len(examples):
        log.warning(
            "completions=physician: %d of the %d examples have a physician_response; "
            "only those are graded",
            len(rows),
            len(examples),
        )
    return rows


def _ideal(example: Example) -> Mapping[str, object]:
    return example.ideal_completions_data or {}


def _groups(examples: Sequence[Example]) -> list[str]:
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


def _reply_text(value: object, where: str) -> str | None:
    """The reply of a file line: a string, null, or the verifiers list of assistant messages."""
    if value is None or isinstance(value, str):
        return value
    last: object = value[-1] if isinstance(value, list) and value else None
    if (
        isinstance(last, dict)
        and last.get("role") == "assistant"
        and isinstance(content := last.get("content"), str)
    ):
        return content
    raise DataError(
        f"{where}: 'completion' must be a string, null, or a list of messages ending with an "
        "assistant message"
    )


def _messages(
    value: object, example: Example, system_message: str | None, where: str
) -> tuple[dict[str, str], ...]:
    """The conversation a file's reply answered: its recorded `messages` (the dataset prompt,
    optionally after one system message the model was sent), else `system_message` and the
    dataset prompt."""
    prompt = tuple(example.prompt)
    if value is None:
        system = ({"role": "system", "content": system_message},) if system_message else ()
        return (*system, *prompt)
    messages = parse_messages(value, where, "messages")
    if messages == prompt or (messages[0]["role"] == "system" and messages[1:] == prompt):
        return messages
    raise DataError(
        f"{where}: 'messages' differ from the dataset's prompt for {example.prompt_id} (one "
        "system message before it aside); the reply would be graded on the wrong conversation"
    )


def results_rows(path: Path) -> Iterator[tuple[str, dict[str, object]]]:
    """A run's `results/` dataset (`datasets.save_to_disk`) as completion-file rows."""
    import datasets

    try:
        records = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as exc:
        raise DataError(
            f"completions.path={path}: a directory, but not a saved results dataset ({exc})"
        ) from None
    for index, record in enumerate(records):
        where = f"{path.name} row {index}"
        info = record.get("info") or {}
        yield (
            where,
            {
                "prompt_id": info.get("prompt_id"),
                "rollout": record.get("rollout"),
                "messages": record.get("prompt"),
                "completion": record.get("completion"),
            },
        )


def file_items(
    path: Path,
    examples: Sequence[Example],
    num_examples: int | None,
    seed: int,
    system_message: str | None,
) -> tuple[list[RowItem], int]:
    """Items from a completions file (or a run's results dataset), and how many dataset
    examples it has no reply for.

    The examples are taken in the order `sampling` would draw them from the dataset when the
    file covers only such examples (a run's own file: its order, so even bootstrap stds
    repeat), otherwise sampled from the examples the file covers.
    """
    rows: Iterator[tuple[str, object]]
    if path.is_dir():
        rows = results_rows(path)
    elif path.is_file():
        rows = jsonl_rows(path)
    else:
        raise ConfigError(f"completions.path={path}: no such file or directory")
    ids = [e.prompt_id for e in examples]
    by_id = {prompt_id: i for i, prompt_id in enumerate(ids)}
    found: dict[str, list[RowItem]] = {}
    seen: dict[tuple[str, int], str] = {}
    for where, decoded in rows:
        prompt_id, where = row_label(decoded, where)
        row = json_object(decoded, where)
        position = by_id.get(prompt_id)
        if position is None:
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
        messages = _messages(row.get("messages"), examples[position], system_message, where)
        items.append(
            RowItem(
                position,
                rollout,
                completion=text,
                messages=messages,
                error=None if text is not None else f"{where}: the file has no reply",
            )
        )
    if not found:
        raise DataError(f"{path}: no completions in the file")
    covered = [i for i, prompt_id in enumerate(ids) if prompt_id in found]
    skipped = len(ids) - len(covered)
    if skipped:
        log.warning(
            "%s has replies for %d of the %d examples; the other %d are not graded",
            path.name,
            len(covered),
            len(ids),
            skipped,
        )
    drawn = sample_examples(range(len(ids)), num_examples, seed)
    if found.keys() <= {ids[i] for i in drawn}:
        chosen = [i for i in drawn if ids[i] in found]
    else:
        chosen = sample_examples(covered, num_examples, seed)
    items = [item for i in chosen for item in found[ids[i]]]
    return sorted(items, key=lambda item: item.rollout), skipped
