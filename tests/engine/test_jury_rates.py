"""Judges that disagree by known rates (issue 30): `offline_server.judge_flip_rates` makes each
named judge of the built-in endpoint say a base verdict (a hash of the grader prompt alone)
flipped where a hash of its name and the prompt falls below its rate. End to end: a jury run of
`python -m healthbench_exp` in a subprocess whose recorded verdicts, pairwise agreement and jury
score equal what this test computes from that rule by hand, from the run's replies.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

from healthbench_exp.grading.grader import grader_prompt, render_conversation
from tests.e2e.test_e2e import run_cli
from tests.engine.test_runner import verdicts as recorded_verdicts

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")
RATES = {"offline-judge": 0.0, "offline-judge-b": 0.1, "offline-judge-c": 0.3}  # primary first


def flip_setting(rates: dict[str, float]) -> str:
    """The override, quoted so that Hydra reads the commas as part of one string."""
    listed = ",".join(f"{name}={rate}" for name, rate in rates.items())
    return f"offline_server.judge_flip_rates='{listed}'"


def judge_presets(root: Path) -> str:
    """Offline judge presets named offline-judge-b and -c; their searchpath override."""
    for name in list(RATES)[1:]:
        path = root / "conf" / "judge" / f"offline_{name[-1]}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"defaults:\n  - offline\nname: {name}\n", encoding="utf-8")
    return f"hydra.searchpath=[file://{root / 'conf'}]"


def by_hand(judge: str, prompt: str, rate: float) -> bool:
    """The rule, written out: sha256 of the prompt decides the base verdict (first byte even:
    met); it flips where the first 8 bytes of sha256(judge, 0x1f, prompt), as a fraction of
    2**64, fall below the judge's rate."""
    base = hashlib.sha256(prompt.encode()).digest()[0] % 2 == 0
    draw = hashlib.sha256(f"{judge}\x1f{prompt}".encode()).digest()[:8]
    return base != (int.from_bytes(draw, "big") / 2**64 < rate)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def jury_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rates")
    run_dir = root / "run"
    result = run_cli(
        *DEMO,
        judge_presets(root),
        "jury=[offline_b,offline_c]",
        flip_setting(RATES),
        "cache.enabled=false",
        f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


def test_verdicts_agreement_and_jury_score_equal_the_rule_by_hand(jury_run: Path) -> None:
    examples = {(e["prompt_id"], e["rollout"]): e for e in read_jsonl(jury_run / "examples.jsonl")}
    rows = read_jsonl(jury_run / "per_criterion.jsonl")
    assert len(rows) == 106
    expected: list[dict[str, bool]] = []
    for row in rows:
        example = examples[(row["prompt_id"], row["rollout"])]
        conversation = render_conversation(
            [*example["messages"], {"role": "assistant", "content": example["completion"]}]
        )
        prompt = grader_prompt(conversation, f"[{row['points']}] {row['criterion']}")
        expected.append({name: by_hand(name, prompt, rate) for name, rate in RATES.items()})
    assert [row["verdicts"] for row in rows] == expected  # each judge's, criterion by criterion

    jury = json.loads((jury_run / "summary.json").read_text(encoding="utf-8"))["jury"]
    assert jury["members"] == list(RATES)
    pairs = {(p["a"], p["b"]): p for p in jury["agreement"]}
    n = len(expected)
    for (a, b), pair in pairs.items():
        agreed = sum(v[a] == v[b] for v in expected) / n
        assert pair["n"] == n
        assert pair["agreement"] == agreed  # exact: the share of criteria the rule makes equal
        # and near its expectation: judges at rates p and q agree with chance (1-p)(1-q) + pq
        # (independent flips); 3 standard deviations of a share of n criteria
        p, q = RATES[a], RATES[b]
        chance = (1 - p) * (1 - q) + p * q
        assert abs(agreed - chance) <= 3 * math.sqrt(chance * (1 - chance) / n), (a, b, agreed)

    # the jury's score under rule `mean`: each criterion's points times the share of judges that
    # said met, over the example's positive points; the mean over examples clipped to [0, 1]
    scores: dict[tuple[str, int], list[float]] = {}
    for row, verdicts in zip(rows, expected, strict=True):
        earned, possible = scores.setdefault((row["prompt_id"], row["rollout"]), [0.0, 0.0])
        share = sum(verdicts.values()) / len(verdicts)
        scores[(row["prompt_id"], row["rollout"])] = [
            earned + row["points"] * share,
            possible + max(0, row["points"]),
        ]
    mean = sum(earned / possible for earned, possible in scores.values()) / len(scores)
    assert len(scores) == 24
    assert jury["metrics"]["overall_score"] == pytest.approx(min(1.0, max(0.0, mean)), abs=1e-12)


def test_a_judge_not_named_keeps_its_verdicts(tmp_path: Path) -> None:
    """The setting changes only the judges it names: the demo's own judge, unnamed, gives every
    verdict it gives without the setting (with no response cache, so every verdict is asked
    again), and so the demo its score."""
    for name, setting in (("flips", [flip_setting({"offline-judge-b": 0.5})]), ("plain", [])):
        result = run_cli(*DEMO, *setting, "cache.enabled=false", f"hydra.run.dir={tmp_path / name}")
        assert result.returncode == 0, result.stderr[-3000:]
    with_rates = recorded_verdicts(tmp_path / "flips")
    without = recorded_verdicts(tmp_path / "plain")
    assert len(with_rates) == 106 and with_rates == without
    summary = json.loads((tmp_path / "flips" / "summary.json").read_text(encoding="utf-8"))
    assert summary["metrics"]["overall_score"] == pytest.approx(0.2879, abs=5e-5)


@pytest.mark.parametrize("setting", ["offline-judge=1.5", "offline-judge", "=0.1", "a=nan"])
def test_a_bad_rate_is_refused_in_one_line(tmp_path: Path, setting: str) -> None:
    result = run_cli(
        *DEMO,
        f"offline_server.judge_flip_rates='{setting}'",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert (
        f"offline_server.judge_flip_rates: '{setting}' is not "
        "<judge model name>=<rate from 0 to 1>" in result.stderr
    )
    assert not (tmp_path / "run" / "per_criterion.jsonl").exists()
