"""A meta-eval jury of judges that disagree by known rates (issue 30.2): with
`offline_server.judge_flip_rates`, the built-in endpoint's judges say the grader prompt's base
verdict flipped at their own rates. A judge flipping every verdict (rate 1.0) against one flipping
none (rate 0) agrees with it on no row, and its agreement with physicians moves as swapping the
judge's labels moves it. End to end, against what this test computes by hand from the bundled
meta-eval rows.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from healthbench_exp.grading.grader import grader_prompt, render_conversation
from tests.e2e.test_e2e import run_cli
from tests.engine.test_jury_rates import by_hand

RUN = ("experiment=demo", "task=meta_eval", "wandb=disabled", "runner.progress=false")
RATES = {"offline-judge": 0.0, "offline-judge-b": 1.0, "offline-judge-c": 0.3}  # primary first
POOLED = "pairwise_model_f1_balanced"


def balanced_f1(pairs: list[tuple[bool, bool]]) -> float:
    """simple-evals' pooled figure: (judge, physician) label pairs, the mean of the F1 of "met"
    and of "not met"."""
    tt = sum(j and p for j, p in pairs)
    ff = sum(not j and not p for j, p in pairs)
    wrong = len(pairs) - tt - ff
    return (2 * tt / (2 * tt + wrong) + 2 * ff / (2 * ff + wrong)) / 2


def _key(row: dict) -> tuple[str, str, str]:
    return row["prompt_id"], row["completion_id"], row["rubric"]


def test_a_meta_eval_jury_at_known_rates_equals_the_rule_by_hand(tmp_path: Path) -> None:
    for name in list(RATES)[1:]:
        preset = tmp_path / "conf" / "judge" / f"offline_{name[-1]}.yaml"
        preset.parent.mkdir(parents=True, exist_ok=True)
        preset.write_text(f"defaults:\n  - offline\nname: {name}\n", encoding="utf-8")
    listed = ",".join(f"{name}={rate}" for name, rate in RATES.items())
    result = run_cli(
        *RUN,
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "jury=[offline_b,offline_c]",
        f"offline_server.judge_flip_rates='{listed}'",
        "cache.enabled=false",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    source = resources.files("healthbench_exp") / "data" / "meta_eval_sample.jsonl"
    data = {_key(r): r for r in map(json.loads, source.read_text(encoding="utf-8").splitlines())}
    rows = [
        json.loads(line)
        for line in (tmp_path / "run" / "meta_eval.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(rows) == 40
    expected = []
    for row in rows:
        item = data[_key(row)]
        conversation = render_conversation(
            [*item["prompt"], {"role": "assistant", "content": item["completion"]}]
        )
        prompt = grader_prompt(conversation, row["rubric"])
        expected.append({name: by_hand(name, prompt, rate) for name, rate in RATES.items()})
    assert [row["verdicts"] for row in rows] == expected  # each judge's, row by row
    primary, flipped, partial = RATES
    assert not any(v[primary] == v[flipped] for v in expected)  # rate 1.0 against 0: agreement 0
    differ = sum(v[primary] != v[partial] for v in expected)
    assert 0 < differ < len(rows) / 2  # rate 0.3: the rows where its draw fell below 0.3

    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    physicians = [(v, row["binary_labels"]) for v, row in zip(expected, rows, strict=True)]
    for name in RATES:
        pairs = [(v[name], label) for v, labels in physicians for label in labels]
        assert summary["jury"]["by_judge"][name][POOLED] == pytest.approx(balanced_f1(pairs))
    assert summary["metrics"][POOLED] == summary["jury"]["by_judge"][primary][POOLED]
    # the direction is known: the judge that flips every verdict has the primary's pairs with
    # the judge's label swapped, so its agreement with physicians is the primary's
    # disagreement, and its balanced F1 is the swapped pairs' (whatever the physicians said)
    own = [(v[primary], label) for v, labels in physicians for label in labels]
    swapped = [(not j, p) for j, p in own]
    assert summary["jury"]["by_judge"][flipped][POOLED] == pytest.approx(balanced_f1(swapped))
    agree = sum(j == p for j, p in own) / len(own)
    agree_flipped = sum(v[flipped] == label for v, labels in physicians for label in labels)
    assert agree_flipped / len(own) == pytest.approx(1 - agree)
    # the physicians' own figures do not depend on the judges: those of a run without the rates
    plain = run_cli(*RUN, "cache.enabled=false", f"hydra.run.dir={tmp_path / 'plain'}")
    assert plain.returncode == 0, plain.stderr[-3000:]
    reference = json.loads((tmp_path / "plain" / "summary.json").read_text(encoding="utf-8"))
    physician_keys = [key for key in reference["metrics"] if "pairwise_physician" in key]
    assert physician_keys
    for key in physician_keys:
        assert summary["metrics"][key] == reference["metrics"][key], key
    assert summary["metrics"][POOLED] != reference["metrics"][POOLED]  # the judge's moved
