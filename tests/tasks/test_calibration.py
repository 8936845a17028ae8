"""`calibration.meta_eval_run=` end to end (SPEC 7.3): a meta-eval run, then an eval run of the
same built-in judge calibrated by it, checked against values computed here from the two runs'
records; and the refusals (another judge, a directory that is not a finished meta-eval run).

The built-in judge's verdict is a hash of its name and the grader prompt, so a first meta-eval
run reads the judge's verdicts, and the physicians' labels of the file the calibration uses are
then written to agree with them at a known rate (a judge that disagrees by a known rate)."""

from __future__ import annotations

import copy
import json
import shutil
from html import escape
from pathlib import Path

import pytest

from healthbench_exp.core.summary import RunSummary
from tests.e2e.test_e2e import run_cli
from tests.engine.test_runner import read_jsonl
from tests.output.test_tracking import offline_runs, wandb_env
from tests.wandb_log import read_run

CORRECTED = "cluster:emergency_referrals_emergent_emergency_behavior"  # 60 meta-eval rows
SMALL = "cluster:hedging_no-uncertainty_accurate"  # 8 rows: too few to correct
OFFLINE = ("experiment=demo", "wandb.mode=disabled", "runner.bootstrap_samples=1000")


def meta_rows(labels: dict[int, list[bool]] | None = None) -> list[dict]:
    """The meta-eval rows: 60 of CORRECTED, 8 of SMALL (each with its own prompt and reply);
    `labels[i]` the physicians' labels of row i (default: a majority for, then against)."""
    rows = []
    for i in range(68):
        category = CORRECTED if i < 60 else SMALL
        row_labels = (labels or {}).get(i, [i % 2 == 0, False, True])
        rows.append(
            {
                "prompt": [{"role": "user", "content": f"Case {i}: I have chest pain, what now?"}],
                "prompt_id": f"p{i}",
                "completion": f"Reply {i}: call emergency services now if it is severe.",
                "completion_id": f"c{i}",
                "rubric": f"Directs the user to emergency care (case {i}).",
                "category": category,
                "binary_labels": row_labels,
                "anonymized_physician_ids": [f"doc{k}" for k in range(len(row_labels))],
                "canary": "test",
            }
        )
    return rows


