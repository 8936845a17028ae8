"""A score beside the published ones: comparable or not, and why; consistent or differs.

Comparable needs the same data (an official set, by sha256 or a name that loads it), the same
grader and reasoning effort, and the same length policy; a source that does not state one of
these is not comparable. Every other setting that differs from what the source states
(candidate temperature, max tokens, reasoning effort, API, a subset of the set, a mirror of
the data) is named beside the verdict.

The verdict is a two-sided z-test at 95% on run-to-run noise. The run and the source graded
the same fixed examples, so the spread of scores between examples (the bootstrap std, about
0.005 on all) is not the noise between them; what differs between two runs is the sampling of
replies and the grader's verdicts, which the paper measured over 16 full runs (Table 7: std
0.0016 to 0.0029 on all). The variance of the difference is the sum of:

- the source's: its stated std over k runs divided by k (a k-run mean); a source that states no
  run-to-run std takes the default std of one run of its set divided by its runs averaged;
- the run's: one run's std (the source's std where it states one; else the run's own std across
  its `repeats`; else the default), divided by the run's rollouts, scaled by N/n on n of the N
  examples;
- a seeded subset's finite-population error: the variance of the subset's mean as an estimate
  of the whole set's, s^2/n (N-n)/(N-1), s the std of example scores (the run's, from its
  bootstrap std; else `EXAMPLE_STD`);
- the published value's rounding: a uniform error of half its last digit (`APPROXIMATE` for a
  value read off a figure).

The default std of one run of a set of N examples is `RUN_STD_ALL` * sqrt(5000 / N): the
paper's 0.002 on all, scaled as a mean of N examples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum

from healthbench_exp.core.published_record import PublishedComparison, Verdict
from healthbench_exp.grading.length import PUBLISHED_PENALTIES
from healthbench_exp.published.models import model_id
from healthbench_exp.published.table import (
    SET_SIZES,
    PublishedRow,
    UncertaintyKind,
    published_rows,
)

Z95 = 1.959963984540054
RUN_STD_ALL = 0.002  # paper Sec 8.2 / Table 7: about 0.002 between runs on all (5000 examples)
EXAMPLE_STD = 0.35  # std of example scores on all: bootstrap std 0.005 * sqrt(5000) (m42 runs)
APPROXIMATE = 0.01  # half-width of a value read off a figure (`~` in the source)
REFERENCE_GRADER = "gpt-4.1-2025-04-14"
OVERALL = "overall_score"
LENGTH_ADJUSTED = "length_adjusted_score"


class DataKind(Enum):
    """What the run's examples were, against the official set."""

    OFFICIAL = "official"  # the official simple-evals file (sha256 checked)
    MIRROR = "mirror"  # a third-party copy of the set (not sha256 checked)
    NOT_OFFICIAL = "not official"  # other data: nothing published applies


@dataclass(frozen=True)
class RunSide:
    """What a run (or a number from elsewhere) was, as far as the comparison needs it."""

    model: str
    set: str  # all | hard | consensus | professional (or what the run ran: sample, a file)
    # metric -> the run's value (overall_score, length_adjusted_score); None: to be measured
    scores: dict[str, float | None]
    grader: str | None
    grader_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    api: str | None = None
    n_examples: int | None = None  # None: the whole set
    data: DataKind = DataKind.OFFICIAL
    data_note: str = ""  # what the data was, when not the official file
    run_to_run_std: float | None = None  # std of the score across the run's rollouts
    rollouts: int = 1
    bootstrap_std: float | None = None  # of the overall score, over the run's examples
    bridged: bool = False  # the scores are a bridged score on the reference grader's scale
    bridged_std: float | None = None  # the bridged score's standard error (its interval / 3.92)
    length_penalty: float | None = None  # per 500 characters, where length-adjusted
    extra: list[str] = field(default_factory=list)  # further differences to name


def default_run_std(n_examples: int) -> float:
    """The default std of one run's score on `n_examples` examples (see the module docstring)."""
    return RUN_STD_ALL * math.sqrt(SET_SIZES["all"] / n_examples)


def rounding_std(row: PublishedRow) -> float:
    """The std of the published value's rounding: uniform over half its last stated digit."""
    if row.approximate:
        return APPROXIMATE / math.sqrt(3)
    text = repr(round(row.value, 10))
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0**-decimals / math.sqrt(3)


def rows_for(model: str, set_name: str) -> list[PublishedRow]:
    """The published headline rows of `model`'s snapshot on `set_name` (none: nothing published)."""
    wanted = model_id(model)
    return [
        r
        for r in published_rows()
        if r.model_id == wanted and r.set == set_name and r.comparable_set
    ]


def _blocking(run: RunSide, row: PublishedRow) -> list[str]:
    """Why `run` cannot be compared with `row` (empty: comparable)."""
    why: list[str] = []
    grader = REFERENCE_GRADER if run.bridged else run.grader
    if row.grader_model is None:
        why.append(f"grader: not stated by the source ({row.grader or 'nothing said'})")
    elif grader is None or model_id(grader) != row.grader_model:
        why.append(f"grader: {row.grader_model} -> {grader}")
    elif row.grader_effort is not None and row.grader_effort != run.grader_effort:
        why.append(f"grader effort: {row.grader_effort} -> {run.grader_effort}")
    if row.length_adjusted is None:
        why.append("length adjustment: not stated by the source")
    elif row.metric not in run.scores:
        policy = "length-adjusted" if row.length_adjusted else "not length-adjusted"
        why.append(f"length adjustment: the source's score is {policy}; the run has no such score")
    elif row.length_adjusted and run.length_penalty is not None:
        published = PUBLISHED_PENALTIES.get(row.set)
        if published is not None and abs(run.length_penalty - published) > 1e-12:
            why.append(f"length penalty per 500 characters: {published} -> {run.length_penalty}")
    return why


