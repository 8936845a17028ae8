"""The scoring arithmetic at its edges, against values computed by hand or by loops written out
here: ungraded criteria in the middle of a rubric, negative scores that only the clipping
bounds, ties, the defaults every caller relies on, and the bootstrap loops one resample at a
time. Each test pins a behaviour a one-token change of the code would alter (mutation testing:
docs/architecture.md, "Mutation testing")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from healthbench_exp.core.intervals import normal_interval
from healthbench_exp.core.types import Criterion
from healthbench_exp.grading import scoring
from healthbench_exp.grading.agreement import (
    Average,
    Rate,
    _f1,
    average_over_raters,
    leave_one_out,
    pairwise_metrics,
)
from healthbench_exp.grading.calibration import (
    MIN_ROWS,
    calibrate,
    corrected_bootstrap,
    majority,
    not_corrected_reason,
    observed_error_rates,
    usable_pairs,
)
from healthbench_exp.grading.comparison import (
    PairedDifference,
    ScoredReply,
    expected_min_of_k,
    length_adjusted_metrics,
    paired_bootstrap,
    run_to_run_std,
)
from healthbench_exp.grading.jury import JuryRow, LengthSetting, jury_section, rows_metrics
from healthbench_exp.grading.scoring import (
    aggregate_metrics,
    bootstrap_std,
    consensus_breakdown,
    consensus_criteria,
    example_metrics,
    example_score,
)
from tests.by_hand import percentile_by_hand
from tests.sweep.test_aggregate import bootstrap_by_hand


def test_an_ungraded_criterion_is_skipped_and_the_rest_still_count() -> None:
    # 5 met, 3 ungraded (out of both sums), -2 met, 4 not met: (5 - 2) / (5 + 4)
    assert example_score([5, 3, -2, 4], [True, None, True, False]) == pytest.approx(3 / 9)
    # jury weights: 4 * 0.5 + 6 * 1 over 10
    assert example_score([4, 6], [0.5, 1.0]) == pytest.approx(0.8)
    assert example_score([-3, 2], [True, None]) is None  # no positive point graded
    with pytest.raises(ValueError):  # a verdict per criterion, never fewer
        example_score([5, 3], [True])
    metrics = example_metrics(
        ["theme:t"],
        [Criterion("a", 5, ("axis:x",)), Criterion("b", 3, ()), Criterion("c", 4, ("axis:x",))],
        [None, True, True],
    )
    assert metrics == {"overall_score": 1.0, "theme:t": 1.0, "axis:x": 1.0}


def resampled_std(values: list[float], samples: int, seed: int, clip: bool) -> float:
    """The bootstrap std written out: one RandomState draw of len(values) indices per resample,
    each resample's mean (clipped to [0, 1] if asked), their population std."""
    rng = np.random.RandomState(seed)
    means = []
    for _ in range(samples):
        drawn = [values[int(i)] for i in rng.randint(0, len(values), size=len(values))]
        mean = sum(drawn) / len(drawn)
        means.append(min(1.0, max(0.0, mean)) if clip else mean)
    average = sum(means) / samples
    return math.sqrt(sum((m - average) ** 2 for m in means) / samples)


