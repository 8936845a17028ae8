"""HealthBench Professional data end to end: `python -m healthbench_exp difficulty=professional`
on the bundled synthetic sample, the built-in endpoint as model and judge, W&B offline."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import datasets

from healthbench_exp.data.healthbench import load_examples
from healthbench_exp.data.professional import SLICE_KEYS
from healthbench_exp.grading.scoring import tag_metric_names
from tests.data.test_professional import PRO_SAMPLE, pro_row
from tests.e2e.test_e2e import run_cli
from tests.hub import HUB_ASKED

OFFLINE = ("model=offline", "judge=offline", "wandb=offline")


def test_the_bundled_professional_sample_runs_offline_with_slice_metrics(tmp_path: Path) -> None:
    result = run_cli(
        "difficulty=professional", "dataset.source=bundled", *OFFLINE, f"hydra.run.dir={tmp_path}"
    )
    assert result.returncode == 0, result.stderr
    sample = load_examples(PRO_SAMPLE)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["config"]["dataset"]["difficulty"] == "professional"
    metrics = summary["metrics"]
    assert metrics["overall_score:n_samples"] == len(sample)
    assert summary["counts"]["criteria"] == sum(len(e.rubrics) for e in sample)
    for key in SLICE_KEYS:
        names = tag_metric_names(metrics, key + ":")
        labels = {t for e in sample for t in e.example_tags if t.startswith(key + ":")}
        assert set(names) == labels, key
        for name in names:
            expected_n = sum(name in e.example_tags for e in sample)
            assert metrics[f"{name}:n_samples"] == expected_n, name
            assert 0.0 <= metrics[name] <= 1.0 and metrics[f"{name}:bootstrap_std"] >= 0.0
    rows = [json.loads(line) for line in (tmp_path / "examples.jsonl").read_text().splitlines()]
    by_id = {e.prompt_id: e for e in sample}
    for row in rows:  # no theme: the use case stands in for the outputs' per-theme views
        assert f"use_case:{row['theme']}" in by_id[row["prompt_id"]].example_tags
    assert len({len(row["completion"]) for row in rows}) > 10  # replies of varied length
    assert len(datasets.load_from_disk(str(tmp_path / "results"))) == len(sample)
    log = (tmp_path / "healthbench.log").read_text()
    assert "the official set has" not in log  # a bundled sample is not the official set


def test_a_short_official_set_is_warned_about_once(tmp_path: Path) -> None:
    """The Hugging Face code path on a local folder in a dataset repo's layout (no network)."""
    repo = tmp_path / "copy"
    repo.mkdir()
    rows = [pro_row(f"r{i}") for i in range(3)]
    (repo / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    result = run_cli(
        "difficulty=professional", f"dataset.hf_repo={repo}", *OFFLINE, f"hydra.run.dir={out}"
    )
    assert result.returncode == 0, result.stderr
    line = (
        f"difficulty=professional: loaded 3 examples, the official set has 525 "
        f"(from dataset.source=hf ({repo} split test))"
    )
    log = (out / "healthbench.log").read_text()
    assert log.count(line) == 1 and "WARNING" in log.split(line)[0].splitlines()[-1]


def test_a_bad_professional_row_is_one_line_naming_line_id_and_key(tmp_path: Path) -> None:
    data = tmp_path / "pro.jsonl"
    bad = pro_row("q2", rubric_items=[{"criterion_text": "c", "points": "5"}])
    data.write_text(json.dumps(pro_row("q1")) + "\n" + json.dumps(bad) + "\n")
    result = run_cli(
        "difficulty=professional", f"dataset.path={data}", *OFFLINE,
        f"hydra.run.dir={tmp_path / 'out'}",
    )  # fmt: skip
    assert result.returncode == 2
    assert (
        "error: pro.jsonl line 2 (id q2): rubric_items[0] 'points' must be a number, got '5'"
        in result.stderr
    )
    assert "Traceback" not in result.stderr


def test_an_unreachable_hub_names_the_offline_sample_not_an_official_file(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    result = run_cli(
        "difficulty=professional", *OFFLINE, f"hydra.run.dir={tmp_path / 'out'}",
        env={"HF_ENDPOINT": f"http://127.0.0.1:{closed}", **HUB_ASKED},
    )  # fmt: skip
    assert result.returncode == 2
    assert "is unreachable for 'openai/healthbench-professional'" in result.stderr
    assert "dataset.source=bundled" in result.stderr
    assert "dataset.source=openai" not in result.stderr  # Professional has no simple-evals file
