"""Loading HealthBench examples through HF `datasets`, validating them, and sampling.

Local and official JSONL files are read with the `text` builder and parsed line by line, so every
value keeps the type it has in the file (points print as `[5]`, never `[5.0]`) and a bad row is
reported with its line number. The Hugging Face mirrors are read as published.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import json
import logging
import random
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from healthbench_exp.config.schema import ConfigError, DatasetConfig, DataSource
from healthbench_exp.core.types import AXES, Criterion, Example, tag_value
from healthbench_exp.core.types import THEMES as THEMES  # re-exported: the data's vocabulary
from healthbench_exp.data.professional import is_professional, parse_professional
from healthbench_exp.data.rows import (
    DataError,
    data_file_problem,
    json_object,
    parse_messages,
    row_label,
    rubric_items,
)

if TYPE_CHECKING:
    import datasets

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://openaipublic.blob.core.windows.net/simple-evals/healthbench/"
SAMPLE_FILE = "sample.jsonl"
SOURCE_TIMEOUT_S = 4.0  # a data source that does not answer within this fails the start
CACHE_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT)
ROWS_PER_BATCH = 500  # lines taken from the `text` builder's table at a time
T = TypeVar("T")
_TAG_SETS: dict[tuple[str, ...], tuple[str, ...]] = {}  # every criterion tag set read so far


def parse_example(decoded: object, where: str) -> Example:
    """Validate one decoded row; raise DataError naming `where` and the prompt_id."""
    prompt_id, label = row_label(decoded, where)
    row = json_object(decoded, where)

    def fail(message: str) -> DataError:
        return DataError(f"{label}: {message}")

    prompt = parse_messages(row.get("prompt"), label)

    criteria = []
    for i, (item, text, points) in enumerate(
        rubric_items(row.get("rubrics"), label, "rubrics", "criterion")
    ):
        tags = item.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise fail(f"rubrics[{i}] 'tags' must be a list of strings")
        if len(set(tags)) != len(tags):
            raise fail(f"rubrics[{i}] repeats a tag: {tags}")
        axis = tag_value(tags, "axis")
        if axis is not None and axis not in AXES:
            raise fail(f"rubrics[{i}] has unknown axis 'axis:{axis}'; valid: {sorted(AXES)}")
        # a few dozen tag sets recur over the whole set: each row's criteria share one copy
        tag_set = tuple(tags)
        criteria.append(
            Criterion(text=text, points=points, tags=_TAG_SETS.setdefault(tag_set, tag_set))
        )

    example_tags = row.get("example_tags")
    if not isinstance(example_tags, list) or not all(isinstance(t, str) for t in example_tags):
        raise fail("'example_tags' must be a list of strings")
    themes = [t for t in example_tags if t.startswith("theme:")]
    if len(themes) != 1:
        raise fail(f"needs exactly one 'theme:' tag in example_tags, found {themes}")
    if len(set(example_tags)) != len(example_tags):
        raise fail(f"example_tags repeats a tag: {example_tags}")

    ideal = row.get("ideal_completions_data")
    if ideal is not None and not isinstance(ideal, dict):
        raise fail("'ideal_completions_data' must be null or an object")
    return Example(
        prompt_id=prompt_id,
        prompt=prompt,
        rubrics=tuple(criteria),
        example_tags=tuple(example_tags),
        ideal_completions_data=ideal,
        where=where,
    )


def parse_row(row: object, where: str) -> Example:
    """One decoded row in either format (2025 HealthBench or HealthBench Professional), told
    apart by its keys (`data.professional.is_professional`)."""
    if is_professional(row, where):
        return parse_professional(row, where)
    return parse_example(row, where)


def validated(rows: Iterable[tuple[str, object]]) -> Iterator[Example]:
    """Each of the (where, row) pairs validated, in either format, as it is read; DataError for
    a bad row, an id seen twice (naming both rows) or no rows at all."""
    seen: dict[str, str] = {}
    for where, row in rows:
        example = parse_row(row, where)
        if example.prompt_id in seen:
            first = seen[example.prompt_id]
            raise DataError(f"{where}: duplicate prompt_id {example.prompt_id} (first at {first})")
        seen[example.prompt_id] = where
        yield example
    if not seen:
        raise DataError("the dataset has no examples")


def parse_examples(rows: Iterable[tuple[str, object]]) -> list[Example]:
    """Validate (where, row) pairs, each in either format; also rejects an id seen twice."""
    return list(validated(rows))


def check_jsonl_file(path: Path, chunk_bytes: int = 1 << 20) -> None:
    """DataError for a file `datasets` cannot read as text lines: empty, or not UTF-8 (naming the
    first line that is not). Read a chunk at a time, so a large file is never held whole."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines_before, blank = 0, True  # newlines in the chunks already checked; all blank so far
    with open(path, "rb") as file:
        while True:
            chunk = file.read(chunk_bytes)
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                # exc.object: the bytes of a character split at the chunk's start (no
                # newline among them), then the chunk
                line = lines_before + 1 + exc.object.count(b"\n", 0, exc.start)
                raise DataError(
                    f"{path.name} line {line} is not UTF-8 (byte {exc.object[exc.start]:#04x}); "
                    "save the file as UTF-8"
                ) from None
            if not chunk:
                break
            lines_before += chunk.count(b"\n")
            blank = blank and not chunk.strip()
    if blank:
        raise DataError(f"JSONL file {path} is empty; expected one JSON object per line")


