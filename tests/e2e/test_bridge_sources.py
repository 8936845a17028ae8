"""Bridge sources: a jury run and a regrade of the same verdicts give the same q table; what is
refused (one line, exit 2, before any request); several sources report how q varies."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from tests.e2e.bridge_runs import AS_OLD, JUDGES, NEW, OLD, run, write_data
from tests.e2e.test_e2e import run_cli


class Sources:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache = root / "cache"
        self.data = write_data(root, "bridgeset", 60)
        self.target = write_data(root, "target", 20)
        self.jury = run(
            root / "jury", self.cache, *AS_OLD, "jury=[offline]", f"dataset.path={self.data}"
        )
        self.old = run(root / "old", self.cache, *AS_OLD, f"dataset.path={self.data}")
        self.plain = run(root / "plain", self.cache, f"dataset.path={self.data}")  # N alone
        result = run_cli(
            f"regrade={self.old}",
            "judge=offline",
            "runner.progress=false",
            f"hydra.run.dir={root / 'regrade'}",
            env={"HEALTHBENCH_CACHE_DIR": str(self.cache)},
        )
        assert result.returncode == 0, result.stderr[-3000:]
        self.regrade = root / "regrade"

    def bridged(self, name: str, *sources: Path) -> dict:
        directory = run(
            self.root / name,
            self.cache,
            f"dataset.path={self.target}",
            f"bridge.runs=[{','.join(str(s) for s in sources)}]",
            "bridge.method=calibration",  # the q table and its spread
        )
        return json.loads((directory / "summary.json").read_text())["bridged"]

    def refused(self, name: str, *args: str) -> str:
        directory = self.root / name
        result = run_cli(
            *JUDGES,
            f"dataset.path={self.target}",
            *args,
            f"hydra.run.dir={directory}",
            env={"HEALTHBENCH_CACHE_DIR": str(self.cache)},
        )
        assert result.returncode == 2, result.stderr[-2000:]
        assert not (directory / "per_criterion.jsonl").exists()  # nothing was graded
        errors = [line for line in result.stderr.splitlines() if "bridge.runs" in line]
        assert len(errors) == 1, result.stderr
        return errors[0]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Sources:
    return Sources(tmp_path_factory.mktemp("bridge_sources"))


def test_a_jury_run_and_a_regrade_of_the_same_verdicts_give_the_same_q_table(
    sources: Sources,
) -> None:
    by_jury = sources.bridged("via_jury", sources.jury)
    by_regrade = sources.bridged("via_regrade", sources.regrade)
    assert by_jury["pairs"] == by_regrade["pairs"] > 300
    assert by_jury["strata"] == by_regrade["strata"]
    assert by_jury["metrics"] == by_regrade["metrics"]
    # the lenient judge's met is worth less than a met: the direction of the pairing holds
    accuracy = next(s for s in by_regrade["strata"] if s["stratum"] == "axis:accuracy")
    assert accuracy["q_met"] > 0.6 and accuracy["q_not"] < 0.1


def test_several_sources_report_the_spread_of_q_between_them(sources: Sources) -> None:
    bridged = sources.bridged("two_sources", sources.jury, sources.regrade)
    assert bridged["pairs"] == 2 * sources.bridged("one_source", sources.jury)["pairs"]
    cells = bridged["spread"]
    assert cells and all(len(c["by_source"]) == 2 for c in cells)
    for cell in cells:  # the same verdicts twice: no spread, nothing beyond the interval
        assert cell["spread"] == 0 and cell["chi2"] == pytest.approx(0, abs=1e-9)
        assert cell["p_value"] == pytest.approx(1.0) and not cell["beyond_interval"]
    assert not any("beyond its interval" in w for w in bridged["warnings"])
    # leave one model out: each source left out, through each method; the same verdicts twice,
    # so the bridge from the other is this one's own, through either method
    transport = bridged["transport"]
    assert [(t["source"], t["method"]) for t in transport] == [
        (str(s), m) for s in (sources.jury, sources.regrade) for m in ("label_shift", "calibration")
    ]
    assert {t["model"] for t in transport} == {"offline-model"}
    # the same replies, O's own score on them (summed in the order each source's rows were
    # written, which a regrade's concurrent grading may change: equal to the last bits)
    own = [t["own"] for t in transport]
    assert max(own) - min(own) < 1e-12, own
    for t in transport:
        assert t["error"] == pytest.approx(t["bridged"] - t["own"], abs=1e-12)
        assert t["ci"][0] <= t["bridged"] <= t["ci"][1]
    html = (sources.root / "two_sources" / "report.html").read_text()
    assert (
        "<h3>Leave one model out</h3>" in html and "<h3>q between the bridge sources</h3>" in html
    )
    one = json.loads((sources.root / "one_source" / "summary.json").read_text())["bridged"]
    assert "transport" not in one


def test_a_source_whose_judges_disagree_otherwise_is_flagged_beyond_the_interval(
    sources: Sources, tmp_path: Path
) -> None:
    """A copy of the jury source where the reference grader said met wherever the new judge
    did on accuracy criteria: q(met) there differs between the sources by far more than the
    bridge's interval; the chi-square statistic is the hand computation's."""
    other = tmp_path / "other"
    shutil.copytree(sources.jury, other)
    records = [json.loads(r) for r in (other / "per_criterion.jsonl").read_text().splitlines()]
    for r in records:
        accuracy = r["points"] > 0 and r["cluster"] is None and r["axis"] == "accuracy"
        if accuracy and r["verdicts"][NEW]:
            r["verdicts"][OLD] = True
    (other / "per_criterion.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    bridged = sources.bridged("disagreeing", sources.jury, other)
    cell = next(
        c
        for c in bridged["spread"]
        if (c["stratum"], c["sign"], c["verdict"]) == ("axis:accuracy", "positive", "met")
    )
    counts = [(c["n"], c["k"]) for c in cell["by_source"].values()]
    assert counts[1][0] == counts[1][1] == counts[0][0] > counts[0][1]  # all met in the copy
    rate = sum(k for _, k in counts) / sum(n for n, _ in counts)
    chi2 = sum(
        (o - e) ** 2 / e for n, k in counts for o, e in ((k, n * rate), (n - k, n * (1 - rate)))
    )
    assert cell["chi2"] == pytest.approx(chi2) and cell["df"] == 1
    # chi-square with 1 df: P(X >= x) = erfc(sqrt(x / 2))
    assert cell["p_value"] == pytest.approx(math.erfc(math.sqrt(chi2 / 2)), rel=1e-9)
    assert cell["p_value"] < 0.001 and cell["beyond_interval"]
    assert cell["spread"] == pytest.approx(
        (counts[1][1] + 0.5) / (counts[1][0] + 1) - (counts[0][1] + 0.5) / (counts[0][0] + 1)
    )
    assert any("beyond its interval" in w for w in bridged["warnings"])


def test_a_source_without_both_judges_is_refused(sources: Sources) -> None:
    """A run of the new judge alone, and one of the reference grader alone (not a regrade)."""
    line = sources.refused("no_reference", f"bridge.runs=[{sources.plain}]")
    assert f"graded by {NEW}; a bridge source is a jury run with both {OLD}" in line
    line = sources.refused("no_new_judge", f"bridge.runs=[{sources.old}]")
    assert f"graded by {OLD}; a bridge source is a jury run with both {OLD} and this run's" in line


def test_a_run_whose_judge_is_not_the_sources_new_judge_is_refused(sources: Sources) -> None:
    line = sources.refused("other_judge", "judge.temperature=0.2", f"bridge.runs=[{sources.jury}]")
    assert "not this run's judge" in line and "judge.temperature: 0.5 there, 0.2 here" in line


def test_the_reference_grader_itself_is_refused(sources: Sources) -> None:
    line = sources.refused("reference", *AS_OLD, f"bridge.runs=[{sources.jury}]")
    assert f"this run's judge is the reference grader {OLD}" in line


def test_a_regrade_whose_criteria_no_longer_pair_with_its_source_is_refused(
    sources: Sources, tmp_path: Path
) -> None:
    broken = tmp_path / "regrade"
    shutil.copytree(sources.regrade, broken)
    records = (broken / "per_criterion.jsonl").read_text().splitlines()
    first = json.loads(records[0])
    first["criterion"] += " (edited)"
    (broken / "per_criterion.jsonl").write_text("\n".join([json.dumps(first), *records[1:]]) + "\n")
    line = sources.refused("unpaired", f"bridge.runs=[{broken}]")
    assert f"criterion 0 of prompt_id {first['prompt_id']}" in line and "do not pair" in line


def test_two_sources_with_different_rubrics_for_one_prompt_are_refused(
    sources: Sources, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    changed = write_data(other, "bridgeset", 60)
    text = changed.read_text().replace("states point 2 clearly", "states point 2 briefly")
    changed.write_text(text)
    second = run(
        tmp_path / "second", sources.cache, *AS_OLD, "jury=[offline]", f"dataset.path={changed}"
    )
    line = sources.refused("two_rubrics", f"bridge.runs=[{sources.jury},{second}]")
    assert "has different rubrics in" in line


def test_a_source_that_did_not_finish_is_refused(sources: Sources, tmp_path: Path) -> None:
    interrupted = tmp_path / "interrupted"
    shutil.copytree(sources.jury, interrupted)
    (interrupted / "status.json").write_text(json.dumps({"status": "interrupted"}))
    line = sources.refused("interrupted", f"bridge.runs=[{interrupted}]")
    assert "the run did not finish (interrupted)" in line


def test_a_judge_near_chance_is_refused_by_label_shift_before_any_request(
    sources: Sources, tmp_path: Path
) -> None:
    """A source whose new judge flips 45% of the verdicts (and is lenient on top): pooled J far
    below 0.2; label_shift refuses the bridge in one line, exit 2, before grading anything."""
    noisy = tmp_path / "noisy"
    result = run_cli(
        "experiment=demo",
        "wandb=disabled",
        "runner.progress=false",
        f"offline_server.judge_flip_rates='{OLD}=0,{NEW}=0.45'",
        f"offline_server.judge_lenient_rates='{NEW}=0.3'",
        *AS_OLD,
        "jury=[offline]",
        f"dataset.path={sources.data}",
        f"hydra.run.dir={noisy}",
        env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    line = sources.refused("near_chance", f"bridge.runs=[{noisy}]")
    assert "pooled J = se + sp - 1 = " in line and "refuses this bridge" in line
    # calibration does not refuse it (q is what it is)
    run(
        tmp_path / "calibrated",
        sources.cache,
        f"dataset.path={sources.target}",
        f"bridge.runs=[{noisy}]",
        "bridge.method=calibration",
    )


def test_an_unknown_method_is_one_line_naming_the_valid_ones(
    sources: Sources, tmp_path: Path
) -> None:
    result = run_cli(
        *JUDGES,
        f"dataset.path={sources.target}",
        f"bridge.runs=[{sources.jury}]",
        "bridge.method=q_table",
        f"hydra.run.dir={tmp_path / 'unknown'}",
        env={"HEALTHBENCH_CACHE_DIR": str(sources.cache)},
    )
    assert result.returncode == 2, result.stderr[-2000:]
    (line,) = [x for x in result.stderr.splitlines() if "bridge.method" in x]
    assert "bridge.method takes one of label_shift, calibration, not 'q_table'" in line
