"""A jury in one run (issue 30.1, SPEC 7.1), end to end: `python -m healthbench_exp` in a
subprocess against the built-in endpoint, whose verdicts hash the judge's name and the grader
prompt, so judge presets with different names disagree. Two further offline judge presets live
in a config directory of the user's own, added with `hydra.searchpath`.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest

from tests.dates import in_days
from tests.e2e.test_e2e import run_cli

pytestmark = pytest.mark.xdist_group("jury")  # one worker runs the runs the tests share

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")
MEMBERS = ("offline-judge", "offline-judge-b", "offline-judge-c")  # model names, primary first


def judge_presets(root: Path) -> str:
    """A user's config directory with two more offline judge presets; its searchpath override."""
    for preset, name in (("offline_b", "offline-judge-b"), ("offline_c", "offline-judge-c")):
        path = root / "conf" / "judge" / f"{preset}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"defaults:\n  - offline\nname: {name}\n", encoding="utf-8")
    return f"hydra.searchpath=[file://{root / 'conf'}]"


def summary_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A three-judge jury run on a fresh response cache, then one-judge runs of each further
    judge on the same cache (so on the same replies)."""
    root = tmp_path_factory.mktemp("jury")
    searchpath = judge_presets(root)
    common = (*DEMO, searchpath, f"cache.dir={root / 'cache'}")
    dirs = {}
    for label, extra in (
        ("jury", "jury=[offline_b,offline_c]"),
        ("offline-judge-b", "judge=offline_b"),
        ("offline-judge-c", "judge=offline_c"),
    ):
        dirs[label] = root / label
        result = run_cli(*common, extra, f"hydra.run.dir={dirs[label]}")
        assert result.returncode == 0, result.stderr[-3000:]
    return dirs


def test_every_judge_grades_every_criterion_once(runs: dict[str, Path]) -> None:
    summary = summary_of(runs["jury"])
    usage, counts = summary["usage"], summary["counts"]
    assert counts["rows_scored"] == counts["rows"] == 24
    # one model call per example, one call per criterion per judge (a fresh cache pays them all)
    assert usage["model"]["requests"] == 24
    assert usage["judge"]["requests"] == counts["criteria"] == 106
    assert set(usage["jury"]) == set(MEMBERS[1:])
    for name in MEMBERS[1:]:
        assert usage["jury"][name]["requests"] == 106
        assert usage["jury"][name]["cost_usd"] > 0
    member_costs = sum(usage["jury"][name]["cost_usd"] for name in MEMBERS[1:])
    expected = usage["model"]["cost_usd"] + usage["judge"]["cost_usd"] + member_costs
    assert usage["total_cost_usd"] == pytest.approx(expected)
    assert summary["protocol"]["jury"] == list(MEMBERS)


def test_per_criterion_carries_every_verdict(runs: dict[str, Path]) -> None:
    lines = (runs["jury"] / "per_criterion.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == 106
    for row in rows:
        assert list(row["verdicts"]) == list(MEMBERS)  # the primary judge first
        assert list(row["explanations"]) == list(MEMBERS)
        assert row["verdicts"]["offline-judge"] == row["criteria_met"]
        assert all(v in (True, False) for v in row["verdicts"].values())
    # judges with different names disagree on some criteria (the built-in's verdicts hash them)
    assert any(len(set(row["verdicts"].values())) > 1 for row in rows)


def test_by_judge_metrics_equal_one_judge_runs(runs: dict[str, Path]) -> None:
    summary = summary_of(runs["jury"])
    jury = summary["jury"]
    assert jury["members"] == list(MEMBERS) and jury["rule"] == "mean"
    # the run's metrics and headline stay the primary judge's: the demo's score
    assert summary["metrics"]["overall_score"] == pytest.approx(0.2879, abs=5e-5)
    assert jury["by_judge"]["offline-judge"]["overall_score"] == pytest.approx(
        summary["metrics"]["overall_score"]
    )
    replies = {
        json.loads(line)["prompt_id"]: json.loads(line)["completion"]
        for line in (runs["jury"] / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    }
    for name in MEMBERS[1:]:
        alone = summary_of(runs[name])
        alone_replies = {
            json.loads(line)["prompt_id"]: json.loads(line)["completion"]
            for line in (runs[name] / "examples.jsonl").read_text(encoding="utf-8").splitlines()
        }
        assert alone_replies == replies  # the same replies, graded by that judge alone
        for metric in ("overall_score", "axis:accuracy", "theme:hedging"):
            assert jury["by_judge"][name][metric] == pytest.approx(alone["metrics"][metric])
        assert alone["metrics"]["overall_score"] != pytest.approx(
            summary["metrics"]["overall_score"]
        )
    assert len(jury["agreement"]) == 3
    assert jury["ungraded"] == dict.fromkeys(MEMBERS, 0)  # the built-in always answers


def test_the_jury_score_and_agreement_equal_a_hand_computation(runs: dict[str, Path]) -> None:
    """From per_criterion.jsonl's verdicts alone: the jury's overall score (SPEC 7.1, rule
    `mean`: each criterion's points times the share of judges that said met, over the example's
    positive points, the mean clipped to [0, 1]) and each pair's agreement and Cohen's kappa."""
    jury = summary_of(runs["jury"])["jury"]
    rows = [json.loads(line) for line in (runs["jury"] / "per_criterion.jsonl").open()]
    by_example: dict[tuple[str, int], list[dict]] = {}
    for row in rows:
        by_example.setdefault((row["prompt_id"], row["rollout"]), []).append(row)
    scores = []
    for criteria in by_example.values():
        earned = sum(
            c["points"] * sum(c["verdicts"].values()) / len(c["verdicts"]) for c in criteria
        )
        possible = sum(c["points"] for c in criteria if c["points"] > 0)
        scores.append(earned / possible)
    assert len(scores) == 24
    expected = min(1.0, max(0.0, sum(scores) / len(scores)))
    assert jury["metrics"]["overall_score"] == pytest.approx(expected)
    assert expected != pytest.approx(0.2879, abs=5e-4)  # not the primary judge's score
    pairs = {(p["a"], p["b"]): p for p in jury["agreement"]}
    assert list(pairs) == [(MEMBERS[0], MEMBERS[1]), (MEMBERS[0], MEMBERS[2]),
                           (MEMBERS[1], MEMBERS[2])]  # fmt: skip
    for (a, b), pair in pairs.items():
        va = [r["verdicts"][a] for r in rows]
        vb = [r["verdicts"][b] for r in rows]
        n = len(rows)
        observed = sum(x == y for x, y in zip(va, vb, strict=True)) / n
        pa, pb = sum(va) / n, sum(vb) / n
        chance = pa * pb + (1 - pa) * (1 - pb)
        assert pair["n"] == n == 106
        assert pair["agreement"] == pytest.approx(observed)
        assert pair["kappa"] == pytest.approx((observed - chance) / (1 - chance))


def test_a_regrade_by_a_jury_and_of_a_jury_run(runs: dict[str, Path], tmp_path: Path) -> None:
    """Issue 30.5: `regrade=<run> jury=[...]` grades a one-judge run's replies by the jury the
    command gives, and a jury run regraded with no judge given keeps its own jury; either way
    no model call, and (on the runs' response cache) no judge call: the jury's figures are the
    jury run's."""
    reference = summary_of(runs["jury"])
    for label, command in (
        ("by-a-jury", (f"regrade={runs['offline-judge-b']}", "judge=offline",
                       "jury=[offline_b,offline_c]")),
        ("of-a-jury-run", (f"regrade={runs['jury']}",)),
    ):  # fmt: skip
        result = run_cli(*command, f"hydra.run.dir={tmp_path / label}")
        assert result.returncode == 0, (label, result.stderr[-3000:])
        summary = summary_of(tmp_path / label)
        assert summary["jury"] == reference["jury"], label
        assert summary["metrics"]["overall_score"] == reference["metrics"]["overall_score"]
        assert summary["counts"]["model_requests"] == summary["counts"]["judge_requests"] == 0
        assert {n: u["requests"] for n, u in summary["usage"]["jury"].items()} == dict.fromkeys(
            MEMBERS[1:], 0
        )
        source = runs["offline-judge-b"] if label == "by-a-jury" else runs["jury"]
        assert summary["completions"]["regrade_of"]["run"] == str(source.resolve())


def test_a_retired_jury_member_refuses_the_run_and_one_near_its_date_warns(
    tmp_path: Path,
) -> None:
    """Issue 30.6 for a jury: every member's endpoint is checked at start-up like the judge's
    (its preset's `shutdown_date`; the built-in endpoint is not up yet to be asked)."""
    conf = tmp_path / "conf" / "judge"
    conf.mkdir(parents=True)
    began = date.today()
    soon = began + timedelta(days=20)
    for preset, when in (("gone", "2026-01-01"), ("soon", soon.isoformat())):
        (conf / f"{preset}.yaml").write_text(
            f"defaults:\n  - offline\nname: offline-judge-{preset}\nshutdown_date: '{when}'\n",
            encoding="utf-8",
        )
    searchpath = f"hydra.searchpath=[file://{tmp_path / 'conf'}]"
    gone = run_cli(*DEMO, searchpath, "jury=[gone]", f"hydra.run.dir={tmp_path / 'gone'}")
    assert gone.returncode == 2, gone.stderr[-2000:]
    assert "model offline-judge-gone is retired: shut down since 2026-01-01" in gone.stderr
    assert not (tmp_path / "gone" / "per_criterion.jsonl").exists()  # nothing was run
    near = run_cli(*DEMO, searchpath, "jury=[soon]", "runner.bootstrap_samples=10",
                   f"hydra.run.dir={tmp_path / 'soon'}")  # fmt: skip
    assert near.returncode == 0, near.stderr[-2000:]
    output = near.stdout + near.stderr
    warnings = [f"model offline-judge-soon shuts down on {soon}, {n}" for n in in_days(soon, began)]
    assert sum(output.count(warning) for warning in warnings) == 1, output


def test_an_unknown_jury_member_is_refused_naming_the_presets(tmp_path: Path) -> None:
    searchpath = judge_presets(tmp_path)
    result = run_cli(
        *DEMO, searchpath, "jury=[offline_b,nope]", f"hydra.run.dir={tmp_path / 'run'}"
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "no judge preset named nope" in result.stderr
    assert "offline_b" in result.stderr and "gpt41" in result.stderr  # the user's and ours


def test_a_dry_run_estimates_every_member(tmp_path: Path) -> None:
    searchpath = judge_presets(tmp_path)
    result = run_cli(
        *DEMO,
        searchpath,
        "jury=[offline_b,offline_c]",
        "dry_run=true",
        f"cache.dir={tmp_path / 'cache'}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    estimate = json.loads((tmp_path / "run" / "estimate.json").read_text(encoding="utf-8"))
    assert set(estimate["jury"]) == set(MEMBERS[1:])
    for name in MEMBERS[1:]:
        assert estimate["jury"][name]["calls"] == estimate["judge"]["calls"] == 106
        assert estimate["jury"][name]["cost_usd"] > 0
    paid = [estimate[r]["cost_usd"] for r in ("model", "judge")]
    paid += [estimate["jury"][n]["cost_usd"] for n in MEMBERS[1:]]
    assert estimate["total_cost_usd"] == pytest.approx(sum(paid))


def test_batch_applies_per_member(tmp_path: Path) -> None:
    """A member whose preset says `batch: true` sends its calls through the Batch API (half
    price, its own batches file); the primary judge stays on chat completions."""
    searchpath = judge_presets(tmp_path)
    preset = tmp_path / "conf" / "judge" / "offline_batch.yaml"
    preset.write_text(
        "defaults:\n  - offline\nname: offline-judge-batch\nbatch: true\nbatch_poll_s: 0.2\n",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    result = run_cli(
        *DEMO,
        searchpath,
        "jury=[offline_batch]",
        "cache.enabled=false",
        f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    usage = summary_of(run_dir)["usage"]
    member = usage["jury"]["offline-judge-batch"]
    assert member["requests"] == usage["judge"]["requests"] == 106
    # the same prompts at the same illustrative prices: the batch is billed at half
    assert member["cost_usd"] == pytest.approx(usage["judge"]["cost_usd"] / 2, rel=0.02)
    assert (run_dir / "batches-offline-judge-batch.json").exists()
    assert not (run_dir / "batches.json").exists()
    assert summary_of(run_dir)["protocol"]["judge_transport"] == "chat.completions"


def test_a_budget_stopped_jury_run_resumed_without_the_cache_pays_each_judge_once(
    loopback_server, tmp_path: Path
) -> None:
    """Issue 27.2 for a jury: the resume continues from every judge's recorded verdicts (the
    run's own per_criterion.jsonl), not only the primary judge's. Each judge has its own
    loopback endpoint, whose `/stats` counts the requests it received."""
    servers = {name: loopback_server() for name in MEMBERS}
    for preset, name in (("offline_b", MEMBERS[1]), ("offline_c", MEMBERS[2])):
        path = tmp_path / "conf" / "judge" / f"{preset}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        url = servers[name].base_url
        path.write_text(
            f"defaults:\n  - offline\nname: {name}\nbuiltin: false\nbase_url: {url}\n",
            encoding="utf-8",
        )
    primary = servers[MEMBERS[0]].base_url
    args = (
        *DEMO,
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "jury=[offline_b,offline_c]",
        "cache.enabled=false",
        "model.builtin=false",
        f"model.base_url={primary}",
        "judge.builtin=false",
        f"judge.base_url={primary}",
    )

    def judge_requests() -> dict[str, int]:
        return {name: server.stats()["judge_requests"] for name, server in servers.items()}

    uncapped = run_cli(*args, f"hydra.run.dir={tmp_path / 'u'}")
    assert uncapped.returncode == 0, uncapped.stderr[-3000:]
    once = judge_requests()
    model_once = servers[MEMBERS[0]].stats()["model_requests"]
    assert once == dict.fromkeys(MEMBERS, 106)
    for server in servers.values():
        server.reset()

    run_dir = tmp_path / "run"
    stopped = run_cli(*args, "budget.max_usd=0.1", f"hydra.run.dir={run_dir}")
    assert stopped.returncode == 4, stopped.stderr[-3000:]
    first = judge_requests()
    assert all(0 < first[name] < 106 for name in MEMBERS), first

    resumed = run_cli(f"resume={run_dir}", "budget.max_usd=null")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert judge_requests() == once  # each judge's requests sent once over both invocations
    assert servers[MEMBERS[0]].stats()["model_requests"] == model_once
    summary, reference = summary_of(run_dir), summary_of(tmp_path / "u")
    assert summary["metrics"] == reference["metrics"]
    assert summary["jury"] == reference["jury"]
    assert summary["usage"]["total_cost_usd"] == pytest.approx(reference["usage"]["total_cost_usd"])
    for name in MEMBERS[1:]:
        assert summary["usage"]["jury"][name]["requests"] == 106


def test_each_members_ungraded_count_is_stored_and_shown(loopback_server, tmp_path: Path) -> None:
    """A member whose endpoint answers some verdicts malformed (no parse retry) leaves those
    criteria ungraded: its count is in summary.json's `jury.ungraded` and on the console, and
    equals the nulls of its verdicts in per_criterion.jsonl; the primary judge's is 0."""
    server = loopback_server(malformed_rate=0.3, seed=3)
    searchpath = judge_presets(tmp_path)
    preset = tmp_path / "conf" / "judge" / "offline_b.yaml"
    preset.write_text(
        f"defaults:\n  - offline\nname: {MEMBERS[1]}\nbuiltin: false\n"
        f"base_url: {server.base_url}\nmax_parse_retries: 0\n",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    result = run_cli(
        *DEMO, searchpath, "jury=[offline_b]", "cache.enabled=false", f"hydra.run.dir={run_dir}"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in (run_dir / "per_criterion.jsonl").open(encoding="utf-8")]
    nulls = sum(row["verdicts"][MEMBERS[1]] is None for row in rows)
    assert 0 < nulls < len(rows)
    jury = summary_of(run_dir)["jury"]
    assert jury["ungraded"] == {MEMBERS[0]: 0, MEMBERS[1]: nulls}
    shown = result.stdout + result.stderr
    assert f"jury {MEMBERS[1]} (106 requests, {nulls} ungraded)" in shown
    assert f"{MEMBERS[1]} " in shown and f"({nulls} ungraded)" in shown  # the jury's line
