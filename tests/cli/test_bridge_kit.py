"""`python -m healthbench_exp.bridge_kit` end to end on the built-in endpoint: the dry run
first (both judges priced, at half price through the Batch API), then the kit's run, a bridge
source that a later run of the new judge names; its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.bridge_runs import JUDGES, NEW, OLD, lines, run, write_data
from tests.e2e.test_e2e import run_module

OFFLINE_OLD = ("old_judge=offline", f"judge.name={OLD}")
KIT = ("new_judge=offline", *OFFLINE_OLD, *JUDGES)


def kit(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = run_module(
        "healthbench_exp.bridge_kit",
        *KIT,
        *args,
        env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")},
        cwd=tmp_path,
    )
    return result.returncode, result.stdout, result.stderr


def test_the_dry_run_prices_both_judges_and_batch_halves_both(tmp_path: Path) -> None:
    data = write_data(tmp_path, "pool", 60)
    costs = {}
    for batch in ("false", "true"):
        out = tmp_path / f"kit_{batch}"
        code, _, err = kit(
            tmp_path, f"dataset.path={data}", "examples=30", f"out={out}", "dry_run=true",
            f"batch={batch}",
        )  # fmt: skip
        assert code == 0, err[-2000:]
        estimate = json.loads((out / "dry_run" / "estimate.json").read_text())
        assert estimate["rows"] == 30 and not (out / "source").exists()
        costs[batch] = (estimate["judge"]["cost_usd"], estimate["jury"][NEW]["cost_usd"])
        assert estimate["judge"]["calls"] == estimate["jury"][NEW]["calls"] > 0
    for plain, batched in zip(costs["false"], costs["true"], strict=True):
        assert batched == pytest.approx(plain / 2, rel=1e-6)


def test_the_kit_writes_a_bridge_source_a_later_run_names(tmp_path: Path) -> None:
    data = write_data(tmp_path, "pool", 80)
    other = write_data(tmp_path, "later", 20)
    out = tmp_path / "kit"
    code, stdout, err = kit(tmp_path, f"dataset.path={data}", "examples=40", f"out={out}")
    assert code == 0, err[-2000:]
    source = out / "source"
    assert f"bridge.runs=[{source}]" in stdout
    sample = lines(out / "bridge_sample.jsonl")
    pool = {r["prompt_id"]: r for r in lines(data)}
    assert len(sample) == 40 and all(
        pool[r["prompt_id"]]["rubrics"] == r["rubrics"] for r in sample
    )
    every = {t for r in pool.values() for c in r["rubrics"] for t in c["tags"] if "level" not in t}
    assert {t for r in sample for c in r["rubrics"] for t in c["tags"] if "level" not in t} == every
    graded = lines(source / "per_criterion.jsonl")
    assert len(graded) == sum(len(r["rubrics"]) for r in sample)
    assert all(set(r["verdicts"]) == {OLD, NEW} for r in graded)
    later = run(
        tmp_path / "later_run",
        tmp_path / "cache",
        f"dataset.path={other}",
        f"bridge.runs=[{source}]",
    )
    bridged = json.loads((later / "summary.json").read_text())["bridged"]
    assert bridged["pairs"] == len(graded) and bridged["bridge"] == [str(source)]


def test_the_kits_refusals_are_one_line_and_exit_2(tmp_path: Path) -> None:
    data = write_data(tmp_path, "pool", 20)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    cases = {  # the bundled sample (experiment=demo) needs more than 3 rows to cover its strata
        "is not empty; give the kit a new folder": (
            f"dataset.path={data}",
            f"out={tmp_path / 'full'}",
        ),
        "examples=3: covering every consensus cluster and axis takes": ("examples=3",),
        "bridge_kit sets jury itself": ("jury=[gpt54]",),
        f"old_judge=offline is offline-judge; a bridge starts from the reference grader {OLD}": (
            "judge.name=offline-judge",
        ),
    }
    for message, args in cases.items():
        code, _, err = kit(tmp_path, f"out={tmp_path / 'k'}", *args)
        assert code == 2 and err.strip().count("\n") == 0 and message in err, (message, err)
    assert (tmp_path / "full" / "x").read_text() == "mine" and not (tmp_path / "k").exists()