def hf_datasets_cache() -> Path:
    """The folder where `datasets` keeps its files (HF_DATASETS_CACHE, else under HF_HOME, else
    ~/.cache/huggingface/datasets)."""
    import datasets

    return Path(datasets.config.HF_DATASETS_CACHE)


def unwritable_hf_cache(exc: OSError) -> ConfigError | None:
    """`exc` as one line if it is the Hugging Face cache that could not be written (`datasets`
    keeps its files there even for a local file: under HOME, `~/.cache/huggingface`, unless
    HF_HOME moves it), naming the folder and the fix; None for any other error."""
    cache = hf_datasets_cache()
    failed = Path(str(exc.filename)) if exc.filename else None
    if exc.errno not in CACHE_ERRNOS or failed is None:
        return None
    if failed != cache and failed not in cache.parents and cache not in failed.parents:
        return None
    return ConfigError(
        f"cannot write the Hugging Face cache {cache} ({failed}: {exc.strerror}), where "
        "`datasets` keeps its files; set HF_HOME to a writable folder (HF_HOME=/tmp/hf python "
        "-m healthbench_exp ...) or make it writable"
    )


def jsonl_lines(path: Path, rows_per_batch: int = ROWS_PER_BATCH) -> Iterator[tuple[int, str]]:
    """(line number, text) of every non-blank line of a JSONL file, read through the HF `text`
    builder, streamed.

    Streamed (`streaming=True`: the builder's own line reading, a batch at a time) rather than
    prepared: a prepared load writes an Arrow copy of the whole file into the user's HF cache
    (`~/.cache/huggingface/datasets/text/`) for every new file or modification time, never
    removed, and costs more CPU to write and read back than the lines themselves. The lines are
    the same either way (tested).

    Read as `utf-8-sig`: a file that starts with a UTF-8 byte order mark (as some Windows
    editors save it) reads as the same rows as one without."""
    import datasets

    check_jsonl_file(path)

    datasets.disable_progress_bars()
    try:
        lines = datasets.load_dataset(
            "text", data_files=str(path), split="train", streaming=True, encoding="utf-8-sig"
        )
    except OSError as exc:
        raise unwritable_hf_cache(exc) or exc from None
    # a batch of lines at a time: never every line of the file as Python strings at once
    batches = lines.iter(batch_size=rows_per_batch)
    for number, line in enumerate((text for batch in batches for text in batch["text"]), 1):
        if line.strip():
            yield number, line


def decode_line(name: str, number: int, line: str) -> tuple[str, object]:
    """(where, decoded row) of line `number` of the JSONL file `name`; DataError if it is not
    JSON."""
    where = f"{name} line {number}"
    try:
        return where, json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None


def jsonl_rows(path: Path, rows_per_batch: int = ROWS_PER_BATCH) -> Iterator[tuple[str, object]]:
    """Decode a JSONL file through the HF `text` builder, one (where, row) per non-blank line
    (`jsonl_lines`)."""
    for number, line in jsonl_lines(path, rows_per_batch):
        yield decode_line(path.name, number, line)


def unreachable(url: str, timeout_s: float = SOURCE_TIMEOUT_S) -> str | None:
    """Why `url` cannot be reached within `timeout_s` (connect, or a first answer), or None.

    Every HTTP answer, an error status included, counts as reachable.
    """
    try:
        with urllib.request.urlopen(url, timeout=timeout_s):
            return None
    except urllib.error.HTTPError:
        return None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return "no answer" if isinstance(reason, TimeoutError) else str(reason)


def hf_table(repo: str, split: str, has_official_file: bool) -> datasets.Dataset:
    """A Hugging Face dataset's split (memory-mapped from `datasets`' cache); a failure names the
    alternatives (`official_file`: the set has an official simple-evals file,
    `dataset.source=openai`; else the bundled sample)."""
    import datasets

    instead = (
        "dataset.source=openai (the official file)"
        if has_official_file
        else "dataset.source=bundled (the synthetic sample, offline)"
    )

    datasets.disable_progress_bars()
    # HF_DATASETS_OFFLINE / HF_HUB_OFFLINE: the cache; a local folder in the repo's layout
    if not datasets.config.HF_HUB_OFFLINE and not Path(repo).expanduser().exists():
        from huggingface_hub import constants

        hub = constants.ENDPOINT.rstrip("/")
        problem = unreachable(f"{hub}/api/datasets/{repo}")
        if problem is not None:
            raise ConfigError(
                f"dataset.source=hf: the Hugging Face Hub ({hub}) is unreachable for {repo!r} "
                f"({problem}); use {instead}, dataset.path=FILE (a local copy), or "
                "HF_DATASETS_OFFLINE=1 (the copy `datasets` cached on an earlier run)"
            )
    try:
        table = datasets.load_dataset(repo, split=split)
    except Exception as exc:  # network, auth, unknown repo: say what was tried
        unwritable = unwritable_hf_cache(exc) if isinstance(exc, OSError) else None
        if unwritable is not None:
            raise unwritable from None
        raise ConfigError(
            f"could not load Hugging Face dataset {repo!r} split {split!r}: {exc}. "
            f"Use {instead} or dataset.path=FILE for a local copy."
        ) from exc
    return table


