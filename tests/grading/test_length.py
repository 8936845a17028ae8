"""The length-adjusted score for every set (SPEC 7.4): the published penalty of the set that
`difficulty` names, by default, recorded with its source; the headline of the 2025 sets stays
`overall_score`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from healthbench_exp.grading.comparison import ScoredReply, length_adjusted_metrics
from healthbench_exp.grading.length import OPTION_SOURCE, PUBLISHED_SOURCE, length_penalty
from tests.e2e.test_e2e import run_cli

SAMPLE = Path(__file__).parents[2] / "healthbench_exp" / "data" / "sample.jsonl"


@pytest.mark.parametrize(
    ("label", "value"),
    [("all", 0.0299), ("hard", 0.0392), ("consensus", 0.0020), ("professional", 0.0147)],
)
def test_each_named_set_gets_its_published_penalty(label: str, value: float) -> None:
    penalty = length_penalty(None, 2000, label)
    assert penalty is not None
    assert (penalty.per_500_chars, penalty.center_chars, penalty.set) == (value, 2000, label)
    assert penalty.source == PUBLISHED_SOURCE


def test_a_local_file_of_a_named_set_gets_that_sets_penalty() -> None:
    penalty = length_penalty(None, 2000, "hard")  # dataset.path changes nothing
    assert penalty is not None and penalty.per_500_chars == 0.0392


def test_the_sample_and_unnamed_files_get_none_unless_given() -> None:
    assert length_penalty(None, 2000, "sample") is None
    assert length_penalty(None, 2000, "mine") is None
    given = length_penalty(0.01, 2000, "sample")
    assert given is not None and (given.per_500_chars, given.source) == (0.01, OPTION_SOURCE)
    over = length_penalty(0.05, 2000, "hard")
    assert over is not None and over.per_500_chars == 0.05  # the option wins


def test_the_hard_sets_penalty_by_hand() -> None:
    rows = [
        ScoredReply(0.5, 1000, ("theme:a",)),  # 0.5 + 0.0392 * 1000 / 500 = 0.5784
        ScoredReply(0.2, 3000, ("theme:a",)),  # 0.2 - 0.0784 = 0.1216
        ScoredReply(0.9, 2000, ("theme:b",)),  # at the center: 0.9
    ]
    metrics = length_adjusted_metrics(rows, 0.0392, 2000, 10, 0)
    assert metrics["length_adjusted_score"] == pytest.approx((0.5784 + 0.1216 + 0.9) / 3)
    assert metrics["length_adjusted_score:theme:a"] == pytest.approx(0.35)
    assert metrics["length_adjusted_score:theme:b"] == pytest.approx(0.9)


def _run(tmp_path: Path, *args: str) -> dict:
    result = run_cli(
        "model=offline", "judge=offline", "wandb=disabled", "sampling.num_examples=6",
        *args, f"hydra.run.dir={tmp_path}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    # the console: the headline first, the length-adjusted score beside it when reported
    headline = result.stdout.index("overall_score ")
    if "length_adjusted_score" in summary["metrics"]:
        assert headline < result.stdout.index("length_adjusted_score ") < result.stdout.index("by")
    return summary


def _by_hand(run_dir: Path, penalty: float) -> float:
    rows = [json.loads(x) for x in (run_dir / "examples.jsonl").read_text().splitlines()]
    adjusted = [r["score"] - penalty * (len(r["completion"]) - 2000) / 500 for r in rows]
    return min(1.0, max(0.0, sum(adjusted) / len(adjusted)))


def test_a_hard_run_from_a_file_reports_the_hard_penalty_beside_overall_score(
    tmp_path: Path,
) -> None:
    summary = _run(tmp_path, "difficulty=hard", f"dataset.path={SAMPLE}")
    metrics = summary["metrics"]
    assert summary["headline"] == "overall_score"
    assert metrics["length_adjusted_score"] == pytest.approx(_by_hand(tmp_path, 0.0392))
    assert any(n.startswith("length_adjusted_score:theme:") for n in metrics)
    assert summary["length_penalty"] == {
        "per_500_chars": 0.0392, "center_chars": 2000, "set": "hard", "source": PUBLISHED_SOURCE,
    }  # fmt: skip
    assert "scoring.length_penalty_per_500_chars" not in " ".join(summary["protocol"]["deviations"])


def test_the_sample_reports_none_unless_a_penalty_is_given(tmp_path: Path) -> None:
    summary = _run(tmp_path / "a", "difficulty=sample")
    assert "length_adjusted_score" not in summary["metrics"] and "length_penalty" not in summary
    summary = _run(tmp_path / "b", "difficulty=sample", "scoring.length_penalty_per_500_chars=0.1")
    assert summary["metrics"]["length_adjusted_score"] == pytest.approx(
        _by_hand(tmp_path / "b", 0.1)
    )
    assert summary["length_penalty"]["source"] == OPTION_SOURCE
