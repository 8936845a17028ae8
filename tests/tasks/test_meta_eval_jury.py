"""A jury in a meta-eval (issue 30.2): each member's agreement with physicians is reported, as a
one-judge meta-eval of that member computes it. End to end: `python -m healthbench_exp` in a
subprocess against the built-in endpoint (its verdicts hash the judge's name, so the members
disagree), with a further offline judge preset in a config directory of the user's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_e2e import run_cli

FIGURES = ("pairwise_model_f1_balanced", "criterion_mean:pairwise_model_f1_balanced")
RUN = ("experiment=demo", "task=meta_eval", "wandb=disabled", "runner.progress=false")


def test_a_meta_eval_jury_reports_each_member_as_its_own_meta_eval(tmp_path: Path) -> None:
    preset = tmp_path / "conf" / "judge" / "offline_b.yaml"
    preset.parent.mkdir(parents=True)
    preset.write_text("defaults:\n  - offline\nname: offline-judge-b\n", encoding="utf-8")
    common = (*RUN, f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "cache.enabled=false")
    jury = run_cli(*common, "jury=[offline_b]", f"hydra.run.dir={tmp_path / 'jury'}")
    assert jury.returncode == 0, jury.stderr[-3000:]
    alone = run_cli(*common, "judge=offline_b", f"hydra.run.dir={tmp_path / 'alone'}")
    assert alone.returncode == 0, alone.stderr[-3000:]
    summary = json.loads((tmp_path / "jury" / "summary.json").read_text(encoding="utf-8"))
    member = json.loads((tmp_path / "alone" / "summary.json").read_text(encoding="utf-8"))
    section = summary["jury"]
    assert section["members"] == ["offline-judge", "offline-judge-b"]
    assert section["ungraded"] == {"offline-judge": 0, "offline-judge-b": 0}
    assert summary["usage"]["jury"]["offline-judge-b"]["requests"] == 40  # one call per row
    for figure in FIGURES:
        for suffix in ("", ":ci_low", ":ci_high"):
            key = figure + suffix
            # the primary's are the run's own; the member's are its one-judge meta-eval's
            assert section["by_judge"]["offline-judge"][key] == summary["metrics"][key]
            assert section["by_judge"]["offline-judge-b"][key] == pytest.approx(
                member["metrics"][key]
            )
    assert summary["metrics"][FIGURES[0]] != pytest.approx(member["metrics"][FIGURES[0]])
    records = (tmp_path / "jury" / "meta_eval.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(set(json.loads(r)["verdicts"]) == {"offline-judge-b"} for r in records)
    shown = jury.stdout + jury.stderr
    value = f"{member['metrics'][FIGURES[1]]:.4f}"
    assert f"jury member offline-judge-b: criterion mean {value}" in shown


def test_a_meta_eval_dry_run_estimates_every_member(tmp_path: Path) -> None:
    preset = tmp_path / "conf" / "judge" / "offline_b.yaml"
    preset.parent.mkdir(parents=True)
    preset.write_text("defaults:\n  - offline\nname: offline-judge-b\n", encoding="utf-8")
    result = run_cli(
        *RUN,
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "jury=[offline_b]",
        "dry_run=true",
        "cache.enabled=false",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    estimate = json.loads((tmp_path / "run" / "estimate.json").read_text(encoding="utf-8"))
    assert estimate["jury"]["offline-judge-b"]["calls"] == estimate["judge"]["calls"] == 40