@pytest.mark.parametrize("clip", [True, False])
def test_bootstrap_std_equals_a_loop_over_resamples(
    clip: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = [-0.6, 0.1, 0.9, 1.8, -0.2, 1.4, 0.0]  # means outside [0, 1] on both sides
    expected = resampled_std(values, 300, 3, clip)
    assert bootstrap_std(values, 300, 3, clip=clip) == pytest.approx(expected, abs=1e-12)
    monkeypatch.setattr(scoring, "BOOTSTRAP_CHUNK", 20)  # resamples drawn 2 at a time
    assert bootstrap_std(values, 300, 3, clip=clip) == pytest.approx(expected, abs=1e-12)
    assert bootstrap_std([0.5], 10, 0) == 0.0


def test_the_reports_interval_is_clipped_to_the_unit_interval() -> None:
    """mean +- 1.96 std, the one formula (`normal_interval`) every report's interval comes from."""
    assert normal_interval(0.5, 0.1).as_list() == pytest.approx([0.304, 0.696])
    assert normal_interval(0.05, 0.1).as_list() == pytest.approx([0.0, 0.246])
    assert normal_interval(0.95, 0.1).as_list() == pytest.approx([0.754, 1.0])
    assert not hasattr(scoring, "ci95")  # one name per formula


def test_aggregate_means_are_clipped_after_averaging_with_the_default_bootstrap() -> None:
    rows = [{"overall_score": -0.2, "theme:a": -0.2}, {"overall_score": 0.6}]
    result = aggregate_metrics(rows)
    assert result["overall_score"] == pytest.approx(0.2) and result["score"] == pytest.approx(0.2)
    assert result["theme:a"] == 0.0 and result["theme:a:n_samples"] == 1
    assert result["score:n_samples"] == 2
    std = resampled_std([-0.2, 0.6], 1000, 0, clip=True)  # 1000 resamples, seed 0
    assert result["overall_score:bootstrap_std"] == pytest.approx(std, abs=1e-12)
    assert result == aggregate_metrics(rows, 1000, 0)


def test_majority_and_usable_pairs() -> None:
    assert majority([True, False, True]) is True and majority([False, False, True]) is False
    assert majority([True, False]) is None and majority([]) is None
    pairs = usable_pairs([True, None, False, True], [[True], [True], [True, False], [False]])
    assert pairs == [(True, True), (True, False)]
    with pytest.raises(ValueError):  # a verdict without its labels is an error, not dropped
        usable_pairs([True, False], [[True]])


def test_not_corrected_reasons_join_every_reason() -> None:
    pairs = [(True, True)] * 12 + [(False, True)] * 8 + [(False, False)] * 10 * 2
    rates = observed_error_rates(pairs)
    assert (rates.n_pos, rates.n_neg) == (20, 20)
    assert rates.sensitivity == pytest.approx(0.6) and rates.specificity == pytest.approx(1.0)
    assert not_corrected_reason(rates) is None
    few = observed_error_rates([(True, True)] * 3)
    assert not_corrected_reason(few) == f"n_pos 3 < {MIN_ROWS}; n_neg 0 < {MIN_ROWS}"
    none = calibrate("c", [], [(True, True)])
    assert none.reason == f"no graded eval criterion; n_pos 1 < {MIN_ROWS}; n_neg 0 < {MIN_ROWS}"
    assert (none.n_pos, none.n_neg, none.n_eval, none.observed) == (1, 0, 0, None)


def interval_by_hand(
    eval_examples: list[tuple[int, int]],
    meta_pairs: list[tuple[bool, bool]],
    samples: int,
    seed: int,
) -> tuple[float | None, float | None]:
    """The calibrated rate's bootstrap written out: per resample, the eval examples and then the
    meta-eval pairs drawn with replacement (numpy's default_rng, in that order); resamples
    without a graded criterion, a positive, a negative, or with Se + Sp - 1 <= 0 are skipped;
    the corrected rate clip((p + Sp - 1) / (Se + Sp - 1)); percentiles 2.5 and 97.5 by linear
    interpolation."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(samples):
        drawn = [
            eval_examples[int(i)] for i in rng.integers(0, len(eval_examples), len(eval_examples))
        ]
        pairs = [meta_pairs[int(i)] for i in rng.integers(0, len(meta_pairs), len(meta_pairs))]
        met, graded = sum(m for m, _ in drawn), sum(n for _, n in drawn)
        positives = [v for v, t in pairs if t]
        negatives = [v for v, t in pairs if not t]
        if graded == 0 or not positives or not negatives:
            continue
        se, sp = sum(positives) / len(positives), sum(not v for v in negatives) / len(negatives)
        if se + sp - 1 <= 0:
            continue
        values.append(min(1.0, max(0.0, (met / graded + sp - 1) / (se + sp - 1))))
    if not values:
        return None, None
    values.sort()

    return percentile_by_hand(values, 2.5), percentile_by_hand(values, 97.5)


def test_the_calibrated_interval_equals_a_loop_over_resamples() -> None:
    # a judge right on 45 of 50 positives and 44 of 50 negatives: Se 0.9, Sp 0.88; 21 of 38
    # eval criteria met: an interval inside (0, 1), so neither end is a clip
    meta = [(True, True)] * 45 + [(False, True)] * 5 + [(False, False)] * 44 + [(True, False)] * 6
    examples = [(1, 3), (2, 2), (3, 4), (2, 5), (1, 1), (4, 6), (0, 3), (2, 2), (1, 2), (3, 5)]
    examples += [(2, 4), (0, 1)]
    result = calibrate("c", examples, meta)  # the defaults: 1000 resamples, seed 0
    assert result.observed == pytest.approx(21 / 38) and result.n_eval == 38
    assert result.corrected == pytest.approx((21 / 38 + 0.88 - 1) / (0.9 + 0.88 - 1))
    expected = interval_by_hand(examples, meta, 1000, 0)
    assert 0 < expected[0] < expected[1] < 1  # type: ignore[operator]
    assert result.bootstrap is not None
    assert result.bootstrap.interval.as_list() == pytest.approx(list(expected), abs=1e-12)
    assert result == calibrate("c", examples, meta, 1000, 0)
    # a small meta-eval sample (resamples without a positive or a negative are skipped, some
    # with Se + Sp - 1 <= 0) and one example with one graded criterion
    small = [(True, True), (True, True), (False, True), (False, False), (True, False)]
    for eval_examples in ([(1, 1)], examples):
        drawn = corrected_bootstrap(0.5, eval_examples, small, 200, 7)
        assert drawn is not None and drawn.estimate == 0.5
        assert drawn.interval.as_list() == pytest.approx(
            list(interval_by_hand(eval_examples, small, 200, 7))
        )


def test_comparison_edges() -> None:
    with pytest.raises(ValueError, match=r"^k must be in 1\.\.3, got 4$"):
        expected_min_of_k([0.1, 0.2, 0.3], 4)
    # two rollouts are enough for a spread: means 0.3 and 0.7, sample std sqrt(0.08)
    assert run_to_run_std({0: [0.2, 0.4], 1: [0.6, 0.8]}) == pytest.approx(math.sqrt(0.08))
    assert run_to_run_std({0: [0.2, 0.4]}) is None


def written(result: PairedDifference) -> tuple[object, ...]:
    """A paired difference as a comparison writes it: mean, ci_low, ci_high, sign flips."""
    record = result.record()
    assert list(record) == ["n", "mean_difference", "ci_low", "ci_high", "sign_flip_fraction"]
    return tuple(record[k] for k in list(record)[1:])


def test_paired_bootstrap_equals_a_loop_over_resamples() -> None:
    # negative per-prompt scores (the clip at 0 matters) and prompts where A and B agree (the
    # resamples whose difference is exactly 0 count as sign flips)
    a = {"p1": -0.5, "p2": 0.4, "p3": 0.4, "p4": 0.9, "p5": -0.8, "p6": 0.2}
    b = {"p1": -0.5, "p2": 0.4, "p3": 0.1, "p4": 0.9, "p5": -0.3, "p6": 0.2, "other": 1.0}
    expected = bootstrap_by_hand(a, b, 1000, 0)
    result = paired_bootstrap(a, b)  # the defaults: 1000 resamples, seed 0
    assert result is not None and result.n == 6
    measured = written(result)
    assert measured == pytest.approx(expected, abs=1e-12)
    # A above 1 (a length-adjusted score can be): its means are clipped at 1
    high = {k: v + 1.2 for k, v in a.items()}
    result = paired_bootstrap(high, b, 200, 2)
    assert result is not None
    measured = written(result)
    assert measured == pytest.approx(bootstrap_by_hand(high, b, 200, 2), abs=1e-12)
    result = paired_bootstrap(b, high, 200, 2)
    assert result is not None
    measured = written(result)
    assert measured == pytest.approx(bootstrap_by_hand(b, high, 200, 2), abs=1e-12)
    # a difference of exactly 1 in every resample: no resample flips its sign
    best = paired_bootstrap({"p": 1.0, "q": 1.0}, {"p": 0.0, "q": 0.0}, 20, 0)
    assert best is not None and best.bootstrap.estimate == 1.0 and best.sign_flip_fraction == 0.0
    same = paired_bootstrap(a, a, 50, 1)
    assert same is not None and same.bootstrap.estimate == 0.0 and same.sign_flip_fraction == 1.0
    assert paired_bootstrap(a, {"x": 1.0}) is None


def jury_rows() -> list[JuryRow]:
    criteria = [Criterion("a", 5, ("axis:x",)), Criterion("b", 5, ("axis:y",))]
    return [
        # no member graded anything: the row is left out, the rows after it still count
        JuryRow(["theme:t"], criteria, [{}, {}], reply_chars=100),
        JuryRow(["theme:t"], criteria, [{"j1": True, "j2": False}, {"j1": True}], 2500),
        JuryRow(["theme:u"], criteria, [{"j1": False, "j2": False}, {"j2": True}], 1500),
    ]


def test_jury_rows_after_an_unscorable_row_count() -> None:
    rows = jury_rows()
    metrics = rows_metrics(rows, lambda v: v.get("j1"), 100, 0)
    # j1: row 2 scores 10/10, row 3 scores 0/5
    assert metrics["overall_score"] == pytest.approx(0.5)
    assert metrics["overall_score:n_samples"] == 2
    length = LengthSetting(per_500_chars=0.1, center_chars=2000)
    with_length = rows_metrics(rows, lambda v: v.get("j1"), 100, 4, length)
    replies = [ScoredReply(1.0, 2500, ["theme:t"]), ScoredReply(0.0, 1500, ["theme:u"])]
    expected = length_adjusted_metrics(replies, 0.1, 2000, 100, 4)
    assert {k: with_length[k] for k in expected} == expected


def test_a_jury_of_two_with_the_default_bootstrap() -> None:
    rows = jury_rows()
    jury = jury_section(["j1", "j2"], rows)
    assert jury == jury_section(["j1", "j2"], rows, 1000, 0)
    # the mean rule: row 2 (1 + 1) * 5 / 10 ... weights 0.5 and 1.0; row 3 weights 0 and 1
    assert jury.metrics["overall_score"] == pytest.approx(((2.5 + 5) / 10 + 5 / 10) / 2)
    std = resampled_std([0.75, 0.5], 1000, 0, clip=True)
    assert jury.metrics["overall_score:bootstrap_std"] == pytest.approx(std, abs=1e-12)
    with pytest.raises(ValueError, match="two or more distinct members"):
        jury_section(["j1"], rows)


def test_average_over_raters_by_hand() -> None:
    per_rater = {
        "r1": {"f1": Rate(4, 0.5), "undefined": Rate(0, None)},
        "r2": {"undefined": Rate(2, None), "f1": Rate(6, 1.0)},
        "r3": {"no_pairs": Rate(0, 0.7)},
    }
    assert average_over_raters(per_rater) == {
        "f1": Average(0.75, (4 * 0.5 + 6 * 1.0) / 10, 2),
        "undefined": Average(None, None, 0),
        "no_pairs": Average(0.7, None, 1),
    }


def test_f1_of_an_undefined_side_counts_both_sides_pairs() -> None:
    assert _f1(Rate(3, None), Rate(2, 0.5), 1) == Rate(5, None)
    assert _f1(Rate(4, 0.5), Rate(6, 0.25), 2) == Rate(8, pytest.approx(2 * 0.125 / 0.75))
    with pytest.raises(ValueError):  # labels, raters and categories row by row
        leave_one_out([[True, False]], [["a", "b"]], ["c1", "c2"])
    with pytest.raises(
        ValueError, match=r"^own_labels, other_labels and categories differ in length$"
    ):
        pairwise_metrics([True], [[True], [False]], ["c"], "model")


def test_consensus_breakdown_reads_every_cluster_and_names_unknown_ones() -> None:
    table = consensus_criteria()
    known = sorted(table)[0]
    metrics = {
        "axis:accuracy": 0.5,  # sorted before the clusters: skipped, not the end
        f"cluster:{known}": 0.25,
        f"cluster:{known}:n_samples": 4,
        f"cluster:{known}:bootstrap_std": 0.1,
        "cluster:zz_unknown": 0.75,
        "cluster:zz_unknown:n_samples": 2,
        "cluster:zz_unknown:bootstrap_std": 0.2,
    }
    rows = consensus_breakdown(metrics)
    assert rows == [
        {
            "cluster": known,
            "theme": table[known]["theme"],
            "behavior_category": table[known]["behavior_category"],
            "criterion": table[known]["criterion"],
            "score": 0.25,
            "n_samples": 4,
            "bootstrap_std": 0.1,
        },
        {
            "cluster": "zz_unknown",
            "theme": None,
            "behavior_category": None,
            "criterion": None,
            "score": 0.75,
            "n_samples": 2,
            "bootstrap_std": 0.2,
        },
    ]