def official_file(
    config: DatasetConfig, name: str | None = None, sha256: str | None = None
) -> Path:
    """Download (once) an official simple-evals file and verify its sha256.

    `name`/`sha256` default to `dataset.openai_file`/`dataset.sha256`; the file is kept in
    `dataset.cache_dir`.
    """
    if name is None:
        if not config.openai_file:
            raise ConfigError(
                f"dataset.source=openai: difficulty={config.difficulty} has no official "
                "simple-evals file (dataset.openai_file is null); its official copy is "
                f"dataset.source=hf ({config.hf_repo}), or use dataset.path=FILE"
            )
        name, sha256 = config.openai_file, config.sha256
    cache = Path(config.cache_dir).expanduser()
    target = cache / name
    if not target.exists():
        cache.mkdir(parents=True, exist_ok=True)
        url = OPENAI_BASE_URL + name
        log.info("downloading %s", url)
        partial = target.with_suffix(".partial")
        try:  # the timeout bounds the connect and every read: a silent host fails fast
            with (
                urllib.request.urlopen(url, timeout=SOURCE_TIMEOUT_S) as response,
                open(partial, "wb") as out,
            ):
                shutil.copyfileobj(response, out, 1 << 20)
        except OSError as exc:
            reason = getattr(exc, "reason", exc)
            raise ConfigError(
                f"dataset.source=openai: could not download {url} ({reason or 'no answer'}); "
                f"use dataset.source=hf, dataset.path=FILE (a local copy), or put the file "
                f"in dataset.cache_dir={config.cache_dir}"
            ) from exc
        partial.replace(target)
    if sha256:
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
        if digest != sha256:
            raise DataError(
                f"{target}: sha256 {digest} does not match the expected {sha256}; "
                "delete the file to download it again"
            )
    return target


def bundled_sample_path(name: str = SAMPLE_FILE) -> Path:
    return Path(str(resources.files("healthbench_exp") / "data" / name))


def dataset_origin(config: DatasetConfig) -> tuple[Path | datasets.Dataset, str | None]:
    """Where the configured dataset's rows are: a JSONL file, or a Hugging Face dataset's table;
    and for an official set (`source` hf or openai) how to name it (None: a local or the
    bundled file)."""
    if config.path:
        problem = data_file_problem("dataset.path", config.path)
        if problem is not None:
            raise ConfigError(problem)
        return Path(config.path).expanduser(), None
    if config.source is DataSource.bundled:
        return bundled_sample_path(config.bundled_file), None
    if config.source is DataSource.openai:
        return official_file(config), f"dataset.source=openai ({config.openai_file})"
    table = hf_table(config.hf_repo, config.hf_split, has_official_file=bool(config.openai_file))
    return table, f"dataset.source=hf ({config.hf_repo} split {config.hf_split})"


def table_rows(table: datasets.Dataset, name: str) -> Iterator[tuple[str, object]]:
    """(where, row) of every row of a Hugging Face dataset's table, `name` its repo."""
    for index, row in enumerate(table):
        yield f"{name} row {index}", row


def check_size(config: DatasetConfig, rows: int, where: str | None) -> None:
    """One WARNING when a full official set (`where` names its source) has another size than
    `dataset.official_rows`."""
    if where is not None and config.official_rows is not None and rows != config.official_rows:
        log.warning(
            "difficulty=%s: loaded %d examples, the official set has %d (from %s)",
            config.difficulty,
            rows,
            config.official_rows,
            where,
        )


def load_examples(config: DatasetConfig) -> list[Example]:
    """All validated examples of the configured dataset, in file order (a run holds them as
    references instead: `data.example_rows.load_rows`).

    A full official set (`source` hf or openai) of another size than `dataset.official_rows`
    is loaded with one WARNING naming the set, both counts and the source.
    """
    origin, where = dataset_origin(config)
    if isinstance(origin, Path):
        examples = parse_examples(jsonl_rows(origin))
    else:
        examples = parse_examples(table_rows(origin, config.hf_repo))
    check_size(config, len(examples), where)
    return examples


def sample_examples(examples: Sequence[T], num_examples: int | None, seed: int) -> list[T]:
    """The reference's subset: `random.Random(seed).sample(...)` when fewer than all are asked.

    With seed 0 this picks exactly the examples simple-evals picks for `--examples`. The picks
    depend only on the number of examples, so `sample_examples(range(n), ...)` gives the
    positions of the examples it picks from n.
    """
    if num_examples is None or num_examples >= len(examples):
        return list(examples)
    return random.Random(seed).sample(examples, num_examples)