def _differences(run: RunSide, row: PublishedRow) -> tuple[list[str], list[str]]:
    """The settings that differ from the source's, and those the source does not state."""
    differ: list[str] = []
    unstated: list[str] = []
    stated: list[tuple[str, object, object]] = [
        ("temperature", row.temperature, run.temperature),
        ("max_tokens", row.max_tokens, run.max_tokens),
        ("reasoning_effort", row.reasoning_effort, run.reasoning_effort),
        ("api", row.api, run.api),
    ]
    for name, theirs, ours in stated:
        if theirs is None:
            unstated.append(name)
        elif theirs != ours:
            differ.append(f"{name}: {theirs} -> {ours}")
    size = SET_SIZES[row.set]
    if run.n_examples is not None and run.n_examples < size:
        differ.append(f"examples: {size} -> a seeded subset of {run.n_examples}")
    if run.data is DataKind.MIRROR:
        differ.append(f"data: {run.data_note}")
    if run.bridged:
        differ.append(f"a bridged score: {run.grader} rescored on {REFERENCE_GRADER}'s scale")
    return differ + run.extra, unstated


def _noise(run: RunSide, row: PublishedRow) -> tuple[float, str]:
    """The std of score - value under run-to-run noise, and how it was formed."""
    size = SET_SIZES[row.set]
    n = min(run.n_examples or size, size)
    stated = row.uncertainty_value if row.uncertainty_kind is UncertaintyKind.RUNS_STD else None
    if stated is not None:
        source_var = stated**2 / (row.runs or 1)
        basis = f"the source's std {stated:g} over {row.runs} runs"
    else:
        source_var = default_run_std(size) ** 2 / (row.runs or 1)
        basis = f"a default run-to-run std {default_run_std(size):.4f}"
        if row.runs and row.runs > 1:
            basis += f" over the source's {row.runs} runs"
    if stated is not None:
        run_var = stated**2 * size / n / run.rollouts
        basis += "; the run's from the source's std"
    elif run.run_to_run_std is not None and run.rollouts > 1:
        run_var = run.run_to_run_std**2 / run.rollouts
        basis += f"; the run's from its {run.rollouts} repeats ({run.run_to_run_std:.4f})"
    else:
        run_var = default_run_std(n) ** 2 / run.rollouts
        basis += f"; the run's by default ({default_run_std(n):.4f})"
    subset_var = 0.0
    if n < size:
        example_std = EXAMPLE_STD
        if run.bootstrap_std is not None:
            example_std = run.bootstrap_std * math.sqrt(n)
        subset_var = example_std**2 / n * (size - n) / (size - 1)
        basis += f"; subset of {n}: finite-population std {math.sqrt(subset_var):.4f}"
    bridge_var = (run.bridged_std or 0.0) ** 2
    if run.bridged_std:
        basis += f"; the bridged score's std {run.bridged_std:.4f}"
    total = source_var + run_var + subset_var + bridge_var + rounding_std(row) ** 2
    return math.sqrt(total), basis


def describe_source(row: PublishedRow) -> str:
    """The source in one phrase: title, table or figure, date."""
    return f"{row.source.title}, {row.source.where}, {row.source.date}"


def compare_row(run: RunSide, row: PublishedRow) -> PublishedComparison:
    """`run` beside one published row."""
    blocking = _blocking(run, row)
    differ, unstated = _differences(run, row)
    base = PublishedComparison(
        source=describe_source(row),
        url=row.source.url,
        status=f"{row.source.status}; {row.source.checked}",
        model=row.model,
        set=row.set,
        metric=row.metric,
        value=row.value,
        uncertainty=row.uncertainty,
        score=None,
        difference=None,
        interval=None,
        verdict=Verdict.NOT_COMPARABLE.value,
        why=blocking + differ,
        not_stated=unstated,
    )
    if blocking:
        return base
    score = run.scores[row.metric]
    if score is None:  # a dry run: what the run will be compared with
        return replace(base, verdict=Verdict.PLANNED.value)
    std, basis = _noise(run, row)
    difference = score - row.value
    verdict = Verdict.CONSISTENT if abs(difference) <= Z95 * std else Verdict.DIFFERS
    return replace(
        base,
        score=score,
        difference=round(difference, 6),
        interval=round(Z95 * std, 6),
        verdict=verdict.value,
        noise=basis,
    )


def _rank(comparison: PublishedComparison) -> tuple[int, int, int, int]:
    """Best-matching first: comparable, fewest differences, fewest unstated, read before quoted."""
    return (
        comparison.verdict == Verdict.NOT_COMPARABLE.value,
        len(comparison.why),
        len(comparison.not_stated),
        comparison.status.startswith("quoted"),
    )


def compare(run: RunSide) -> list[PublishedComparison]:
    """`run` beside every published row of its model and set, best-matching first (empty:
    nothing published for them, or data that is not an official set)."""
    if run.data is DataKind.NOT_OFFICIAL or run.set not in SET_SIZES:
        return []
    return sorted((compare_row(run, r) for r in rows_for(run.model, run.set)), key=_rank)
