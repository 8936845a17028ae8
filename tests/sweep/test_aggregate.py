"""Sweeps end to end: a 2 x 2 offline grid, a failing job, the aggregate command, launchers, and
the HTML reports rendered in headless Chromium."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from healthbench_exp.sweep.aggregate import find_jobs
from healthbench_exp.sweep.aggregate import main as aggregate_main
from tests.by_hand import percentile_by_hand
from tests.e2e.test_e2e import run_cli

GRID = ("model.name=offline-a,offline-b", "sampling.temperature=0,0.7", "sampling.num_examples=8")


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def prompt_scores(job_dir: Path) -> dict[str, float]:
    rows = [json.loads(x) for x in (job_dir / "examples.jsonl").read_text().splitlines()]
    return {r["prompt_id"]: r["score"] for r in rows}


@pytest.fixture(scope="module")
def grid_sweep(tmp_path_factory) -> Path:
    sweep = tmp_path_factory.mktemp("grid") / "sweep"
    result = run_cli(
        "-m", "experiment=demo", "wandb=disabled", *GRID, f"hydra.sweep.dir={sweep}",
        env={"HEALTHBENCH_CACHE_DIR": str(sweep.parent / "cache")},  # module scope: set it here
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return sweep


def test_grid_sweep_summary_matches_every_job(grid_sweep: Path) -> None:
    data = read_json(grid_sweep / "sweep_summary.json")
    assert [r["job"] for r in data["jobs"]] == ["0", "1", "2", "3"]
    assert data["failed"] == 0
    for row in data["jobs"]:
        summary = read_json(grid_sweep / row["job"] / "summary.json")
        assert row["status"] == "completed"
        assert row["overall_score"] == summary["metrics"]["overall_score"]
        assert row["bootstrap_std"] == summary["metrics"]["overall_score:bootstrap_std"]
        assert row["n"] == 8 and row["ungraded_criteria"] == 0
        assert row["ci_low"] <= row["overall_score"] <= row["ci_high"]
        assert row["model"] in ("offline-a", "offline-b") and row["temperature"] in (0.0, 0.7)
        assert row["judge"] == "offline-judge" and row["banners"] == "DEMO"
        assert f"sampling.temperature={row['temperature']:g}" in row["overrides"]
        # labelled by the overrides that set it apart, short: `model=offline-a T=0.7`
        assert row["label"] == f"model={row['model']} T={row['temperature']:g}"
        themes = [m for m in summary["metrics"] if m.startswith("theme:") and m.count(":") == 1]
        assert themes and all(row[m] == summary["metrics"][m] for m in themes)
        assert (grid_sweep / row["job"] / "report.html").exists()
    with open(grid_sweep / "sweep_summary.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 4
    markdown = (grid_sweep / "sweep_summary.md").read_text()
    assert "| 3 | `model=offline-b T=0.7` | completed | DEMO | offline-b | offline-judge |" in (
        markdown
    )
    assert "**DEMO**: built-in offline endpoint: the scores mean nothing: 4 of 4 runs" in markdown
    assert "## Scores by theme" in markdown and "| run | communication |" in markdown


def test_every_pair_gets_a_paired_bootstrap(grid_sweep: Path) -> None:
    pairs = read_json(grid_sweep / "sweep_summary.json")["pairs"]
    assert [(p["a"], p["b"]) for p in pairs] == [
        ("0", "1"), ("0", "2"), ("0", "3"), ("1", "2"), ("1", "3"), ("2", "3"),
    ]  # fmt: skip
    labels = {r["job"]: r["label"] for r in read_json(grid_sweep / "sweep_summary.json")["jobs"]}
    for p in pairs:
        assert (p["a_label"], p["b_label"]) == (labels[p["a"]], labels[p["b"]])
        expected = bootstrap_by_hand(
            prompt_scores(grid_sweep / p["a"]), prompt_scores(grid_sweep / p["b"]), 1000, 0
        )
        assert p["n"] == 8
        assert p["mean_difference"] == pytest.approx(expected[0])
        assert (p["ci_low"], p["ci_high"]) == pytest.approx(expected[1:3])
        assert p["sign_flip_fraction"] == pytest.approx(expected[3])
        assert p["ci_low"] <= p["mean_difference"] <= p["ci_high"]
        assert sum(t["n"] for t in p["themes"].values()) == 8


def bootstrap_by_hand(
    a: dict[str, float], b: dict[str, float], samples: int, seed: int
) -> tuple[float, float, float, float]:
    """The paired bootstrap written out one resample at a time: the mean difference A - B (each
    mean clipped to [0, 1]), the 2.5th and 97.5th percentiles of the resampled differences
    (linear interpolation between order statistics), and the fraction of resamples whose
    difference does not share the point's sign. Each resample draws the shared prompt_ids (in
    sorted order) with replacement, one draw for both sides, from numpy's legacy RandomState."""
    shared = sorted(set(a) & set(b))
    n = len(shared)

    def clipped_mean(values: list[float]) -> float:
        return min(max(sum(values) / len(values), 0.0), 1.0)

    point = clipped_mean([a[k] for k in shared]) - clipped_mean([b[k] for k in shared])
    rng = np.random.RandomState(seed)
    diffs = []
    for _ in range(samples):
        draw = [shared[int(i)] for i in rng.randint(0, n, size=n)]
        diffs.append(clipped_mean([a[k] for k in draw]) - clipped_mean([b[k] for k in draw]))
    diffs.sort()

    flips = sum(1 for d in diffs if d * point <= 0) / samples if point != 0 else 1.0
    return point, percentile_by_hand(diffs, 2.5), percentile_by_hand(diffs, 97.5), flips


