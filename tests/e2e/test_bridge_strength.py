"""The bridge applied to models stronger and weaker than the one whose replies built it, end to
end on the built-in endpoint (`offline_server.model_strengths`): the new judge's error rates
against the reference grader are the same for every model (it flips FLIP of the verdicts and
says met on LENIENT of the rest), only how often the replies meet criteria moves.

`label_shift` (the default) must hold the reference grader's own score on the run's replies
inside its interval and land closer to it than the raw score; `calibration` is today's q
estimator, reproduced by the hand computation of tests/e2e/bridge_runs.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.bridge_runs import (
    NEW,
    OLD,
    bridge_pairs,
    bridged_by_hand,
    lines,
    stratum,
    write_data,
)
from tests.e2e.test_e2e import run_cli

FLIP, LENIENT = 0.1, 0.3
STRENGTHS = "middling=0.45:0.8,strong=0.8:0.95,weak=0.15:0.6"
SETTINGS = (
    "experiment=demo",
    "wandb=disabled",
    "runner.progress=false",
    f"offline_server.judge_flip_rates='{OLD}=0,{NEW}={FLIP}'",
    f"offline_server.judge_lenient_rates='{NEW}={LENIENT}'",
    f"offline_server.model_strengths='{STRENGTHS}'",
)
AS_OLD = ("judge=offline", f"judge.name={OLD}")
EXAMPLES = 200


class Runs:
    def __init__(self, root: Path) -> None:
        self.root, self.cache = root, root / "cache"
        self.stdout: dict[str, str] = {}
        bridge_set = write_data(root, "bridgeset", EXAMPLES)
        self.target = write_data(root, "target", EXAMPLES)
        # the bridge: both judges on the middling model's replies to another set
        self.source = self.run("source", "middling", *AS_OLD, "jury=[offline]", data=bridge_set)

    def run(self, name: str, model: str, *args: str, data: Path | None = None) -> Path:
        directory = self.root / name
        result = run_cli(
            *SETTINGS,
            f"model.name={model}",
            f"dataset.path={data or self.target}",
            *args,
            f"hydra.run.dir={directory}",
            env={"HEALTHBENCH_CACHE_DIR": str(self.cache)},
        )
        assert result.returncode == 0, result.stderr[-3000:]
        self.stdout[name] = result.stdout
        return directory

    def summary(self, directory: Path) -> dict:
        return json.loads((directory / "summary.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory.mktemp("strength"))


@pytest.mark.parametrize("model", ["strong", "weak"])
def test_label_shift_holds_the_reference_score_of_a_stronger_and_a_weaker_model(
    runs: Runs, model: str
) -> None:
    own = runs.summary(runs.run(f"old_{model}", model, *AS_OLD))["metrics"]["overall_score"]
    bridged_dir = runs.run(f"new_{model}", model, f"bridge.runs=[{runs.source}]")
    summary = runs.summary(bridged_dir)
    raw = summary["metrics"]["overall_score"]
    bridged = summary["bridged"]
    assert (bridged["method"], bridged["revision"]) == ("label_shift", 3)  # SPEC 7.5 rev. 3
    score = bridged["metrics"]["bridged_score"]
    low, high = bridged["ci"]["bridged_score"]
    calibrated_dir = runs.run(
        f"cal_{model}", model, f"bridge.runs=[{runs.source}]", "bridge.method=calibration"
    )
    calibration = runs.summary(calibrated_dir)["bridged"]
    q_score = calibration["metrics"]["bridged_score"]
    q_low, q_high = calibration["ci"]["bridged_score"]
    print(
        f"{model}: own {own:.4f}, raw {raw:.4f}, label_shift {score:.4f} [{low:.4f}, "
        f"{high:.4f}], calibration {q_score:.4f} [{q_low:.4f}, {q_high:.4f}]"
    )
    assert low <= own <= high
    assert abs(score - own) < abs(raw - own)
    assert abs(score - own) < abs(q_score - own)  # the case calibration gets wrong
    # calibration is today's estimator: q carried over, by hand
    pairs = bridge_pairs(runs.source)
    assert q_score == pytest.approx(bridged_by_hand(calibrated_dir, pairs), abs=1e-9)
    # the strata table: the judge's rates as the bridge measured them, the run's own share
    rows = {(s["stratum"], s["sign"]): s for s in bridged["strata"]}
    accuracy = rows[("axis:accuracy", "positive")]
    assert accuracy["se"] == pytest.approx(0.9 + FLIP * LENIENT, abs=0.06)
    assert accuracy["sp"] == pytest.approx((1 - FLIP) * (1 - LENIENT), abs=0.08)
    assert accuracy["pooled"] == [] and accuracy["run_n"] > 100
    # pi: the reference grader's share there weighted as the score weighs criteria (SPEC 7.5
    # revision 2), close to its own on these replies
    old_rows = lines(runs.root / f"old_{model}" / "per_criterion.jsonl")
    assert accuracy["pi"] == pytest.approx(weighted_share(old_rows, "axis:accuracy"), abs=0.1)
    # the method beside the number, and the label-shift strata table, in the console and page
    cell = f"{score:.4f} [{low:.4f}, {high:.4f}]"
    assert f"bridged_score (label_shift, on {OLD}'s scale" in runs.stdout[f"new_{model}"]
    assert cell in runs.stdout[f"new_{model}"]
    html = (bridged_dir / "report.html").read_text()
    assert "<b class='bridged-method'>label_shift</b>" in html and "<th>w met</th>" in html


def weighted_share(rows: list[dict], name: str) -> float:
    """The judge's met share of the positive criteria of stratum `name`, each weighted by its
    points over its example's graded positive points (SPEC 7.5 revision 2's m)."""
    den: dict[tuple[str, int], float] = {}
    for r in rows:
        if isinstance(r["criteria_met"], bool) and r["points"] > 0:
            key = (r["prompt_id"], r["rollout"])
            den[key] = den.get(key, 0.0) + r["points"]
    met = total = 0.0
    for r in rows:
        key = (r["prompt_id"], r["rollout"])
        if isinstance(r["criteria_met"], bool) and r["points"] > 0 and stratum(r["tags"]) == name:
            total += r["points"] / den[key]
            met += r["points"] / den[key] * r["criteria_met"]
    return met / total
