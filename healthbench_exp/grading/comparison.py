"""Statistics beyond the reference's aggregates: repeats, length adjustment, paired comparisons.

All pure functions over plain numbers. Scores are example scores (unclipped); every aggregate
below is, like the reference's, a mean over examples clipped to [0, 1] after averaging.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import comb

import numpy as np

from healthbench_exp.core.intervals import BootstrapResult
from healthbench_exp.grading.resampling import reference_draws
from healthbench_exp.grading.scoring import BOOTSTRAP_CHUNK, bootstrap_std, clipped_mean

LENGTH_ADJUSTED = "length_adjusted_score"


def expected_min_of_k(scores: Sequence[float], k: int) -> float:
    """The mean of min(subset) over all C(n, k) subsets of `scores`, in closed form.

    With scores sorted ascending, the i-th smallest (0-based) is the minimum of C(n-1-i, k-1)
    of the subsets.
    """
    ordered = sorted(scores)
    n = len(ordered)
    if not 1 <= k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    return sum(ordered[i] * comb(n - 1 - i, k - 1) for i in range(n - k + 1)) / comb(n, k)


def worst_at_k(scores_by_example: Sequence[Sequence[float]]) -> dict[int, float]:
    """For k = 1..n (n = the fewest repeats of any example): the mean over examples of the
    expected minimum score of k repeats, clipped to [0, 1]. k = 1 is the plain mean."""
    if not scores_by_example:
        return {}
    n = min(len(s) for s in scores_by_example)
    return {
        k: clipped_mean([expected_min_of_k(s, k) for s in scores_by_example])
        for k in range(1, n + 1)
    }


def run_to_run_std(scores_by_rollout: Mapping[int, Sequence[float]]) -> float | None:
    """Sample std (ddof 1) across rollouts of each rollout's overall (clipped mean) score."""
    overall = [clipped_mean(s) for s in scores_by_rollout.values() if s]
    if len(overall) < 2:
        return None
    return float(np.std(overall, ddof=1))


def length_adjusted(score: float, length: int, penalty_per_500_chars: float, center: int) -> float:
    """`score - penalty_per_500_chars * (length - center) / 500`, per example (SPEC section 3)."""
    return score - penalty_per_500_chars * (length - center) / 500


@dataclass(frozen=True)
class ScoredReply:
    """One scored row, as the length adjustment needs it: its example score (unclipped), the
    length of the graded reply in characters, and its example-level tags."""

    score: float
    reply_chars: int
    example_tags: Sequence[str]


def length_adjusted_metrics(
    rows: Sequence[ScoredReply],
    penalty_per_500_chars: float,
    center: int,
    bootstrap_samples: int,
    seed: int,
) -> dict[str, float | int]:
    """`length_adjusted_score` over every row and `length_adjusted_score:<tag>` over the rows of
    each example-level tag (`theme:`, `use_case:`, ...), each with `:n_samples` and
    `:bootstrap_std`, as the reference aggregates: per row `length_adjusted` (not clipped),
    then the mean clipped to [0, 1]."""
    values: dict[str, list[float]] = {}
    for row in rows:
        adjusted = length_adjusted(row.score, row.reply_chars, penalty_per_500_chars, center)
        for name in (LENGTH_ADJUSTED, *(f"{LENGTH_ADJUSTED}:{t}" for t in row.example_tags)):
            values.setdefault(name, []).append(adjusted)
    result: dict[str, float | int] = {}
    for name in sorted(values, key=lambda n: (n != LENGTH_ADJUSTED, n)):
        series = values[name]
        result[name] = clipped_mean(series)
        result[f"{name}:n_samples"] = len(series)
        result[f"{name}:bootstrap_std"] = bootstrap_std(series, bootstrap_samples, seed)
    return result


@dataclass(frozen=True)
class PairedDifference:
    """A paired comparison of two runs: `bootstrap.estimate` is the clipped mean of A minus
    the clipped mean of B on the `n` prompt_ids both scored, `bootstrap.interval` the 2.5th and
    97.5th percentiles of the resamples' differences, `bootstrap.std` their std."""

    n: int  # prompt_ids both sides scored
    bootstrap: BootstrapResult
    sign_flip_fraction: float  # share of resamples whose difference does not share its sign

    def record(self) -> dict[str, float | int]:
        """As a comparison writes it: `n`, `mean_difference`, `ci_low`, `ci_high`,
        `sign_flip_fraction`."""
        return {
            "n": self.n,
            "mean_difference": self.bootstrap.estimate,
            "ci_low": self.bootstrap.interval.low,
            "ci_high": self.bootstrap.interval.high,
            "sign_flip_fraction": self.sign_flip_fraction,
        }


def paired_bootstrap(
    a: Mapping[str, float], b: Mapping[str, float], samples: int = 1000, seed: int = 0
) -> PairedDifference | None:
    """Paired bootstrap of the score difference A - B over the prompt_ids both scored.

    Each resample draws prompt_ids with replacement and uses the same draw for both sides, so the
    per-prompt pairing (and its correlation) is kept. None when no prompt_id is shared.
    """
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    x = np.array([a[p] for p in shared], dtype=float)
    y = np.array([b[p] for p in shared], dtype=float)
    point = clipped_mean(x) - clipped_mean(y)
    diffs = np.empty(samples)
    for rows, index in reference_draws(len(shared), samples, seed, BOOTSTRAP_CHUNK):
        diffs[rows] = np.clip(x[index].mean(axis=1), 0, 1) - np.clip(y[index].mean(axis=1), 0, 1)
    flips = float(np.mean(diffs * point <= 0)) if point != 0 else 1.0
    return PairedDifference(len(shared), BootstrapResult.of_draws(point, diffs), flips)
