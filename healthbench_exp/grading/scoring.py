"""HealthBench scoring, exactly the reference's semantics (SPEC section 3). Pure functions.

- `example_score`: points met (negatives included) over positive points; not clipped.
- `example_metrics`: the overall score, the same value under every example tag, and the score of
  each rubric tag over only its criteria (absent when those have no positive points).
- `aggregate_metrics`: per metric name, the mean over the rows where it is defined, clipped to
  [0, 1] after averaging, with `:n_samples` and a seeded `:bootstrap_std`.

Ungraded criteria (verdict None) are left out of numerator and denominator alike.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources

import numpy as np

from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.resampling import reference_draws


def example_score(points: Sequence[float], met: Sequence[bool | float | None]) -> float | None:
    """Sum of points of criteria met / sum of positive points, over graded criteria.

    None when the graded criteria have no positive points (then the score is undefined). A
    float verdict is a weight in [0, 1] (a jury's share of members that said met, SPEC 7.1):
    it counts `points * weight`; True counts the points, as before.
    """
    possible = 0.0
    achieved = 0.0
    for p, m in zip(points, met, strict=True):
        if m is None:
            continue
        if p > 0:
            possible += p
        if m:
            achieved += p * m
    if possible == 0:
        return None
    return achieved / possible


def example_metrics(
    example_tags: Sequence[str], criteria: Sequence[Criterion], met: Sequence[bool | float | None]
) -> dict[str, float] | None:
    """One row's metrics under the reference's names; None if the overall score is undefined."""
    overall = example_score([c.points for c in criteria], met)
    if overall is None:
        return None
    metrics = {"overall_score": overall}
    metrics.update({tag: overall for tag in example_tags})
    by_tag: dict[str, list[int]] = defaultdict(list)
    for index, criterion in enumerate(criteria):
        for tag in criterion.tags:
            by_tag[tag].append(index)
    for tag, indices in by_tag.items():
        score = example_score([criteria[i].points for i in indices], [met[i] for i in indices])
        if score is not None:
            metrics[tag] = score
    return metrics


def reward(score: float) -> float:
    """The RL-style reward of the verifiers environment: the example score clipped to [0, 1]."""
    return min(1.0, max(0.0, score))


def clipped_mean(values: Sequence[float] | np.ndarray) -> float:
    """Mean first, then clip to [0, 1]: the reference's aggregate (not a mean of clipped scores)."""
    return float(np.clip(np.mean(values), 0, 1))


BOOTSTRAP_CHUNK = 1_000_000


def bootstrap_std(values: Sequence[float], samples: int, seed: int, clip: bool = True) -> float:
    """Std (ddof 0) of the clipped means of `samples` resamples with replacement.

    Draws the same indices as `samples` calls of the reference's `np.random.choice(values,
    len(values))` would after `np.random.seed(seed)`. `clip=False`: the means are not clipped
    (simple-evals' generic aggregate, used by the meta-eval).
    """
    array = np.asarray(values, dtype=float)
    means = np.empty(samples)
    # the reference's draws (grading.resampling.reference_draws), in chunks of about
    # BOOTSTRAP_CHUNK indices
    for rows, indices in reference_draws(len(array), samples, seed, BOOTSTRAP_CHUNK):
        means[rows] = array[indices].mean(axis=1)
    return float(np.std(np.clip(means, 0, 1) if clip else means))


def tag_metric_names(metrics: Mapping[str, object], prefix: str) -> list[str]:
    """Sorted names of the per-tag means under `prefix` (e.g. "theme:"), without their stats."""
    return sorted(n for n in metrics if n.startswith(prefix) and n.count(":") == 1)


# example-level tag kinds a report shows by slice (2025 sets: theme; Professional: the others)
EXAMPLE_TAG_KINDS = ("theme:", "use_case:", "type:", "difficulty:", "specialty:")


def slice_names(metrics: Mapping[str, object], prefix: str) -> list[str]:
    """Sorted names `<prefix><value>` (a slice's mean), without their stats; the prefix may
    itself hold colons (`length_adjusted_score:theme:`)."""
    return sorted(n for n in metrics if n.startswith(prefix) and ":" not in n[len(prefix) :])


def aggregate_metrics(
    rows: Sequence[dict[str, float]], bootstrap_samples: int = 1000, seed: int = 0
) -> dict[str, float | int]:
    """Mean (clipped), `:n_samples` and `:bootstrap_std` of every metric name over the rows.

    Also `score` (with its stats), which the reference reports beside `overall_score`.
    """
    values: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        for name, value in row.items():
            values[name].append(value)
        values["score"].append(row["overall_score"])
    return series_statistics(values.items(), bootstrap_samples, seed)


def series_statistics(
    values: Iterable[tuple[str, Sequence[float]]], bootstrap_samples: int, seed: int
) -> dict[str, float | int]:
    """Per (metric name, its values in the rows' order: the bootstrap resamples by index), in
    the order given: its mean (clipped), `:n_samples` and `:bootstrap_std`. `values` may be
    made as it is read, one metric's values at a time."""
    result: dict[str, float | int] = {}
    for name, series in values:
        result[name] = clipped_mean(series)
        result[f"{name}:n_samples"] = len(series)
        result[f"{name}:bootstrap_std"] = bootstrap_std(series, bootstrap_samples, seed)
    return result


@cache
def consensus_criteria() -> dict[str, dict[str, str]]:
    """`cluster:` value -> {theme, behavior_category, criterion}, from the HealthBench paper."""
    text = (resources.files("healthbench_exp") / "reference" / "consensus_criteria.json").read_text(
        encoding="utf-8"
    )
    table: dict[str, dict[str, str]] = json.loads(text)
    return table


def consensus_breakdown(metrics: dict[str, float | int]) -> list[dict[str, object]]:
    """One labelled row per consensus criterion present in the aggregated metrics."""
    table = consensus_criteria()
    rows: list[dict[str, object]] = []
    for name in sorted(metrics):
        if not name.startswith("cluster:") or ":" in name[len("cluster:") :]:
            continue
        cluster = name[len("cluster:") :]
        label = table.get(cluster, {})
        rows.append(
            {
                "cluster": cluster,
                "theme": label.get("theme"),
                "behavior_category": label.get("behavior_category"),
                "criterion": label.get("criterion"),
                "score": metrics[name],
                "n_samples": metrics[f"{name}:n_samples"],
                "bootstrap_std": metrics[f"{name}:bootstrap_std"],
            }
        )
    return rows