def test_a_failing_job_is_reported_and_the_rest_summarised(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    result = run_cli(
        # job 1's model answers every call HTTP 500 (a bad value would be refused before job 0)
        "-m", "experiment=demo", "wandb=disabled", "offline_server.limited_role=model",
        "offline_server.fail_status=0,500", "sampling.num_examples=4", f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 1
    assert "1 of 2 jobs failed (1)" in result.stderr
    rows = {r["job"]: r for r in read_json(sweep / "sweep_summary.json")["jobs"]}
    assert rows["0"]["status"] == "completed" and rows["0"]["n"] == 4
    assert rows["1"]["status"] == "failed"
    assert rows["1"]["error"].startswith("no example could be scored: 4 of 4 rows failed")
    # the standalone command rebuilds the summary of a partial sweep
    for name in ("sweep_summary.json", "sweep_summary.csv", "sweep_summary.md", "report.html"):
        (sweep / name).unlink()
    with pytest.raises(SystemExit) as exit_info:  # not the whole sweep yet: exit 1
        aggregate_main([str(sweep)])
    assert exit_info.value.code == 1
    assert [r["status"] for r in read_json(sweep / "sweep_summary.json")["jobs"]] == [
        "completed",
        "failed",
    ]


def test_unfinished_jobs_are_listed_not_dropped(grid_sweep: Path, tmp_path: Path) -> None:
    sweep = tmp_path / "partial"
    shutil.copytree(grid_sweep, sweep)
    (sweep / "2" / "summary.json").unlink()  # as if killed mid-run
    (sweep / "2" / "status.json").write_text('{"status": "running", "error": null}')
    jobs = {j.name: j.status for j in find_jobs(sweep)}
    assert jobs == {"0": "completed", "1": "completed", "2": "unfinished", "3": "completed"}
    with pytest.raises(SystemExit) as exit_info:
        aggregate_main([str(sweep)])
    assert exit_info.value.code == 1
    data = read_json(sweep / "sweep_summary.json")
    assert data["failed"] == 1 and len(data["pairs"]) == 3


def test_aggregate_rejects_a_folder_without_jobs(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        aggregate_main([str(tmp_path)])
    assert exit_info.value.code == 2


@pytest.mark.parametrize("launcher", ["submitit_local", "parallel"])
def test_launchers_run_every_job(tmp_path: Path, launcher: str) -> None:
    sweep = tmp_path / "sweep"
    result = run_cli(
        "-m", "experiment=demo", "wandb=disabled", "sampling.num_examples=3",
        "sampling.temperature=0,0.7", f"hydra/launcher={launcher}", f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = read_json(sweep / "sweep_summary.json")["jobs"]
    assert [r["status"] for r in rows] == ["completed", "completed"]
    assert [r["temperature"] for r in rows] == [0.0, 0.7]


def render(path: Path, tmp_path: Path) -> str:
    """The DOM of a page after headless Chromium has loaded it from disk."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    how = "install Chromium (Debian package `chromium`) to run the HTML report tests"
    if not chromium:  # required in CI (.ci/run sets HEALTHBENCH_REQUIRE_BROWSER=1)
        if os.environ.get("HEALTHBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"HEALTHBENCH_REQUIRE_BROWSER=1 but no Chromium on PATH: {how}")
        pytest.skip(f"no Chromium on PATH: {how}")
    result = subprocess.run(
        [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--dump-dom", path.resolve().as_uri(),
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


MEASURE = """<script>
var right = document.body.getBoundingClientRect().right, worst = -1e9;
document.querySelectorAll('table').forEach(function (t) {
  worst = Math.max(worst, t.getBoundingClientRect().right - right);
});
document.body.setAttribute('data-table-overflow', Math.round(worst));
document.body.setAttribute('data-page-overflow',
  document.documentElement.scrollWidth - window.innerWidth);
</script>"""


def overflow(report: Path, tmp_path: Path) -> tuple[int, int]:
    """How far (px) the widest table and the page reach past the body / the window in
    Chromium's default 800 px window: the page as written, plus a script that measures it."""
    measured = report.with_name("measured.html")
    measured.write_text(report.read_text().replace("</body>", MEASURE + "</body>"))
    dom = render(measured, tmp_path)
    table = re.search(r'data-table-overflow="(-?\d+)"', dom)
    page = re.search(r'data-page-overflow="(-?\d+)"', dom)
    assert table and page, dom[-2000:]
    return int(table.group(1)), int(page.group(1))


def assert_fits(report: Path, tmp_path: Path) -> None:
    """Neither the widest table (past the body) nor the page (past the window) overflows: each
    of the two is checked on its own (a tuple compared with `<=` would decide on the first)."""
    table, page = overflow(report, tmp_path)
    assert table <= 0, f"a table reaches {table} px past the body of {report.name}"
    assert page <= 0, f"the page reaches {page} px past the window of {report.name}"


@pytest.mark.slow  # Chromium renders the pages
def test_html_reports_render_with_the_scores(grid_sweep: Path, tmp_path: Path) -> None:
    dom = render(grid_sweep / "report.html", tmp_path)
    data = read_json(grid_sweep / "sweep_summary.json")
    assert "<svg" in dom and "Paired differences" in dom and "Theme x run" in dom
    # the colour scales have legends; the context header and the DEMO banner open the page
    assert dom.count('class="legend heat-legend"') == 2 and 'id="difference-legend"' in dom
    assert "A higher (CI above 0)" in dom and "no clear difference (CI includes 0)" in dom
    assert 'id="banner-DEMO"' in dom and '<table class="context" id="context">' in dom
    assert "<th>judge</th><td>offline-judge</td>" in dom
    for row in data["jobs"]:
        assert f'<td class="num job-score">{row["overall_score"]:.4f}</td>' in dom
        assert f'href="{row["job"]}/report.html"' in dom
        assert f"<th>{row['label']}</th>" in dom  # heat-map columns name the run, not a number
    assert "model=offline-a T=0 − model=offline-a T=0.7" in dom  # the paired chart's labels
    assert overflow(grid_sweep / "report.html", tmp_path)[1] <= 0  # wide tables scroll in place
    job = grid_sweep / "0"
    summary = read_json(job / "summary.json")
    page = render(job / "report.html", tmp_path)
    assert f"{summary['metrics']['overall_score']:.4f} (95% CI" in page
    assert page.count("<details") == 8  # drawn by the pager from report_examples.js
    assert "By theme" in page and "judge explanation" in page
    assert 'id="banner-DEMO"' in page and "<th>model</th><td>offline-a</td>" in page
    assert "T=0, max_tokens=2048, num_examples=8, seed 0" in page
    assert "NOT the healthbench reference protocol: judge.name: gpt-4.1-2025-04-14" in page
    assert page.count('class="legend"') == 2  # the theme and axis bar charts


def test_slurm_preset_composes_the_submitit_launcher() -> None:
    result = run_cli(
        "experiment=demo",
        "hydra/launcher=slurm_vllm",
        "--cfg",
        "hydra",
        "--package",
        "hydra.launcher",
    )
    assert result.returncode == 0, result.stderr
    assert "healthbench_exp_launcher._launcher.HealthbenchSlurmLauncher" in result.stdout
    assert "gpus_per_node: 1" in result.stdout
    assert "setup: null" in result.stdout  # resources only: each job serves its model itself


@pytest.fixture(scope="module")
def judge_sweep(tmp_path_factory) -> Path:
    """Two judges on the same replies, for both tasks: 2 evals and 2 meta-evals."""
    sweep = tmp_path_factory.mktemp("judges") / "sweep"
    result = run_cli(
        "-m", "experiment=demo", "wandb=disabled", "task=eval,meta_eval",
        "judge.name=judge-a,judge-b", "sampling.num_examples=8", f"hydra.sweep.dir={sweep}",
        env={"HEALTHBENCH_CACHE_DIR": str(sweep.parent / "cache")},  # module scope: set it here
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return sweep


def test_meta_eval_jobs_are_summarized_with_their_f1(judge_sweep: Path) -> None:
    data = read_json(judge_sweep / "sweep_summary.json")
    meta = [r for r in data["jobs"] if r["task"] == "meta_eval"]
    assert len(meta) == 2 and data["failed"] == 0
    for row in meta:
        summary = read_json(judge_sweep / row["job"] / "summary.json")
        metrics = summary["metrics"]
        assert row["pairwise_model_f1_balanced"] == metrics["pairwise_model_f1_balanced"]
        assert (
            row["physicians_f1_balanced"]
            == (metrics["physicians_weighted_mean:pairwise_physician_f1_balanced"])
        )
        assert row["rows"] == 8 and row["judge"] in ("judge-a", "judge-b")
    markdown = (judge_sweep / "sweep_summary.md").read_text()
    assert "## Meta-eval jobs" in markdown and "## Judge agreement" in markdown


def test_judges_on_the_same_items_get_agreement_and_kappa(judge_sweep: Path) -> None:
    data = read_json(judge_sweep / "sweep_summary.json")
    tasks = {r["job"]: r["task"] for r in data["jobs"]}
    pairs = data["judge_agreement"]
    assert sorted(tasks[p["a"]] for p in pairs) == ["eval", "meta_eval"]  # never across tasks
    for p in pairs:
        assert {p["a_judge"], p["b_judge"]} == {"judge-a", "judge-b"}
        a, b = judge_sweep / p["a"], judge_sweep / p["b"]
        if tasks[p["a"]] == "eval":
            name, key = "per_criterion.jsonl", ("prompt_id", "rollout", "criterion_index")
        else:
            name, key = "meta_eval.jsonl", ("prompt_id", "completion_id", "repeat")
        verdicts = [
            {
                tuple(r[k] for k in key): r["criteria_met"]
                for r in map(json.loads, (d / name).read_text().splitlines())
            }
            for d in (a, b)
        ]
        assert verdicts[0].keys() == verdicts[1].keys()
        both = [(verdicts[0][k], verdicts[1][k]) for k in verdicts[0]]
        n = len(both)
        observed = sum(x == y for x, y in both) / n
        pa, pb = sum(x for x, _ in both) / n, sum(y for _, y in both) / n
        chance = pa * pb + (1 - pa) * (1 - pb)
        assert p["n"] == p["shared_items"] == n > 0
        assert p["agreement"] == pytest.approx(observed, abs=1e-12)
        assert p["kappa"] == pytest.approx((observed - chance) / (1 - chance), abs=1e-12)
        assert p["agreement"] < 1.0  # the offline judges hash their own names: they disagree
    assert "Judge agreement" in (judge_sweep / "report.html").read_text()


def test_sweep_summary_reports_each_jobs_cost_and_the_total(judge_sweep: Path) -> None:
    data = read_json(judge_sweep / "sweep_summary.json")
    costs = []
    for row in data["jobs"]:
        usage = read_json(judge_sweep / row["job"] / "summary.json")["usage"]
        assert row["cost_usd"] == usage["total_cost_usd"] > 0
        assert row["judge_cost_usd"] == usage["judge"]["cost_usd"]
        costs.append(row["cost_usd"])
    assert data["cost_usd"] == pytest.approx(sum(costs))
    assert f"Cost of the sweep: ${sum(costs):.4f}" in (judge_sweep / "sweep_summary.md").read_text()


def test_a_dry_run_sweep_estimates_every_job_and_the_total(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    result = run_cli(
        "-m", "experiment=demo", "dry_run=true", "model.name=offline-a,offline-b",
        f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = read_json(sweep / "sweep_summary.json")
    estimates = [read_json(sweep / j / "estimate.json")["total_cost_usd"] for j in ("0", "1")]
    assert [r["status"] for r in data["jobs"]] == ["dry_run", "dry_run"] and data["failed"] == 0
    assert [r["estimated_cost_usd"] for r in data["jobs"]] == estimates
    assert data["estimated_cost_usd"] == pytest.approx(sum(estimates))
    assert f"the sweep would cost about ${sum(estimates):.4f}" in result.stdout
    # the whole sweep's calls and tokens, model and judge apart, summed over the jobs' estimates
    jobs = [read_json(sweep / j / "estimate.json") for j in ("0", "1")]
    for role in ("model", "judge"):
        summed = data["estimated_usage"][role]
        for figure in ("calls", "cached_calls", "prompt_tokens", "completion_tokens"):
            assert summed[figure] == sum(job[role][figure] for job in jobs)
        assert summed["calls"] > 0
        assert f"- {role}: {summed['calls']:,.0f} calls" in result.stdout
    markdown = (sweep / "sweep_summary.md").read_text()
    header = "| protocol | headline | score | 95% CI | overall_score | n | ungraded | tokens |"
    assert header + " cost | estimated cost |" in markdown
    # the estimate has its own column, not the CI's
    assert f"| – | – | – | – | – | – | – | – | – | ${estimates[0]:.4f} | – |" in markdown
    assert not list(sweep.glob("*/summary.json"))  # nothing ran
