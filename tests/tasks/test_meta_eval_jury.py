"""A jury in a meta-eval (issue 30.2): each member's agreement with physicians is reported, as a
one-judge meta-eval of that member computes it. End to end: `python -m healthbench_exp` in a
subprocess against the built-in endpoint (its verdicts hash the judge's name, so the members
disagree), with a further offline judge preset in a config directory of the user's own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import datasets
import pytest

from tests.e2e.test_e2e import run_cli, run_module

FIGURES = ("pairwise_model_f1_balanced", "criterion_mean:pairwise_model_f1_balanced")
RUN = ("experiment=demo", "task=meta_eval", "wandb=disabled", "runner.progress=false")


def _key(row: dict[str, object]) -> tuple[object, ...]:
    return row["prompt_id"], row["completion_id"], row["rubric"], row["repeat"]


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
    # the protocol records how the member is sent its calls, beside the judge
    assert set(summary["protocol"]["endpoints"]) == {"judge", "jury:offline-judge-b"}
    assert summary["protocol"]["endpoints"]["jury:offline-judge-b"]["api"] == "chat"
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
    rows = [json.loads(r) for r in records]
    assert len(rows) == 40
    for row in rows:  # every judge's, the primary judge first, as an eval's per_criterion.jsonl
        for field in ("verdicts", "explanations", "errors"):
            assert list(row[field]) == section["members"]
        assert row["verdicts"]["offline-judge"] == row["criteria_met"]
        assert row["explanations"]["offline-judge"] == row["explanation"]
        assert all(v in (True, False) for v in row["verdicts"].values())
        assert row["errors"] == {"offline-judge": None, "offline-judge-b": None}
    # the member's verdicts are its own: those of the one-judge meta-eval of it, row by row
    alone_rows = (tmp_path / "alone" / "meta_eval.jsonl").read_text(encoding="utf-8")
    own = {_key(r): r["criteria_met"] for r in map(json.loads, alone_rows.splitlines())}
    assert {_key(r): r["verdicts"]["offline-judge-b"] for r in rows} == own
    assert any(len(set(r["verdicts"].values())) > 1 for r in rows)  # they disagree somewhere
    # the results dataset: the same, one entry per judge in `judges`
    # (rows reach meta_eval.jsonl as they finish, the dataset in the run's order: match by key)
    dataset = datasets.load_from_disk(str(tmp_path / "jury" / "results"))
    by_key = {_key(r): r for r in rows}
    assert len(dataset) == len(by_key) == 40
    for entry in dataset:
        row = by_key[_key(entry)]
        assert {j["judge"]: j["criteria_met"] for j in entry["judges"]} == row["verdicts"]
        assert [j["judge"] for j in entry["judges"]] == section["members"]
        assert entry["judges"][1]["explanation"] == row["explanations"]["offline-judge-b"]
    # report.html: a row per judge, the primary first, with both figures and their intervals
    page = (tmp_path / "jury" / "report.html").read_text(encoding="utf-8")
    assert "<h2 id='jury'>Jury: each judge against physicians</h2>" in page
    shown_rows = re.findall(r"<tr><td>([^<]*)</td>((?:<td[^>]*>[^<]*</td>)+)</tr>",
                            page.split("class='jury-members'")[1].split("</table>")[0])  # fmt: skip
    assert [name for name, _ in shown_rows] == ["offline-judge (primary)", "offline-judge-b"]
    for (_, row), name in zip(shown_rows, section["members"], strict=True):
        mine = section["by_judge"][name]
        expected = [
            f"{mine[f]:.4f} [{mine[f + ':ci_low']:.4f}, {mine[f + ':ci_high']:.4f}]"
            for f in reversed(FIGURES)  # the paper's figure first
        ]
        assert re.findall(r"<td[^>]*>([^<]*)</td>", row) == [*expected, "0", "40"]
    # the judge table of a comparison: the jury run's member is a line of its own, with the
    # figures, categories, ungraded rate and cost of a one-judge meta-eval of it
    out = tmp_path / "compared"
    aggregate = run_module(
        "healthbench_exp.aggregate", str(tmp_path / "jury"), str(tmp_path / "alone"),
        "--out", str(out),
    )  # fmt: skip
    assert aggregate.returncode == 0, aggregate.stderr[-3000:]
    table = json.loads((out / "sweep_summary.json").read_text(encoding="utf-8"))["judge_table"]
    assert [e["judge"] for e in table] == ["offline-judge", "offline-judge-b", "offline-judge-b"]
    assert table[1]["label"].endswith("(jury member)")
    listed, alone_entry = table[1], table[2]
    for column in ("judge_criterion_mean", "judge_pooled", "physicians_criterion_mean",
                   "cost_per_1000_graded_usd"):  # fmt: skip
        assert listed[column] == pytest.approx(alone_entry[column]), column
    assert listed["judge_criterion_mean_ci"] == pytest.approx(
        alone_entry["judge_criterion_mean_ci"]
    )
    assert listed["by_category"] == pytest.approx(alone_entry["by_category"])
    assert len(listed["by_category"]) == 8
    assert listed["ungraded_rate"] == alone_entry["ungraded_rate"] == 0
    assert listed["rows_graded"] == 40
    assert "offline-judge-b" in (out / "sweep_summary.md").read_text(encoding="utf-8")
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


def test_a_one_judge_meta_eval_report_has_no_jury_section(tmp_path: Path) -> None:
    result = run_cli(*RUN, "sampling.num_examples=5", f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 0, result.stderr[-2000:]
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "jury-members" not in page and "Jury" not in page
    assert "verdicts" not in (tmp_path / "run" / "meta_eval.jsonl").read_text(encoding="utf-8")
    assert "judges" not in datasets.load_from_disk(str(tmp_path / "run" / "results")).column_names


def test_a_budget_stopped_meta_eval_jury_resumed_without_the_cache_asks_each_judge_once(
    loopback_server, tmp_path: Path
) -> None:
    """With the response cache off, a stopped meta-eval graded by a jury is finished by its
    resume asking each judge each row once over both invocations (the run's own call journal,
    `.calls`, answers what was asked before, each judge's under its own name), and ends with
    the uninterrupted run's figures. Each judge has its own loopback endpoint, whose `/stats`
    counts the requests it received."""
    names = ("offline-judge", "offline-judge-b")
    servers = {name: loopback_server() for name in names}
    preset = tmp_path / "conf" / "judge" / "offline_b.yaml"
    preset.parent.mkdir(parents=True)
    preset.write_text(
        f"defaults:\n  - offline\nname: {names[1]}\nbuiltin: false\n"
        f"base_url: {servers[names[1]].base_url}\n",
        encoding="utf-8",
    )
    args = (
        *RUN,
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "jury=[offline_b]",
        "cache.enabled=false",
        "judge.builtin=false",
        f"judge.base_url={servers[names[0]].base_url}",
    )

    def requests() -> dict[str, int]:
        return {name: server.stats()["judge_requests"] for name, server in servers.items()}

    uncapped = run_cli(*args, f"hydra.run.dir={tmp_path / 'u'}")
    assert uncapped.returncode == 0, uncapped.stderr[-3000:]
    assert requests() == dict.fromkeys(names, 40)
    for server in servers.values():
        server.reset()
    run_dir = tmp_path / "run"
    stopped = run_cli(*args, "budget.max_usd=0.05", f"hydra.run.dir={run_dir}")
    assert stopped.returncode == 4, stopped.stderr[-3000:]
    first = requests()
    assert all(0 < first[name] < 40 for name in names), first
    resumed = run_cli(f"resume={run_dir}", "budget.max_usd=null")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert requests() == dict.fromkeys(names, 40)  # each row asked of each judge once in all
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    reference = json.loads((tmp_path / "u" / "summary.json").read_text(encoding="utf-8"))
    assert summary["metrics"] == reference["metrics"]
    assert summary["jury"] == reference["jury"]
    rows = (run_dir / "meta_eval.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 40 and all(json.loads(r)["criteria_met"] is not None for r in rows)