def eval_rows() -> list[dict]:
    """15 copies (new prompt_id and prompt) of each bundled example with a CORRECTED or SMALL
    criterion, so each category has several examples with different replies."""
    sample = Path(__file__).resolve().parents[2] / "healthbench_exp" / "data" / "sample.jsonl"
    bundled = [json.loads(line) for line in sample.read_text().splitlines() if line.strip()]
    chosen = [r for r in bundled if any({CORRECTED, SMALL} & set(c["tags"]) for c in r["rubrics"])]
    rows = []
    for k in range(15):
        for row in chosen:
            copy_ = copy.deepcopy(row)
            copy_["prompt_id"] = f"{row['prompt_id']}-{k}"
            copy_["prompt"][-1]["content"] += f" (variant {k})"
            rows.append(copy_)
    return rows


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def majority(labels: list[bool]) -> bool | None:
    met = sum(labels)
    return None if 2 * met == len(labels) else 2 * met > len(labels)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("calibration")
    env = {"HEALTHBENCH_CACHE_DIR": str(tmp / "cache")}
    first = write(tmp / "meta1.jsonl", meta_rows())
    done = run_cli(*OFFLINE, "task=meta_eval", f"dataset.path={first}",
                   f"hydra.run.dir={tmp / 'meta1'}", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    verdicts = {
        r["prompt_id"]: r["criteria_met"] for r in read_jsonl(tmp / "meta1" / "meta_eval.jsonl")
    }
    labels: dict[int, list[bool]] = {}
    for i in range(60):  # the majority agrees with the judge on 5 rows of 6; every 10th a tie
        verdict = bool(verdicts[f"p{i}"])
        truth = verdict if i % 6 else not verdict
        labels[i] = [True, False] if i % 10 == 9 else [truth, truth, not truth]
    second = write(tmp / "meta2.jsonl", meta_rows(labels))
    done = run_cli(*OFFLINE, "task=meta_eval", f"dataset.path={second}", "cache.enabled=false",
                   "offline_server.malformed_rate=0.1", "judge.max_parse_retries=0",
                   "runner.max_failure_fraction=1.0", f"hydra.run.dir={tmp / 'meta'}",
                   env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = write(tmp / "eval.jsonl", eval_rows())
    # the calibrated eval logs to a real offline W&B run, read back below
    done = run_cli(*OFFLINE, f"dataset.path={data}", f"calibration.meta_eval_run={tmp / 'meta'}",
                   "wandb.mode=offline", f"hydra.run.dir={tmp / 'eval'}",
                   env={**env, **wandb_env(tmp)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {"tmp": tmp, "meta": tmp / "meta", "eval": tmp / "eval", "data": data}


def test_calibrated_rates_equal_the_hand_computation(runs: dict[str, Path]) -> None:
    summary = json.loads((runs["eval"] / "summary.json").read_text())
    calibrated = summary["calibrated"]
    assert calibrated["meta_eval_run"] == str(runs["meta"])
    assert calibrated["judge"] == summary["config"]["judge"]["name"]
    meta = read_jsonl(runs["meta"] / "meta_eval.jsonl")
    assert any(r["criteria_met"] is None for r in meta)  # some rows ungraded: left out
    criteria = read_jsonl(runs["eval"] / "per_criterion.jsonl")
    tags = sorted({t for c in criteria for t in c["tags"] if t.startswith("cluster:")})
    by_category = {row["category"]: row for row in calibrated["criteria"]}
    assert sorted(by_category) == tags and {CORRECTED, SMALL} <= set(tags)
    for category in tags:
        row = by_category[category]
        graded = [c["criteria_met"] for c in criteria
                  if category in c["tags"] and c["criteria_met"] is not None]  # fmt: skip
        assert row["n_eval"] == len(graded)
        p = sum(graded) / len(graded)
        assert row["observed"] == pytest.approx(p, abs=1e-12)
        usable = [(r["criteria_met"], majority(r["binary_labels"])) for r in meta
                  if r["category"] == category and r["criteria_met"] is not None]  # fmt: skip
        usable = [(v, t) for v, t in usable if t is not None]
        positives = [v for v, t in usable if t]
        negatives = [v for v, t in usable if not t]
        assert (row["n_pos"], row["n_neg"]) == (len(positives), len(negatives))
        if category not in (CORRECTED, SMALL):  # no meta-eval rows
            assert row["sensitivity"] is None and row["corrected"] is None
            assert row["reason"] == "n_pos 0 < 20; n_neg 0 < 20"
            continue
        se = sum(positives) / len(positives)
        sp = sum(not v for v in negatives) / len(negatives)
        assert row["sensitivity"] == pytest.approx(se, abs=1e-12)
        assert row["specificity"] == pytest.approx(sp, abs=1e-12)
        if category == SMALL:
            assert row["corrected"] is None and row["ci_low"] is None
            assert row["reason"].startswith(f"n_pos {len(positives)} < 20")
            continue
        assert len(positives) >= 20 and len(negatives) >= 20 and se + sp - 1 > 0.5
        corrected = min(1.0, max(0.0, (p + sp - 1) / (se + sp - 1)))
        assert row["corrected"] == pytest.approx(corrected, abs=1e-12)
        assert row["reason"] is None
        assert 0 <= row["ci_low"] <= row["corrected"] <= row["ci_high"] <= 1
        assert row["ci_low"] < row["ci_high"]
    # beside the reference metrics, never instead of them
    assert summary["headline"] == "overall_score" and "overall_score" in summary["metrics"]
    assert not any(k.startswith("calibrated") for k in summary["metrics"])


def test_calibration_with_another_judge_is_refused_before_any_request(runs) -> None:
    out = runs["tmp"] / "refused"
    done = run_cli(*OFFLINE, f"dataset.path={runs['data']}", "judge.temperature=0.2",
                   f"calibration.meta_eval_run={runs['meta']}", f"hydra.run.dir={out}")  # fmt: skip
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if "calibration.meta_eval_run" in line]
    assert len(lines) == 1
    assert "graded by another judge (judge.temperature: 0.5 there, 0.2 here)" in lines[0]
    assert not (out / "examples.jsonl").exists() and not (out / "per_criterion.jsonl").exists()


def test_a_directory_that_is_not_a_finished_meta_eval_run_is_refused(runs) -> None:
    for source in (runs["eval"], runs["tmp"] / "nothing-here"):
        out = runs["tmp"] / f"refused-{source.name}"
        done = run_cli(*OFFLINE, f"dataset.path={runs['data']}",
                       f"calibration.meta_eval_run={source}", f"hydra.run.dir={out}")  # fmt: skip
        assert done.returncode == 2
        assert "not a finished meta-eval run" in done.stderr
        assert not (out / "per_criterion.jsonl").exists()


def test_a_meta_eval_run_that_did_not_finish_is_refused(runs) -> None:
    interrupted = runs["tmp"] / "meta-interrupted"
    shutil.copytree(runs["meta"], interrupted)
    (interrupted / "status.json").write_text(json.dumps({"status": "interrupted"}))
    out = runs["tmp"] / "refused-interrupted"
    done = run_cli(*OFFLINE, f"dataset.path={runs['data']}",
                   f"calibration.meta_eval_run={interrupted}", f"hydra.run.dir={out}")  # fmt: skip
    assert done.returncode == 2
    assert "the meta-eval run did not finish (interrupted); resume it first" in done.stderr
    assert not (out / "per_criterion.jsonl").exists()


def test_report_wandb_and_the_typed_summary_show_the_calibrated_rates(runs) -> None:
    written = json.loads((runs["eval"] / "summary.json").read_text())
    summary = RunSummary.from_dict(written)
    assert summary.to_dict() == written  # typed in RunSummary, round trip
    assert summary.calibrated is not None
    rows = {row.category: row for row in summary.calibrated.criteria}
    row = rows[CORRECTED]
    assert row.corrected is not None and row.ci_low is not None and row.ci_high is not None
    report = (runs["eval"] / "report.html").read_text()
    assert "Calibrated consensus rates" in report
    assert f"{row.corrected:.4f} [{row.ci_low:.4f}, {row.ci_high:.4f}]" in report
    assert f"not corrected: {escape(rows[SMALL].reason or '')}" in report
    # what the eval's offline W&B run wrote to its summary, read back from its log
    (run_dir,) = offline_runs(runs["tmp"] / "wandb_dir")
    metrics = read_run(run_dir).summary
    assert metrics[f"calibrated/{CORRECTED}/corrected"] == pytest.approx(row.corrected, abs=1e-12)
    assert metrics[f"calibrated/{CORRECTED}/ci_low"] == pytest.approx(row.ci_low, abs=1e-12)
    assert metrics[f"calibrated/{CORRECTED}/ci_high"] == pytest.approx(row.ci_high, abs=1e-12)
    assert metrics[f"calibrated/{SMALL}/observed"] == pytest.approx(rows[SMALL].observed)
    assert f"calibrated/{SMALL}/corrected" not in metrics
