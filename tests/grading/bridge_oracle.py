"""An independent re-statement of the bridged score (docs/bridge.md) for the bridge tests: plain
loops over dicts, written from the documented semantics, never calling `grading.bridge`.

- `q_of`: Jeffreys' q per (stratum, positive, verdict), a cell with fewer than 30 pairs taking
  its sign's pooled q (every stratum of that sign, same verdict).
- `metrics_of`: each metric's mean over the rows where it is defined (rows weighted by how often
  a resample drew them), clipped to [0, 1]; rows without graded positive points are not scored.
- `bootstrap`: the same seed scheme as the module (per resample: the scored rows' indices with
  `integers`, then one uniform per bridge pair in canonical order, drawn within its stratum and
  sign), so the interval can be compared draw for draw.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.bridge.cells import Pair, RunRow

Key = tuple[str, bool, bool]  # (stratum, positive, N's verdict)


def stratum(c: Criterion) -> str:
    cluster = [t for t in c.tags if t.startswith("cluster:")]
    axis = [t for t in c.tags if t.startswith("axis:")]
    return (cluster or axis or ["none"])[0]


def make_pairs(
    stratum_: str, points: Sequence[float], new: bool, n: int, k: int, source: int = 0
) -> list[Pair]:
    """n pairs of one cell, the first k with O = met; points cycle through `points`."""
    return [
        Pair(source, f"{stratum_}/{i % 7}", stratum_, points[i % len(points)], new, i < k)
        for i in range(n)
    ]


def q_of(pairs: Sequence[Pair]) -> Callable[[str, bool, bool], float]:
    n: Counter[Key] = Counter()
    k: Counter[Key] = Counter()
    pooled_n: Counter[tuple[bool, bool]] = Counter()
    pooled_k: Counter[tuple[bool, bool]] = Counter()
    for p in pairs:
        key = (p.stratum, p.points > 0, p.new)
        n[key] += 1
        k[key] += p.old
        pooled_n[key[1:]] += 1
        pooled_k[key[1:]] += p.old

    def q(s: str, positive: bool, verdict: bool) -> float:
        if n[(s, positive, verdict)] >= 30:
            return (k[(s, positive, verdict)] + 0.5) / (n[(s, positive, verdict)] + 1)
        return (pooled_k[(positive, verdict)] + 0.5) / (pooled_n[(positive, verdict)] + 1)

    return q


def row_scores(row: RunRow, q: Callable[[str, bool, bool], float]) -> dict[str, float] | None:
    """Each metric's bridged score on the row (unclipped); None: the row is not scored."""
    graded = [(c, v) for c, v in zip(row.criteria, row.verdicts, strict=True) if v is not None]

    def score(chosen: list[tuple[Criterion, bool]]) -> float | None:
        den = sum(c.points for c, _ in chosen if c.points > 0)
        if den <= 0:
            return None
        return sum(c.points * q(stratum(c), c.points > 0, v) for c, v in chosen) / den

    overall = score(graded)
    if overall is None:
        return None
    out = {"bridged_score": overall}
    out.update({"bridged:" + t: overall for t in row.example_tags})
    for tag in {t for c, _ in graded for t in c.tags}:
        value = score([(c, v) for c, v in graded if tag in c.tags])
        if value is not None:
            out["bridged:" + tag] = value
    return out


def metrics_of(
    rows: Sequence[RunRow], q: Callable[[str, bool, bool], float], weight: Sequence[int] | None
) -> dict[str, float]:
    """Clipped weighted means per metric (NaN where no drawn row defines it)."""
    scored = [s for s in (row_scores(r, q) for r in rows) if s is not None]
    weights = [1] * len(scored) if weight is None else list(weight)
    total: dict[str, float] = defaultdict(float)
    count: dict[str, float] = defaultdict(float)
    for scores, w in zip(scored, weights, strict=True):
        for name, value in scores.items():
            total[name] += w * value
            count[name] += w
    return {
        name: min(1.0, max(0.0, total[name] / count[name])) if count[name] else float("nan")
        for name in total
    }


QFn = Callable[[str, bool, bool], float]


def bootstrap(
    rows: Sequence[RunRow],
    pairs: Sequence[Pair],
    samples: int,
    seed: int,
    weights_of: Callable[[Sequence[Pair], Sequence[RunRow], Sequence[int]], QFn] | None = None,
) -> tuple[dict[str, list[float]], list[tuple[dict[str, float], QFn]]]:
    """(each metric's 2.5th and 97.5th percentiles, each resample's (metrics, q)); q from the
    drawn pairs (`q_of`), or from the drawn pairs and the scored rows with their drawn counts
    (`weights_of`)."""
    scored = sum(row_scores(r, lambda *_: 0.5) is not None for r in rows)
    ordered = sorted(
        pairs,
        key=lambda p: (
            p.points < 0,
            p.stratum == "none",
            p.stratum,
            p.source,
            p.example,
            p.points,
            p.new,
            p.old,
        ),
    )
    members: dict[tuple[str, bool], list[int]] = defaultdict(list)
    for i, p in enumerate(ordered):
        members[(p.stratum, p.points > 0)].append(i)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(samples):
        drawn_rows = rng.integers(0, max(1, scored), scored)
        weight = [int((drawn_rows == r).sum()) for r in range(scored)]
        u = rng.random(len(ordered))
        drawn = []
        for i, p in enumerate(ordered):
            group = members[(p.stratum, p.points > 0)]
            drawn.append(ordered[group[0] + int(u[i] * len(group))])
        q = q_of(drawn) if weights_of is None else weights_of(drawn, rows, weight)
        draws.append((metrics_of(rows, q, weight), q))
    names = {name for d, _ in draws for name in d}
    ci = {}
    for name in names:
        defined = [d[name] for d, _ in draws if not np.isnan(d.get(name, np.nan))]
        ci[name] = [float(v) for v in np.percentile(defined, [2.5, 97.5])]
    return ci, draws
