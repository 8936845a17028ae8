"""The paper's agreement figure beside simple-evals' pooled one, each with an interval (SPEC 7.2).

simple-evals' `pairwise_model_f1_balanced` pools every (judge, physician) pair of every row; the
paper's figures (GPT-4.1 0.709, physicians 0.647) average over the consensus criteria instead:

- `criterion_mean:pairwise_model_f1_balanced`: for each category with at least one pair (and a
  defined balanced F1), the pairwise balanced F1 over that category's rows; then the unweighted
  mean over categories.
- `criterion_mean:pairwise_physician_f1_balanced`: per category, the mean over physicians of
  each one's leave-one-out balanced F1 there (physicians with at least one pair there and a
  defined value); then the unweighted mean over categories.
- The pooled figures: `pairwise_model_f1_balanced` and, for physicians,
  `physicians_mean:pairwise_physician_f1_balanced` (the unweighted mean over physicians of each
  one's pooled leave-one-out balanced F1).

Each comes with a 95% interval (`:ci_low`, `:ci_high`): `samples` seeded bootstrap resamples of
the rows within each category, the 2.5th and 97.5th percentiles. Everything is computed from
pair counts (tt, tf, ft, ff: rater under test, other rater) summed by group, so that a resample
is a reweighting of rows (vectorized).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from healthbench_exp.core.intervals import percentile_interval

MODEL_POOLED = "pairwise_model_f1_balanced"
MODEL_CRITERION_MEAN = "criterion_mean:pairwise_model_f1_balanced"
PHYSICIAN_POOLED = "physicians_mean:pairwise_physician_f1_balanced"
PHYSICIAN_CRITERION_MEAN = "criterion_mean:pairwise_physician_f1_balanced"
FIGURES = (MODEL_POOLED, MODEL_CRITERION_MEAN, PHYSICIAN_POOLED, PHYSICIAN_CRITERION_MEAN)


def balanced_f1(counts: np.ndarray) -> np.ndarray:
    """Balanced (macro) F1 from pair counts `[..., (tt, tf, ft, ff)]`, as `agreement`
    computes it; NaN where undefined (a precision or recall without pairs)."""
    tt, tf, ft, ff = (counts[..., i].astype(float) for i in range(4))

    def f1(agree: np.ndarray, own_total: np.ndarray, other_total: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(own_total > 0, agree / own_total, np.nan)
            r = np.where(other_total > 0, agree / other_total, np.nan)
            value = np.where((p == 0) & (r == 0), 0.0, 2 * p * r / (p + r))
        result: np.ndarray = np.where(np.isnan(p) | np.isnan(r), np.nan, value)
        return result

    balanced: np.ndarray = (f1(tt, tt + tf, tt + ft) + f1(ff, ff + ft, ff + tf)) / 2
    return balanced


def _pair_counts(own: bool, others: Sequence[bool]) -> list[int]:
    met = sum(others)
    unmet = len(others) - met
    return [met, unmet, 0, 0] if own else [0, 0, met, unmet]


class _Entries:
    """Rows' pair counts, each under a group (its category, or category and physician)."""

    def __init__(self) -> None:
        self._rows: list[int] = []
        self._groups: list[int] = []
        self._counts: list[list[int]] = []

    def add(self, row: int, group: int, counts: list[int]) -> None:
        if sum(counts):
            self._rows.append(row)
            self._groups.append(group)
            self._counts.append(counts)

    def freeze(self) -> None:
        """As arrays, once every row is in."""
        self.rows = np.asarray(self._rows, dtype=int)
        self.groups = np.asarray(self._groups, dtype=int)
        self.counts = np.asarray(self._counts, dtype=float).reshape(-1, 4)

    def sums(self, weights: np.ndarray, n_groups: int) -> np.ndarray:
        """Pair counts per group, each row weighted (`weights[row]`): shape (n_groups, 4)."""
        w = weights[self.rows]
        return np.stack(
            [np.bincount(self.groups, w * self.counts[:, k], minlength=n_groups) for k in range(4)],
            axis=1,
        )


def _resample_weights(
    rng: np.random.Generator, order: np.ndarray, start: np.ndarray, size: np.ndarray
) -> np.ndarray:
    """How often each row is drawn when every category's rows are resampled with replacement.
    `order` lists the rows by category; `start` and `size`: each position's category's span."""
    draws = start + np.floor(rng.random(len(order)) * size).astype(int)
    return np.bincount(order[draws], minlength=len(order)).astype(float)


def _nanmean(values: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """Mean over defined values (NaN where none)."""
    defined = ~np.isnan(values)
    total = np.where(defined, values, 0.0).sum(axis=axis)
    n = defined.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def paper_figures(
    judge_labels: Sequence[bool | None],
    physician_labels: Sequence[Sequence[bool]],
    physician_ids: Sequence[Sequence[str]],
    categories: Sequence[str],
    samples: int = 1000,
    seed: int = 0,
) -> dict[str, float | None]:
    """The four figures (see the module docstring) and their intervals, by name (None where
    undefined). Row i: the judge's verdict (None: ungraded, left out of the judge's figures),
    the physicians' labels and ids, its category."""
    cats = sorted(set(categories))
    cat_index = {c: i for i, c in enumerate(cats)}
    doctors = sorted({p for ids in physician_ids for p in ids})
    doc_index = {p: i for i, p in enumerate(doctors)}
    n_cats, n_docs = len(cats), len(doctors)
    model, physicians = _Entries(), _Entries()
    for row, (own, labels, ids, category) in enumerate(
        zip(judge_labels, physician_labels, physician_ids, categories, strict=True)
    ):
        c = cat_index[category]
        if own is not None:
            model.add(row, c, _pair_counts(bool(own), labels))
        for i, physician in enumerate(ids):
            others = [*labels[:i], *labels[i + 1 :]]
            physicians.add(row, c * n_docs + doc_index[physician], _pair_counts(labels[i], others))

    def figures(weights: np.ndarray) -> np.ndarray:
        by_cat = model.sums(weights, n_cats)
        by_cat_doc = physicians.sums(weights, n_cats * n_docs).reshape(n_cats, n_docs, 4)
        per_cat_doc = balanced_f1(by_cat_doc)  # NaN without pairs: left out of the means
        return np.array(
            [
                balanced_f1(by_cat.sum(axis=0)),
                _nanmean(balanced_f1(by_cat)),
                _nanmean(balanced_f1(by_cat_doc.sum(axis=0))),
                _nanmean(np.asarray(_nanmean(per_cat_doc, axis=1))),
            ],
            dtype=float,
        )

    model.freeze()
    physicians.freeze()
    n_rows = len(categories)
    point = figures(np.ones(n_rows))
    rng = np.random.default_rng(seed)
    codes = np.asarray([cat_index[c] for c in categories], dtype=int)
    order = np.argsort(codes, kind="stable")  # the rows, category by category
    per_cat = np.bincount(codes, minlength=n_cats)
    first = np.concatenate([[0], np.cumsum(per_cat)[:-1]])
    start, size = first[codes[order]], per_cat[codes[order]]
    draws = np.empty((samples, len(FIGURES)))
    for b in range(samples):
        draws[b] = figures(_resample_weights(rng, order, start, size))
    out: dict[str, float | None] = {}
    for k, name in enumerate(FIGURES):
        out[name] = None if np.isnan(point[k]) else float(point[k])
        column = draws[:, k][~np.isnan(draws[:, k])]
        interval = percentile_interval(column) if len(column) else None
        out[f"{name}:ci_low"] = None if interval is None else interval.low
        out[f"{name}:ci_high"] = None if interval is None else interval.high
    return out
