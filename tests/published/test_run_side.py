"""A finished run beside the published numbers: its summary's `published`, the console lines,
`python -m healthbench_exp.published compare RUN_DIR`, and the per-criterion table."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

from healthbench_exp.core.summary import RunSummary, read_summary
from healthbench_exp.published import Verdict, published_rows
from healthbench_exp.published.clusters import cluster_table
from healthbench_exp.published.run_side import NotComparable, run_side, with_published
from healthbench_exp.published.text import planned_lines
from tests.conftest import DemoRun

REPO = Path(__file__).resolve().parents[2]
GPT41 = "gpt-4.1-2025-04-14"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "healthbench_exp.published", *args],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=env,
    )  # fmt: skip


def as_paper_run(demo: Path, score: float, **dataset: object) -> dict[str, object]:
    """The demo run's summary.json as if GPT-4.1 had run on all with the paper's settings."""
    data = json.loads((demo / "summary.json").read_text(encoding="utf-8"))
    data = copy.deepcopy(data)
    config = data["config"]
    config["model"]["name"] = "gpt-4.1"
    config["judge"]["name"] = GPT41
    config["dataset"].update({"difficulty": "all", "source": "openai", "path": None, **dataset})
    config["sampling"].update({"temperature": 1.0, "num_examples": None})
    data["counts"]["examples"] = 5000
    data["metrics"]["overall_score"] = score
    data.pop("published", None)
    data.pop("published_note", None)
    return data


def test_the_demo_run_says_once_that_nothing_published_applies(demo_run: DemoRun) -> None:
    summary = read_summary(demo_run.directory)
    assert summary is not None
    assert summary.published == []
    assert summary.published_note == "sample is not an official set"
    lines = [line for line in demo_run.stdout.splitlines() if "published" in line]
    assert lines == ["  published: nothing published applies (sample is not an official set)"]
    shown = cli("compare", str(demo_run.directory))
    assert (shown.returncode, shown.stdout.strip()) == (
        0,
        "published: nothing published applies (sample is not an official set)",
    )


def test_a_paper_run_is_compared_with_table_7(demo_run: DemoRun, tmp_path: Path) -> None:
    for score, verdict in ((0.4750, Verdict.CONSISTENT), (0.4700, Verdict.DIFFERS)):
        summary = with_published(RunSummary.from_dict(as_paper_run(demo_run.directory, score)))
        assert summary.published is not None and summary.published_note is None
        first = summary.published[0]
        assert "Table 7" in first.source and first.verdict == verdict.value
        assert first.why == []  # temperature 1.0 and the GPT-4.1 grader: nothing differs
        # written and read back whole
        again = RunSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
        assert again.published == summary.published
    folder = tmp_path / "run"
    folder.mkdir()
    data = as_paper_run(demo_run.directory, 0.4700)
    data["config"]["sampling"]["temperature"] = 0.5  # type: ignore[index]
    (folder / "summary.json").write_text(json.dumps(data), encoding="utf-8")
    shown = cli("compare", str(folder), "json=true")
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    assert rows[0]["verdict"] == "differs" and abs(rows[0]["difference"] + 0.0078) < 1e-9
    assert rows[0]["why"] == ["temperature: 1.0 -> 0.5"]
    assert {"source", "value", "difference", "verdict", "why"} <= set(rows[0])


def test_data_decides_first(demo_run: DemoRun) -> None:
    def side(**dataset: object) -> object:
        return run_side(RunSummary.from_dict(as_paper_run(demo_run.directory, 0.47, **dataset)))

    mirror = side(source="hf", hf_repo="neuralleap/healthbench-regular")
    assert not isinstance(mirror, NotComparable)
    assert mirror.data_note == "the HF mirror neuralleap/healthbench-regular (not sha256-checked)"
    elsewhere = side(path="/data/mine.jsonl")  # no official sha256 recorded
    assert isinstance(elsewhere, NotComparable) and "not an official set" in elsewhere.why


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for args in (
        ("compare", "model=gpt-4.1", "set=easy", "score=0.4", f"grader={GPT41}"),
        ("compare", "model=gpt-4.1", "set=all", "score=47", f"grader={GPT41}"),
        ("compare", str(tmp_path / "missing")),
        ("compare", "model=gpt-4.1", "set=all", "score=0.4"),
        ("list", "colour=red"),
        ("list", "set=easy"),
    ):
        shown = cli(*args)
        assert shown.returncode == 2, args
        assert shown.stdout == "" and len(shown.stderr.strip().splitlines()) == 1, shown.stderr


def test_list_and_a_number_from_elsewhere() -> None:
    listed = cli("list", "model=openai/gpt-4.1", "set=all")
    assert listed.returncode == 0
    assert "0.4778 (std 0.0022 over 16 runs" in listed.stdout
    assert "https://arxiv.org/abs/2505.08775" in listed.stdout
    assert cli("list", "model=gpt-4.1-mini").stdout.startswith("nothing published for")
    shown = cli(
        "compare", "model=gpt-4.1", "set=all", "score=0.4750", f"grader={GPT41}",
        "temperature=1.0", "json=true",
    )  # fmt: skip
    rows = json.loads(shown.stdout)
    assert rows[0]["verdict"] == "consistent" and "Table 7" in rows[0]["source"]
    unknown = cli("compare", "model=my-model", "set=all", "score=0.5", f"grader={GPT41}")
    assert unknown.stdout.strip() == (
        "published: nothing published applies (nothing published for my-model on all)"
    )


def test_per_criterion_table_counts_cells_outside_their_interval() -> None:
    cells = {r.metric: r.value for r in published_rows() if r.metric.startswith("cluster:")
             and r.model_id == GPT41}  # fmt: skip
    same = cluster_table("gpt-4.1", cells)
    assert same is not None and len(same.cells) == 37 and same.outside == 0
    assert abs(same.expected - 1.85) < 1e-9 and same.unlikely_above == 4
    lower = cluster_table("gpt-4.1", {k: max(0.0, v - 0.25) for k, v in cells.items()})
    assert lower is not None and lower.outside == 37
    # one cell by hand: emergency_referrals ... context_seeking, 0.9889 of 180 vs a run's 0.95
    key = "cluster:emergency_referrals_conditionally-emergent_context_seeking"
    one = cluster_table("gpt-4.1", {key: 0.95})
    assert one is not None
    p = ((0.9889 + 0.95) / 2 * 180 + 0.5) / 181
    assert abs(one.cells[0].interval - 1.959964 * (2 * p * (1 - p) / 180) ** 0.5) < 1e-6
    assert one.cells[0].outside is (one.cells[0].interval < 0.0389)
    assert cluster_table("gpt-4.1-mini", cells) is None


def test_the_dry_run_says_what_it_will_be_compared_with(tmp_path: Path) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "healthbench_exp", "experiment=demo", "dry_run=true",
         "wandb=disabled", f"hydra.run.dir={tmp_path / 'dry'}"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "  published: nothing published applies (sample is not an official set)" in (
        shown.stdout.splitlines()
    )
    config = {
        "model": {"name": GPT41, "reasoning": False},
        "judge": {"name": GPT41},
        "dataset": {"difficulty": "all", "source": "openai"},
        "sampling": {"temperature": 0.5, "max_tokens": 2048, "rollouts_per_example": 1},
        "completions": {"source": "model"},
    }
    lines = planned_lines(config)
    assert lines[0] == "  the run will be compared with:"
    assert "Table 7" in lines[1]
    assert lines[1].endswith(
        "comparable; differs in temperature: 1.0 -> 0.5; "
        "not stated by the source: max_tokens, reasoning_effort, api"
    )


def test_the_docs_worked_example_holds_as_written() -> None:
    """docs/reproducing.md's example command prints the line the page shows, and the page's
    figures (+- 0.0044; 0.4750 consistent, 0.4700 differs) are what the comparison says."""
    page = (REPO / "docs" / "reproducing.md").read_text(encoding="utf-8")
    command = next(
        line for line in page.splitlines()
        if line.startswith("python -m healthbench_exp.published compare") and "0.4700" in line
    )  # fmt: skip
    shown = cli(*command.split()[3:])
    assert shown.returncode == 0, shown.stderr
    assert f"  {shown.stdout.strip()}" in page.splitlines()  # the console example, verbatim
    assert "-0.0078 +- 0.0044: differs" in shown.stdout
    consistent = cli(*command.replace("0.4700", "0.4750").split()[3:])
    assert "-0.0028 +- 0.0044: consistent" in consistent.stdout
    assert "A run of **0.4750** (difference -0.0028) is **consistent**" in page
    assert "+- 0.0044" in page and "**0.4700**" in page


def test_compare_run_dir_prints_the_per_criterion_table(demo_run: DemoRun, tmp_path: Path) -> None:
    data = as_paper_run(demo_run.directory, 0.94, difficulty="consensus")
    cells = {r.metric: r.value for r in published_rows() if r.metric.startswith("cluster:")
             and r.model_id == GPT41}  # fmt: skip
    data["metrics"].update(cells)  # type: ignore[attr-defined]
    data["counts"]["examples"] = 3671  # type: ignore[index]
    folder = tmp_path / "consensus"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(data), encoding="utf-8")
    shown = cli("compare", str(folder))
    assert shown.returncode == 0, shown.stderr
    assert "per criterion on consensus (paper Table 8, gpt-4.1):" in shown.stdout
    assert (
        "0 of 37 cells outside their interval; 1.9 expected by chance, "
        "more than 4 unlikely (p < 0.05)"
    ) in shown.stdout
