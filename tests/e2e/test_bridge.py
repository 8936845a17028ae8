"""The bridged score end to end: `python -m healthbench_exp` on the built-in endpoint, a lenient
new judge, a bridge built on one synthetic set (a jury run of the reference grader and the new
judge) and applied to a run of the new judge on another set; every figure checked against a
hand computation (tests/e2e/bridge_runs.py) or the reference grader's own run on that set."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.bridge_runs import (
    AS_OLD,
    JUDGES,
    NEW,
    OLD,
    bridge_pairs,
    bridged_by_hand,
    lines,
    q_table,
    run,
    stratum,
    write_data,
)
from tests.e2e.test_e2e import run_cli, run_module
from tests.wandb_log import read_run


class Runs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache = root / "cache"
        self.data_a = write_data(root, "bridgeset", 120)
        self.data_b = write_data(root, "newset", 120, extra_axis="communication_quality")
        # the bridge: both judges on set A's replies
        self.source = run(
            root / "source", self.cache, *AS_OLD, "jury=[offline]", f"dataset.path={self.data_a}"
        )
        # the reference grader's own score on set B, and the new judge's run bridged
        self.old_b = run(root / "old_b", self.cache, *AS_OLD, f"dataset.path={self.data_b}")
        # the new judge's run, bridged, with an offline W&B run to read back
        self.new_b = root / "new_b"
        self.result = run_cli(
            *JUDGES,
            "wandb=offline",
            f"dataset.path={self.data_b}",
            f"bridge.runs=[{self.source}]",
            "bridge.method=calibration",  # q carried over: the hand computation below
            f"hydra.run.dir={self.new_b}",
            env={
                "HEALTHBENCH_CACHE_DIR": str(self.cache),
                "WANDB_DIR": str(root / "wandb_dir"),
                "WANDB_DATA_DIR": str(root / "wandb_data"),
                "WANDB_CACHE_DIR": str(root / "wandb_cache"),
            },
        )
        assert self.result.returncode == 0, self.result.stderr[-3000:]

    def summary(self, name: str) -> dict:
        return json.loads((self.root / name / "summary.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory.mktemp("bridge"))


def test_bridged_score_is_the_hand_computation_and_lands_on_the_reference_scale(
    runs: Runs,
) -> None:
    summary = runs.summary("new_b")
    bridged = summary["bridged"]
    pairs = bridge_pairs(runs.source)
    assert bridged["pairs"] == len(pairs) > 500
    assert bridged["old_judge"] == OLD and bridged["new_judge"] == NEW
    assert bridged["bridge"] == [str(runs.source)]
    assert (bridged["method"], bridged["revision"]) == ("calibration", 1)  # the first bridge
    by_hand = bridged_by_hand(runs.new_b, pairs)
    assert bridged["metrics"]["bridged_score"] == pytest.approx(by_hand, abs=1e-9)
    for tag in ("theme:hedging", "axis:accuracy", "axis:communication_quality"):
        expected = bridged_by_hand(runs.new_b, pairs, tag)
        assert bridged["metrics"][f"bridged:{tag}"] == pytest.approx(expected, abs=1e-9)
        low, high = bridged["ci"][f"bridged:{tag}"]
        assert low <= expected <= high
    reference = runs.summary("old_b")["metrics"]["overall_score"]
    raw = summary["metrics"]["overall_score"]  # the run's own metrics stay the new judge's
    low, high = bridged["ci"]["bridged_score"]
    assert low <= reference <= high
    assert abs(by_hand - reference) < abs(raw - reference)
    assert raw > reference + 0.05  # the lenient judge inflates the raw score
    assert any(d.startswith("bridge.runs:") for d in summary["protocol"]["deviations"])
    holdout = bridged["holdout_error"]
    print(
        f"bridged {by_hand:.4f} [{low:.4f}, {high:.4f}], reference {reference:.4f}, raw {raw:.4f}"
        f"; held-out error {holdout['mean']:+.4f} {holdout['ci']}"
    )


def test_cells_under_30_pairs_take_their_signs_pooled_q_and_say_so(runs: Runs) -> None:
    bridged = runs.summary("new_b")["bridged"]
    pairs = bridge_pairs(runs.source)
    run_rows = lines(runs.new_b / "per_criterion.jsonl")
    strata = {(p[0], p[1]) for p in pairs} | {
        (stratum(r["tags"]), r["points"] > 0) for r in run_rows
    }
    q = q_table(pairs, strata)
    n = {
        (s, positive, new): sum(1 for p in pairs if p[:3] == (s, positive, new))
        for s, positive in strata
        for new in (True, False)
    }
    rows = {(r["stratum"], r["sign"]): r for r in bridged["strata"]}
    assert {k for k in rows if k[0] != "pooled"} == {
        (s, "positive" if p else "negative") for s, p in strata
    }
    pooled_seen = unpooled_seen = 0
    for (s, sign), row in rows.items():
        if s == "pooled":
            continue
        positive = sign == "positive"
        assert row["n_met"] == n[(s, positive, True)] and row["n_not"] == n[(s, positive, False)]
        assert row["q_met"] == pytest.approx(q[(s, positive, True)], abs=1e-12)
        assert row["q_not"] == pytest.approx(q[(s, positive, False)], abs=1e-12)
        expected = sorted(
            v for v, new in (("met", True), ("not", False)) if n[(s, positive, new)] < 30
        )
        assert row["pooled"] == expected
        pooled_seen += bool(expected)
        unpooled_seen += len(expected) < 2
    # the cluster (a few rows) and the axis only set B has (no bridge pair) are pooled
    assert rows[("axis:communication_quality", "positive")]["pooled"] == ["met", "not"]
    assert rows[("axis:communication_quality", "positive")]["n_met"] == 0
    assert rows[("cluster:context_seeking_enough-context_precise", "positive")]["pooled"]
    assert pooled_seen >= 2 and unpooled_seen >= 3
    for sign, positive in (("positive", True), ("negative", False)):
        pooled = rows[("pooled", sign)]
        met = [p for p in pairs if p[1] == positive and p[2]]
        assert pooled["n_met"] == len(met)
        assert pooled["q_met"] == pytest.approx((sum(p[3] for p in met) + 0.5) / (len(met) + 1))
    assert any("pooled" in w for w in bridged["warnings"])


def test_holdout_error_is_the_five_fold_check_by_hand(runs: Runs) -> None:
    holdout = runs.summary("new_b")["bridged"]["holdout_error"]
    pairs = bridge_pairs(runs.source)
    seed = runs.summary("new_b")["config"]["sampling"]["seed"]
    examples = sorted({(0, p[5]) for p in pairs})
    order = np.random.default_rng(seed).permutation(len(examples))
    fold = {examples[j][1]: i % 5 for i, j in enumerate(order)}
    strata = {(p[0], p[1]) for p in pairs}
    errors = []
    for f in range(5):
        q = q_table([p for p in pairs if fold[p[5]] != f], strata)
        for _, example in examples:
            if fold[example] != f:
                continue
            held = [p for p in pairs if p[5] == example]
            den = sum(p[4] for p in held if p[4] > 0)
            bridged = sum(p[4] * q[(p[0], p[1], p[2])] for p in held)
            own = sum(p[4] for p in held if p[3])
            errors.append((bridged - own) / den)
    assert holdout["folds"] == 5 and holdout["examples"] == len(errors) == 120
    assert holdout["mean"] == pytest.approx(sum(errors) / len(errors), abs=1e-12)
    low, high = holdout["ci"]
    assert low <= holdout["mean"] <= high and low <= 0 <= high  # a lenient judge, bridged right


def test_the_bridged_score_is_shown_beside_the_runs_own_everywhere(
    runs: Runs, tmp_path: Path
) -> None:
    """The end-of-run table, report.html, the W&B run's summary (read back from its offline
    log) and a comparison's summary all show the bridged score and its interval beside the
    run's own score."""
    bridged = runs.summary("new_b")["bridged"]
    score = bridged["metrics"]["bridged_score"]
    low, high = bridged["ci"]["bridged_score"]
    cell = f"{score:.4f} [{low:.4f}, {high:.4f}]"
    shown = f"bridged_score (calibration, on {OLD}'s scale, not a reference metric): {cell}"
    assert shown in runs.result.stdout
    html = (runs.new_b / "report.html").read_text()
    assert "id='bridged'" in html and f"{score:.4f} [{low:.4f}, {high:.4f}]" in html
    (folder,) = sorted((runs.root / "wandb_dir" / "wandb").glob("offline-run-*"))
    logged = read_run(folder).summary
    assert logged["bridged/bridged_score"] == pytest.approx(score)
    assert logged["bridged/bridged_score/ci_low"] == pytest.approx(low)
    assert logged["bridged/pairs"] == bridged["pairs"]
    assert logged["bridged/method"] == bridged["method"] == "calibration"
    assert logged["bridged/holdout_error"] == pytest.approx(bridged["holdout_error"]["mean"])
    out = tmp_path / "comparison"
    result = run_module(
        "healthbench_exp.aggregate",
        str(runs.new_b),
        str(runs.old_b),
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    rows = {r["job"]: r for r in json.loads((out / "sweep_summary.json").read_text())["jobs"]}
    assert rows["new_b"]["bridged_score"] == pytest.approx(score)
    assert rows["new_b"]["bridged_method"] == "calibration"
    assert "bridged_sources" not in rows["old_b"]
    table = (out / "sweep_summary.md").read_text()
    (line,) = [x for x in table.splitlines() if x.startswith("| new_b |")]
    assert f"| calibration: {cell} |" in line  # its own column (the published one follows)
    assert "id='bridged'" in (out / "report.html").read_text()
    assert "<b class='bridged-method'>calibration</b>" in html
