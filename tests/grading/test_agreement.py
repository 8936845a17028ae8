"""Pairwise agreement metrics, leave-one-out physicians and Cohen's kappa."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from healthbench_exp.grading.agreement import (
    Rate,
    average_over_raters,
    cohen_agreement,
    leave_one_out,
    pairwise_metrics,
)
from healthbench_exp.grading.scoring import consensus_criteria


def reference_rater_metrics(own, others, clusters, who) -> dict[str, dict]:
    """An independent transcription of simple-evals' `compute_metrics_for_rater_by_class`:
    lists of agreements keyed by metric-name strings, F1 from every precision key that has a
    matching recall key, balanced from every `pos` key that has a matching `neg` key."""
    lists = defaultdict(list)
    for s, row_others, cluster in zip(own, others, clusters, strict=True):
        for o in row_others:
            precision = f"pairwise_{who}_precision_{'pos' if s else 'neg'}"
            recall = f"pairwise_{who}_recall_{'pos' if o else 'neg'}"
            for key in (precision, f"{cluster}: {precision}", recall, f"{cluster}: {recall}"):
                lists[key].append(s == o)
    metrics = {k: {"n": len(v), "value": sum(v) / len(v)} for k, v in lists.items()}
    f1 = {}
    for key in metrics:
        if "precision" in key and key.replace("precision", "recall") in metrics:
            p, r = metrics[key], metrics[key.replace("precision", "recall")]
            if p["value"] == 0 and r["value"] == 0:
                value = 0.0
            else:
                value = 2 * (p["value"] * r["value"]) / (p["value"] + r["value"])
            n = p["n"] + r["n"] - p["value"] * p["n"]
            f1[key.replace("precision", "f1")] = {"n": n, "value": value}
    metrics.update(f1)
    balanced = {}
    for key in metrics:
        if "pos" in key and key.replace("pos", "neg") in metrics:
            pos, neg = metrics[key], metrics[key.replace("pos", "neg")]
            balanced[key.replace("pos", "balanced")] = {
                "n": pos["n"] + neg["n"],
                "value": (pos["value"] + neg["value"]) / 2,
            }
    metrics.update(balanced)
    return metrics


def reference_physicians(labels, ids, clusters) -> dict[str, dict]:
    """The reference's per-physician loop (each label against the row's other labels)."""
    lists = defaultdict(lambda: ([], [], []))
    for row_labels, row_ids, cluster in zip(labels, ids, clusters, strict=True):
        for i, physician in enumerate(row_ids):
            lists[physician][0].append(row_labels[i])
            lists[physician][1].append(row_labels[:i] + row_labels[i + 1 :])
            lists[physician][2].append(cluster)
    return {p: reference_rater_metrics(*lists[p], "physician") for p in lists}


def assert_same_as_reference(ours: dict[str, Rate], reference: dict[str, dict]) -> None:
    """Every reference key has our value and n; every other key of ours is undefined."""
    for key, expected in reference.items():
        assert ours[key].value == pytest.approx(expected["value"], abs=1e-12), key
        assert ours[key].n == pytest.approx(expected["n"], abs=1e-9), key
    for key, rate in ours.items():
        if key not in reference:
            assert rate.value is None, key


def test_hand_computed_pairs_with_an_undefined_class() -> None:
    # the reference's own unit-test table: pairs (own, other) overall are
    # (T,T) (T,T) (T,F) | (F,T) (F,F) | (T,F): tt=2 tf=2 ft=1 ff=1
    metrics = pairwise_metrics(
        [True, False, True], [[True, True, False], [True, False], [False]], ["a", "a", "b"], "model"
    )
    assert metrics["pairwise_model_precision_pos"] == Rate(4, 2 / 4)
    assert metrics["pairwise_model_precision_neg"] == Rate(2, 1 / 2)
    assert metrics["pairwise_model_recall_pos"] == Rate(3, 2 / 3)
    assert metrics["pairwise_model_recall_neg"] == Rate(3, 1 / 3)
    f1_pos, f1_neg = 2 * (0.5 * 2 / 3) / (0.5 + 2 / 3), 2 * (0.5 * 1 / 3) / (0.5 + 1 / 3)
    assert f1_pos == pytest.approx(4 / 7) and f1_neg == pytest.approx(2 / 5)
    assert metrics["pairwise_model_f1_pos"] == Rate(4 + 3 - 2, f1_pos)
    assert metrics["pairwise_model_f1_neg"] == Rate(2 + 3 - 1, f1_neg)
    assert metrics["pairwise_model_f1_balanced"].value == pytest.approx(17 / 35, abs=1e-15)
    assert metrics["pairwise_model_f1_balanced"].n == 9
    # category b: one pair (T, F). Nobody under test said "not met" and no other rater said
    # "met", so neg precision and pos recall have no pairs: both F1s and the balanced F1 are
    # undefined (None), not 0
    assert metrics["b: pairwise_model_precision_pos"] == Rate(1, 0.0)
    assert metrics["b: pairwise_model_recall_neg"] == Rate(1, 0.0)
    assert metrics["b: pairwise_model_precision_neg"] == Rate(0, None)
    assert metrics["b: pairwise_model_recall_pos"] == Rate(0, None)
    assert metrics["b: pairwise_model_f1_pos"].value is None
    assert metrics["b: pairwise_model_f1_neg"].value is None
    assert metrics["b: pairwise_model_f1_balanced"].value is None
    # category a: (T,T) (T,T) (T,F) (F,T) (F,F): precision pos 2/3, recall pos 2/3
    assert metrics["a: pairwise_model_f1_pos"].value == pytest.approx(2 / 3)
    assert metrics["a: pairwise_model_f1_neg"].value == pytest.approx(0.5)


def test_zero_precision_and_recall_give_f1_zero() -> None:
    # own always "met", others always "not met": pos precision 0 with n=2; pos recall undefined;
    # neg recall 0 with n=2; neg precision undefined
    metrics = pairwise_metrics([True], [[False, False]], ["c"], "model")
    assert metrics["pairwise_model_f1_pos"].value is None
    # with one agreeing and one disagreeing pair in each direction the F1s are defined
    metrics = pairwise_metrics([True, False], [[False], [True]], ["c", "c"], "model")
    assert metrics["pairwise_model_f1_pos"] == Rate(2, 0.0)
    assert metrics["pairwise_model_f1_neg"] == Rate(2, 0.0)
    assert metrics["pairwise_model_f1_balanced"] == Rate(4, 0.0)


@pytest.mark.parametrize("seed", range(5))
def test_random_tables_equal_the_reference_transcription(seed: int) -> None:
    rng = random.Random(seed)
    categories = [f"cluster:{k}" for k in sorted(consensus_criteria())[:9]]
    rows = 300
    own = [rng.random() < 0.6 for _ in range(rows)]
    others = [[rng.random() < 0.55 for _ in range(rng.randint(0, 5))] for _ in range(rows)]
    clusters = [rng.choice(categories) for _ in range(rows)]
    # a category where every other label is "met": its neg recall has no pairs
    own += [True, False]
    others += [[True, True], [True]]
    clusters += ["cluster:only_met_labels"] * 2
    ours = pairwise_metrics(own, others, clusters, "model")
    reference = reference_rater_metrics(own, others, clusters, "model")
    assert_same_as_reference(ours, reference)
    assert len([k for k in ours if ours[k].value is not None]) == len(reference)
    # pairs (T,T) (T,T) (F,T): pos F1 = 2 * 1 * (2/3) / (1 + 2/3) = 0.8 over TP+FP+FN = 3;
    # neg recall has no pairs, so neg F1 and balanced F1 are undefined (the reference omits them)
    only_met = "cluster:only_met_labels: pairwise_model_"
    assert ours[only_met + "f1_pos"].value == pytest.approx(0.8)
    assert ours[only_met + "f1_pos"].n == 3
    assert ours[only_met + "f1_balanced"] == Rate(4, None)
    assert only_met + "f1_balanced" not in reference


@pytest.mark.parametrize("seed", range(3))
def test_leave_one_out_equals_the_reference_loop(seed: int) -> None:
    rng = random.Random(100 + seed)
    physicians = [f"physician_{i}" for i in range(7)]
    labels, ids, clusters = [], [], []
    for _ in range(200):
        row_ids = rng.sample(physicians, rng.randint(1, 4))
        truth = rng.random() < 0.5
        labels.append([truth if rng.random() < 0.8 else not truth for _ in row_ids])
        ids.append(row_ids)
        clusters.append(rng.choice(["cluster:x_a", "cluster:y_b", "cluster:z_c"]))
    ours = leave_one_out(labels, ids, clusters)
    reference = reference_physicians(labels, ids, clusters)
    assert set(ours) == set(reference)
    for physician in reference:
        assert_same_as_reference(ours[physician], reference[physician])


def test_leave_one_out_by_hand() -> None:
    # row 1: a=T b=T c=F; row 2: a=F b=T. a is paired with (T,F) and (T): pairs (T,T) (T,F) (F,T)
    per = leave_one_out(
        [[True, True, False], [False, True]], [["a", "b", "c"], ["a", "b"]], ["k"] * 2
    )
    a = per["a"]
    assert a["pairwise_physician_precision_pos"] == Rate(2, 0.5)
    assert a["pairwise_physician_recall_pos"] == Rate(2, 0.5)
    assert a["pairwise_physician_precision_neg"] == Rate(1, 0.0)
    assert a["pairwise_physician_f1_pos"].value == pytest.approx(0.5)
    # neg: a said "not met" once (against T) and c said "not met" once (against a's T): both 0
    assert a["pairwise_physician_f1_neg"] == Rate(2, 0.0)
    # c said F against (T, T): precision neg 0 over 2 pairs
    assert per["c"]["pairwise_physician_precision_neg"] == Rate(2, 0.0)
    assert set(per) == {"a", "b", "c"}


def test_average_over_raters_mean_and_weighted_mean() -> None:
    per = {
        "a": {"m": Rate(10, 0.8), "u": Rate(0, None)},
        "b": {"m": Rate(30, 0.4), "u": Rate(5, 0.5)},
        "c": {"m": Rate(0, None)},
    }
    average = average_over_raters(per)
    assert average["m"].mean == pytest.approx(0.6)
    assert average["m"].weighted_mean == pytest.approx((8 + 12) / 40)
    assert average["m"].raters == 2
    assert average["u"].mean == 0.5 and average["u"].raters == 1


def test_cohen_kappa_on_known_labels() -> None:
    a = [True, True, False, False]
    b = [True, False, False, False]
    result = cohen_agreement(zip(a, b, strict=True))
    # p_o = 3/4; p_e = 0.5 * 0.25 + 0.5 * 0.75 = 0.5; kappa = (0.75 - 0.5) / 0.5
    assert result.n == 4 and result.agreement == 0.75 and result.kappa == pytest.approx(0.5)
    assert result.a_met_rate == 0.5 and result.b_met_rate == 0.25
    # a textbook table: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> kappa 0.4
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    assert cohen_agreement(pairs).kappa == pytest.approx(0.4)
    # perfect disagreement on balanced labels: kappa -1
    assert cohen_agreement([(True, False), (False, True)]).kappa == pytest.approx(-1.0)


def test_kappa_undefined_when_both_raters_are_constant_and_equal() -> None:
    result = cohen_agreement([(True, True)] * 5)
    assert result.agreement == 1.0 and result.kappa is None
    assert cohen_agreement([]).n == 0 and cohen_agreement([]).kappa is None
