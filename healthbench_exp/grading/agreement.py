"""Agreement between raters: the meta-eval's pairwise metrics (SPEC 4) and Cohen's kappa.

The meta-eval compares a rater under test (the judge, or one physician) with every *other* label
on the same row, one pair at a time, pooled over rows:

- precision for class c (pos = "criteria met", neg = "not met"): among pairs where the rater under
  test said c, the share where the other rater agrees;
- recall for class c: among pairs where the other rater said c, the share where they agree;
- F1 per class from those two (0.0 when both are 0); balanced (macro) F1 = mean of the pos and
  neg F1 = the headline.

Names follow simple-evals (`pairwise_model_f1_balanced`, `cluster:x: pairwise_physician_...`).
A metric with no pairs behind it is *undefined*: its value is None (the reference leaves the key
out), never 0. The `n` beside each value is the reference's: pairs counted for precision and
recall, TP + FP + FN for F1, and n_pos + n_neg for a balanced metric.

The reference finds F1 and balanced metrics by string replacement on metric names ("precision"
-> "recall", "pos" -> "neg"), so for a category whose own name contains such a word it reports
none; here every category gets them. No HealthBench category name contains one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CLASSES = ("pos", "neg")
KINDS = ("precision", "recall", "f1")


@dataclass(frozen=True)
class Rate:
    n: int
    value: float | None  # None: undefined (no pairs behind it)


@dataclass
class PairCounts:
    """Pairs (rater under test, other rater) by their two labels."""

    tt: int = 0  # both said met
    tf: int = 0  # rater under test met, other not met
    ft: int = 0  # rater under test not met, other met
    ff: int = 0  # both said not met

    def add(self, own: bool, other: bool) -> None:
        if own and other:
            self.tt += 1
        elif own:
            self.tf += 1
        elif other:
            self.ft += 1
        else:
            self.ff += 1


def metric_name(rater: str, kind: str, cls: str, category: str | None = None) -> str:
    """`pairwise_{rater}_{kind}_{cls}`, prefixed `{category}: ` for a per-category metric."""
    name = f"pairwise_{rater}_{kind}_{cls}"
    return name if category is None else f"{category}: {name}"


def _rate(agree: int, n: int) -> Rate:
    return Rate(n, agree / n if n else None)


def _f1(precision: Rate, recall: Rate, true_positives: int) -> Rate:
    if precision.value is None or recall.value is None:
        return Rate(precision.n + recall.n, None)
    n = precision.n + recall.n - true_positives  # TP + FP + FN
    if precision.value == 0 and recall.value == 0:
        return Rate(n, 0.0)
    p, r = precision.value, recall.value
    return Rate(n, 2 * (p * r) / (p + r))


def _balanced(pos: Rate, neg: Rate) -> Rate:
    if pos.value is None or neg.value is None:
        return Rate(pos.n + neg.n, None)
    return Rate(pos.n + neg.n, (pos.value + neg.value) / 2)


def metrics_from_counts(
    counts: PairCounts, rater: str, category: str | None = None
) -> dict[str, Rate]:
    """Precision, recall and F1 for pos, neg and balanced, from one pooled table of pairs."""
    c = counts
    rates = {
        ("precision", "pos"): _rate(c.tt, c.tt + c.tf),
        ("precision", "neg"): _rate(c.ff, c.ff + c.ft),
        ("recall", "pos"): _rate(c.tt, c.tt + c.ft),
        ("recall", "neg"): _rate(c.ff, c.ff + c.tf),
    }
    for cls, true_positives in (("pos", c.tt), ("neg", c.ff)):
        rates["f1", cls] = _f1(rates["precision", cls], rates["recall", cls], true_positives)
    for kind in KINDS:
        rates[kind, "balanced"] = _balanced(rates[kind, "pos"], rates[kind, "neg"])
    return {metric_name(rater, kind, cls, category): rate for (kind, cls), rate in rates.items()}


def pairwise_metrics(
    own_labels: Sequence[bool],
    other_labels: Sequence[Sequence[bool]],
    categories: Sequence[str],
    rater: str,
) -> dict[str, Rate]:
    """Every pairwise metric of one rater, overall and per category.

    Row i pairs `own_labels[i]` with each label in `other_labels[i]`; `rater` is `model` or
    `physician` (it only names the metrics).
    """
    if not len(own_labels) == len(other_labels) == len(categories):
        raise ValueError("own_labels, other_labels and categories differ in length")
    overall = PairCounts()
    by_category: dict[str, PairCounts] = defaultdict(PairCounts)
    for own, others, category in zip(own_labels, other_labels, categories, strict=True):
        for other in others:
            overall.add(own, other)
            by_category[category].add(own, other)
    metrics = metrics_from_counts(overall, rater)
    for category in sorted(by_category):
        metrics.update(metrics_from_counts(by_category[category], rater, category))
    return metrics


def leave_one_out(
    labels: Sequence[Sequence[bool]],
    rater_ids: Sequence[Sequence[str]],
    categories: Sequence[str],
) -> dict[str, dict[str, Rate]]:
    """Per physician: their pairwise metrics against the other physicians on the same rows."""
    own: dict[str, list[bool]] = defaultdict(list)
    others: dict[str, list[list[bool]]] = defaultdict(list)
    cats: dict[str, list[str]] = defaultdict(list)
    for row_labels, ids, category in zip(labels, rater_ids, categories, strict=True):
        for i, physician in enumerate(ids):
            own[physician].append(row_labels[i])
            others[physician].append([*row_labels[:i], *row_labels[i + 1 :]])
            cats[physician].append(category)
    return {
        physician: pairwise_metrics(own[physician], others[physician], cats[physician], "physician")
        for physician in sorted(own)
    }


@dataclass(frozen=True)
class Average:
    mean: float | None  # unweighted mean over the raters for whom the metric is defined
    weighted_mean: float | None  # the same, weighted by each rater's n
    raters: int  # raters for whom it is defined


def average_over_raters(per_rater: dict[str, dict[str, Rate]]) -> dict[str, Average]:
    """For every metric name any rater has: the mean and n-weighted mean of defined values."""
    values: dict[str, list[Rate]] = defaultdict(list)
    for metrics in per_rater.values():
        for name, rate in metrics.items():
            if rate.value is not None:
                values[name].append(rate)
            else:
                values.setdefault(name, [])
    result = {}
    for name, rates in values.items():
        if not rates:
            result[name] = Average(None, None, 0)
            continue
        defined = [r.value for r in rates if r.value is not None]  # all of them: see above
        weight = sum(r.n for r in rates)
        weighted = (
            sum(v * r.n for v, r in zip(defined, rates, strict=True)) / weight if weight else None
        )
        mean = sum(defined) / len(rates)
        result[name] = Average(mean, weighted, len(rates))
    return result


@dataclass(frozen=True)
class Agreement:
    """Two raters' verdicts on the same items."""

    n: int
    agreement: float | None  # share of items with the same verdict
    kappa: float | None  # Cohen's kappa; None when chance agreement is 1 (both constant, equal)
    a_met_rate: float | None
    b_met_rate: float | None


def cohen_agreement(pairs: Iterable[tuple[bool, bool]]) -> Agreement:
    """Raw agreement and Cohen's kappa = (p_o - p_e) / (1 - p_e) over (a, b) verdict pairs."""
    counts = PairCounts()
    for a, b in pairs:
        counts.add(a, b)
    n = counts.tt + counts.tf + counts.ft + counts.ff
    if n == 0:
        return Agreement(0, None, None, None, None)
    observed = (counts.tt + counts.ff) / n
    a_met = (counts.tt + counts.tf) / n
    b_met = (counts.tt + counts.ft) / n
    chance = a_met * b_met + (1 - a_met) * (1 - b_met)
    kappa = None if chance == 1 else (observed - chance) / (1 - chance)
    return Agreement(n, observed, kappa, a_met, b_met)
