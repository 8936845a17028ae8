"""A finished (or planned) run's side of the comparison, read from its summary or config.

What the comparison needs of a run: its model and set, its headline scores, its grader and
effort, its candidate sampling, how many of the set's examples it ran, where its data came from
and its run-to-run noise where it has repeats. Data decides first: a run on data that is not an
official set (the bundled sample, a file whose sha256 is none of the official files', replies
not sampled from the model) compares with nothing, and `NotComparable` says why.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from healthbench_exp.core.published_record import PublishedComparison
from healthbench_exp.core.run_config import RunConfig
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.published.compare import LENGTH_ADJUSTED, OVERALL, DataKind, RunSide, compare
from healthbench_exp.published.table import SET_SIZES

# the official files (SPEC section 1) by sha256 -> their set
OFFICIAL_SHA256 = {
    "e99dd3c6372c10d6fcc5e385c5fae69d0dd40392dae56836ef9493ae324ecd2f": "all",
    "b0320430e5cd974e746585594c1dd10b5a3fc2aff9c72b26106c2c4a069d74e9": "hard",
    "fabe37553327238928b05357d8b309737b5d426d6dee432a3376da618d0969d6": "consensus",
}
OFFICIAL_HF = {"openai/healthbench-professional": "professional"}  # OpenAI's own HF dataset
BRIDGED = "bridged_score"
REASONING_TEMPERATURE = 1.0  # what a reasoning model samples at when sent none (OpenAI's only)


@dataclass(frozen=True)
class NotComparable:
    """Nothing published applies to the run, and why (one line)."""

    why: str


def _data(config: RunConfig, data_sha256: str | None) -> tuple[str, DataKind, str] | NotComparable:
    """The run's set, whether its data is the official file, and what it was."""
    dataset = config.dataset
    if dataset is None or dataset.difficulty is None:
        return NotComparable("the run does not record its data")
    if config.completions and config.completions.source not in (None, "model", "file"):
        return NotComparable(f"the replies are {config.completions.source}'s, not a model's")
    if dataset.path:
        found = OFFICIAL_SHA256.get(data_sha256 or "")
        if found is None:
            return NotComparable(f"dataset.path {dataset.path} is not an official set's file")
        return found, DataKind.OFFICIAL, ""
    if dataset.difficulty not in SET_SIZES:
        return NotComparable(f"{dataset.difficulty} is not an official set")
    if dataset.source == "openai":
        return dataset.difficulty, DataKind.OFFICIAL, ""
    if dataset.source == "hf" and OFFICIAL_HF.get(dataset.hf_repo or "") == dataset.difficulty:
        return dataset.difficulty, DataKind.OFFICIAL, ""
    if dataset.source == "hf":
        note = f"the HF mirror {dataset.hf_repo} (not sha256-checked)"
        if dataset.difficulty == "consensus":
            note += "; it lists 3670 of the 3671 examples"
        return dataset.difficulty, DataKind.MIRROR, note
    return NotComparable(f"dataset.source={dataset.source} is not an official set")


def planned_side(
    config: RunConfig,
    data_sha256: str | None = None,
    scores: dict[str, float | None] | None = None,
) -> RunSide | NotComparable:
    """The side of a run with `config` (its scores: `scores`; before it ran, both headline
    scores to be measured)."""
    data = _data(config, data_sha256)
    if isinstance(data, NotComparable):
        return data
    set_name, kind, note = data
    model, judge, sampling = config.model, config.judge, config.sampling
    if model is None or model.name is None:
        return NotComparable("the run does not record its model")
    size = SET_SIZES[set_name]
    n = sampling.num_examples if sampling else None
    return RunSide(
        model=model.name,
        set=set_name,
        scores={OVERALL: None, LENGTH_ADJUSTED: None} if scores is None else scores,
        grader=judge.name if judge else None,
        grader_effort=judge.reasoning_effort if judge else None,
        # a reasoning model is sent no temperature: OpenAI's take only their default, 1.0
        temperature=REASONING_TEMPERATURE
        if model.reasoning
        else (sampling.temperature if sampling else None),
        max_tokens=sampling.max_tokens if sampling else None,
        reasoning_effort=model.reasoning_effort,
        api=model.api or "chat",
        n_examples=n if n is not None and n < size else None,
        data=kind,
        data_note=note,
        rollouts=(sampling.rollouts_per_example or 1) if sampling else 1,
    )


def _penalty(recorded: Mapping[str, object] | None) -> float | None:
    """The per-500-characters penalty a summary's `length_penalty` records (None: none)."""
    value = (recorded or {}).get("per_500_chars")
    return float(value) if isinstance(value, int | float) else None


def run_side(summary: RunSummary) -> RunSide | NotComparable:
    """The side of a finished eval run (a meta-eval compares with nothing here)."""
    if summary.is_meta_eval:
        return NotComparable("a meta-eval grades the judge, not a model")
    data_file = summary.protocol.data_file if summary.protocol else None
    sha = (data_file or {}).get("sha256")
    metrics = summary.metrics
    scores: dict[str, float | None] = {
        k: v for k in (OVERALL, LENGTH_ADJUSTED) if (v := metrics.get(k)) is not None
    }
    side = planned_side(summary.settings, sha, scores)
    if isinstance(side, NotComparable):
        return side
    examples = summary.counts.examples if summary.counts and not summary.is_meta_eval else None
    size = SET_SIZES[side.set]
    bootstrap = metrics.get(f"{OVERALL}:bootstrap_std")
    repeats = summary.repeats
    bridged = summary.bridged
    changes: dict[str, object] = {
        "n_examples": examples if isinstance(examples, int) and examples < size else None,
        "bootstrap_std": bootstrap,
        "run_to_run_std": repeats.run_to_run_std if repeats else None,
        "length_penalty": _penalty(summary.length_penalty),
    }
    if bridged is not None and (value := bridged.metrics.get(BRIDGED)) is not None:
        ci = bridged.ci.get(BRIDGED)
        changes.update(
            scores={OVERALL: value},
            bridged=True,
            bridged_std=(ci[1] - ci[0]) / 3.919927969 if ci else None,
        )
    return replace(side, **changes)  # type: ignore[arg-type]


def file_sha256(path: str) -> str | None:
    """The sha256 of the file at `path` (None: it cannot be read)."""
    digest = hashlib.sha256()
    try:
        with Path(path).expanduser().open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def planned(config: Mapping[str, object]) -> list[PublishedComparison] | NotComparable:
    """What a run of `config` (the resolved config as plain data) will be compared with, and
    which of its settings differ from each source's: for the dry run, before paying."""
    settings = RunConfig.of(config)
    path = settings.dataset.path if settings.dataset else None
    side = planned_side(settings, file_sha256(path) if path else None)
    if isinstance(side, NotComparable):
        return side
    return compare(side) or NotComparable(f"nothing published for {side.model} on {side.set}")


def with_published(summary: RunSummary) -> RunSummary:
    """`summary` with `published` (the comparisons, best-matching first) and, when nothing
    published applies, `published_note` saying why; a meta-eval's summary as it is."""
    if summary.is_meta_eval:
        return summary
    side = run_side(summary)
    if isinstance(side, NotComparable):
        return replace(summary, published=[], published_note=side.why)
    comparisons = compare(side)
    note = None if comparisons else f"nothing published for {side.model} on {side.set}"
    return replace(summary, published=comparisons, published_note=note)
